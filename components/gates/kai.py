"""The gate after KAI-Scheduler: every Deployment Available (most are the operator's, not the
chart's), kai-config Available and, for the forks, in NvFractions mode, and the webhooks its operator
registers (all `failurePolicy: Fail`) answering, so the Queues and pods of later steps are not
refused. `check_kai_scheduler` reads the cluster; each `decide_*` decides from plain JSON."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.cluster.objects import Json, conditions, one_line
from components.cluster.protocol import Cluster
from components.cluster.protocol import Json as Manifest
from components.cluster.results import CheckResult, guarded
from components.gates.deployments import decide_deployments
from components.gates.kai_config import dependencies_detail, kai_config_look, read_kai_config
from components.gates.spec import PROBE_NAMESPACE, GateSpec
from components.vocabulary import kai
from components.vocabulary.kai import DEFAULT_QUEUE, WebhookConfiguration


def decide_kai_config(config: Json | None, sharing_mode: str | None, namespace: str) -> list[CheckResult]:
    """kai-config Available, its GPU sharing mode, and (for information) its dependencies."""
    look = kai_config_look(namespace)
    if config is None:
        missing = CheckResult("kai-config", False, f"no Config kai-config ({look})")
        return [missing] + ([CheckResult("gpu-sharing-mode", False, "no Config kai-config")] if sharing_mode else [])
    found = conditions(config)
    available = found.get("Available") or {}
    results = [
        CheckResult("kai-config", True, "Available")
        if available.get("status") == "True"
        else CheckResult(
            "kai-config",
            False,
            f"not Available: {one_line(available.get('message')) or 'no status from the operator yet'} ({look})",
        )
    ]
    if sharing_mode:
        mode = ((config.get("spec") or {}).get("global") or {}).get("gpuSharingMode")
        results.append(
            CheckResult("gpu-sharing-mode", mode == sharing_mode, f"spec.global.gpuSharingMode is {mode or 'unset'}")
        )
    dependencies = found.get("DependenciesFulfilled")
    if dependencies is not None:
        detail = f"DependenciesFulfilled={dependencies.get('status')}"
        if dependencies.get("status") != "True":
            detail = f"{dependencies_detail(dependencies)}: expected until gpu-fractioning is installed"
        results.append(CheckResult("kai-dependencies", True, detail))
    return results


def webhook_services(configuration: Json) -> list[tuple[str, str]]:
    """(namespace, name) of each Service a webhook configuration calls; webhooks given by URL call none."""
    services = []
    for webhook in configuration.get("webhooks") or []:
        service = (webhook.get("clientConfig") or {}).get("service")
        if service:
            services.append((str(service.get("namespace")), str(service.get("name"))))
    return services


def has_ready_endpoint(endpoint_slices: Sequence[Json]) -> bool:
    """Whether any endpoint of the Service's EndpointSlices is ready (a missing `ready` means ready)."""
    return any(
        (endpoint.get("conditions") or {}).get("ready") is not False
        for endpoint_slice in endpoint_slices
        for endpoint in endpoint_slice.get("endpoints") or []
    )


# The API server's words when a webhook it must call does not answer (no endpoint, refused, timed out).
WEBHOOK_CALL_FAILED = "failed calling webhook"


def decide_kai_webhooks(
    expected: Sequence[WebhookConfiguration],
    registered: Mapping[str, Json | None],
    ready_services: Mapping[tuple[str, str], bool],
    refusals: Mapping[str, str | None],
) -> CheckResult:
    """KAI's webhooks answer: every configuration its operator registers is there, each Service they
    call has a ready endpoint, and a dry-run object of each kind they admit reaches them.

    All of them fail closed (`failurePolicy: Fail`), so until they answer, every Queue, PodGroup and
    `kai-scheduler` pod is refused. A webhook that answers with a denial still answers.
    """
    check = "webhooks"
    gaps = []
    missing = [w.name for w in expected if registered.get(w.name) is None]
    if missing:
        look = "kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations"
        gaps.append(f"not registered yet: {', '.join(missing)} ({look})")
    for w in expected:
        for namespace, service in webhook_services(registered.get(w.name) or {}):
            if not ready_services.get((namespace, service), False):
                look = f"kubectl -n {namespace} get endpointslices,pods -l app={service}"
                gaps.append(f"{w.name}: Service {namespace}/{service} has no ready endpoint ({look})")
    for admits, refusal in sorted(refusals.items()):
        if refusal is not None and WEBHOOK_CALL_FAILED in refusal:
            names = ", ".join(w.name for w in expected if w.admits == admits)
            gaps.append(f"{names} does not answer: a dry-run create of {admits} was refused: {refusal}")
    if gaps:
        return CheckResult(check, False, "; ".join(dict.fromkeys(gaps)))
    answered = ", ".join(sorted(refusals)) or "nothing"
    return CheckResult(check, True, f"{len(expected)} registered, answering dry runs of {answered}")


def webhook_probes() -> dict[kai.Admits, tuple[str, str, str | None, Manifest]]:
    """One object a webhook of KAI admits, per kind: (apiVersion, plural, namespace, manifest),
    created only as server-side dry runs, so nothing is stored."""
    metadata = {"generateName": "kgf-webhook-probe-"}
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "pods": (
            "v1",
            "pods",
            PROBE_NAMESPACE,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": metadata,
                "spec": {
                    "schedulerName": kai.SCHEDULER_NAME,
                    "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        ),
        "queues": (
            kai.QUEUE_API_VERSION,
            kai.QUEUE_PLURAL,
            None,
            {
                "apiVersion": kai.QUEUE_API_VERSION,
                "kind": "Queue",
                "metadata": metadata,
                "spec": {"resources": {r: unlimited for r in ("cpu", "memory", "gpu")}},
            },
        ),
        "podgroups": (
            f"{kai.PODGROUP_GROUP}/{kai.PODGROUP_VERSION}",
            kai.PODGROUP_PLURAL,
            PROBE_NAMESPACE,
            {
                "apiVersion": f"{kai.PODGROUP_GROUP}/{kai.PODGROUP_VERSION}",
                "kind": "PodGroup",
                "metadata": metadata,
                "spec": {"minMember": 1, "queue": DEFAULT_QUEUE},
            },
        ),
    }


def check_kai_webhooks(cluster: Cluster, config: Json | None) -> CheckResult:
    expected = kai.webhook_configurations((config or {}).get("spec"))
    registered = {w.name: cluster.read_webhook_configuration(w.kind, w.name) for w in expected}
    services = {s for found in registered.values() if found for s in webhook_services(found)}
    ready = {s: has_ready_endpoint(cluster.list_endpoint_slices(*s)) for s in services}
    refusals: dict[str, str | None] = {}
    if all(registered.values()) and all(ready.values()):
        probes = webhook_probes()
        for admits in dict.fromkeys(w.admits for w in expected):
            api_version, plural, namespace, manifest = probes[admits]
            refusals[admits] = cluster.dry_run_create(api_version, plural, namespace, manifest).refusal
    return decide_kai_webhooks(expected, registered, ready, refusals)


def check_kai_scheduler(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    deployments = guarded(
        "deployments",
        lambda: decide_deployments(cluster.list_deployments(spec.namespace), kai.DEPLOYMENTS, spec.namespace),
    )
    try:
        config = read_kai_config(cluster)
    except Exception as error:  # reported as the check's failure, like every other read
        return [deployments, CheckResult("kai-config", False, f"could not read kai-config: {error}")]
    return [
        deployments,
        *decide_kai_config(config, spec.sharing_mode, spec.namespace),
        guarded("webhooks", lambda: check_kai_webhooks(cluster, config)),
    ]
