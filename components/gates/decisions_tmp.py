"""What each of the guide's verifications decides, from API objects as plain JSON: one CheckResult a
check, whose detail says what is missing and where to look. No cluster access here."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.checks.results import CheckResult
from components.vocabulary.fractioning import DAEMONS, NODE_READY_CONDITION
from components.vocabulary.fractions import POLICY_NAME, VALIDATION_ACTIONS
from components.vocabulary.kai import WebhookConfiguration
from components.vocabulary.nvidia import GPU_MEMORY_LABEL, GPU_PRESENT_LABEL, GPU_RESOURCE

Json = Mapping[str, Any]

# GFD's driver-version label, and the deprecated name it still writes next to it.
DRIVER_MAJOR_LABELS = ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")
DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
# The MPS control daemon's own echo of the `default` namespace's cap.
DAEMON_CAP = re.compile(r"active thread percentage\D{0,20}10(?:\.0+)?(?!\d)")
# One attribute of a line from slog's text handler: key=value, the value quoted when it must be.
TEXT_ATTRIBUTE = re.compile(r'([A-Za-z_][\w.\-]*)=("(?:[^"\\]|\\.)*"|\S*)')


def conditions(obj: Json | None) -> dict[str, Json]:
    return {str(c.get("type")): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def name(obj: Json) -> str:
    return str(obj["metadata"]["name"])


def _labels(obj: Json) -> dict[str, str]:
    return {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()}


# ---------------------------------------------------------------- after the GPU Operator


def decide_cluster_policy(policies: Sequence[Json], namespace: str) -> CheckResult:
    check = "cluster-policy"
    look = f"kubectl get clusterpolicy; kubectl -n {namespace} get pods"
    if not policies:
        return CheckResult(check, False, f"no ClusterPolicy yet: the chart creates cluster-policy ({look})")
    policy = min(policies, key=lambda p: str(p["metadata"].get("creationTimestamp", "")))
    state = (policy.get("status") or {}).get("state")
    if state == "ready":
        return CheckResult(check, True, f"ClusterPolicy {name(policy)} is ready")
    error = conditions(policy).get("Error") or {}
    why = f": {error.get('message')}" if error.get("status") == "True" and error.get("message") else ""
    return CheckResult(check, False, f"ClusterPolicy {name(policy)} is {state or 'not reconciled yet'}{why} ({look})")


def decide_runtime_class(runtime_classes: Sequence[Json], wanted: str, namespace: str) -> CheckResult:
    check = "runtime-class"
    found = next((rc for rc in runtime_classes if name(rc) == wanted), None)
    if found is not None:
        return CheckResult(check, True, f"RuntimeClass {wanted} (handler {found.get('handler')})")
    return CheckResult(
        check,
        False,
        f"RuntimeClass {wanted} not found: the GPU Operator creates it when it reconciles the ClusterPolicy "
        f"(kubectl -n {namespace} logs deploy/gpu-operator)",
    )


def gpu_node_gaps(node: Json, minimum_driver_major: int) -> list[str]:
    """What the guide requires of a GPU node and this one lacks."""
    labels = _labels(node)
    gaps = []
    if labels.get(GPU_PRESENT_LABEL) != "true":
        gaps.append(f"no {GPU_PRESENT_LABEL}=true")
    memory = labels.get(GPU_MEMORY_LABEL, "")
    if not memory.isdigit() or int(memory) == 0:
        gaps.append(f"no {GPU_MEMORY_LABEL}")
    major = next((labels[k] for k in DRIVER_MAJOR_LABELS if k in labels), "")
    if not major.isdigit():
        gaps.append("no driver version label (GPU Feature Discovery)")
    elif int(major) < minimum_driver_major:
        full = labels.get(DRIVER_FULL_LABEL, major)
        gaps.append(f"driver {full} is older than r{minimum_driver_major}")
    allocatable = str(((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE, "0"))
    if not allocatable.isdigit() or int(allocatable) == 0:
        gaps.append(f"advertises no {GPU_RESOURCE}")
    return gaps


def decide_gpu_nodes(gpu_nodes: Sequence[Json], minimum_driver_major: int, namespace: str) -> CheckResult:
    check = "gpu-nodes"
    if not gpu_nodes:
        return CheckResult(
            check,
            False,
            "no node shows an NVIDIA GPU (feature.node.kubernetes.io/pci-10de.present or "
            f"{GPU_PRESENT_LABEL}): kubectl get nodes --show-labels",
        )
    gaps = {name(n): gpu_node_gaps(n, minimum_driver_major) for n in gpu_nodes}
    lacking = {node: found for node, found in gaps.items() if found}
    if lacking:
        listed = "; ".join(f"{node}: {', '.join(found)}" for node, found in sorted(lacking.items()))
        return CheckResult(
            check,
            False,
            f"{listed} (the driver, GPU Feature Discovery and the device plugin set these: "
            f"kubectl -n {namespace} get pods -o wide; kubectl describe node)",
        )
    summary = ", ".join(
        f"{name(n)} ({_labels(n).get(DRIVER_FULL_LABEL) or 'driver ' + _driver_major(n)}, "
        f"{(n.get('status') or {}).get('allocatable', {}).get(GPU_RESOURCE)} GPUs)"
        for n in gpu_nodes
    )
    return CheckResult(check, True, summary)


def _driver_major(node: Json) -> str:
    labels = _labels(node)
    return next((labels[k] for k in DRIVER_MAJOR_LABELS if k in labels), "?")


# ---------------------------------------------------------------- after KAI-Scheduler


def _available(deployment: Json) -> bool:
    status = deployment.get("status") or {}
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    return (
        conditions(deployment).get("Available", {}).get("status") == "True"
        and status.get("updatedReplicas", 0) == wanted
    )


def decide_deployments(deployments: Sequence[Json], expected: Iterable[str], namespace: str) -> CheckResult:
    """Every Deployment in the namespace Available, and the expected ones among them."""
    check = "deployments"
    present = {name(d): d for d in deployments}
    missing = [e for e in expected if e not in present]
    unavailable = sorted(n for n, d in present.items() if not _available(d))
    if missing or unavailable or not present:
        parts = []
        if missing:
            parts.append(f"not created yet: {', '.join(missing)}")
        if unavailable:
            parts.append(f"not Available: {', '.join(unavailable)}")
        if not present and not missing:
            parts.append("no Deployment in the namespace")
        look = f"kubectl -n {namespace} get deploy,pods"
        return CheckResult(check, False, f"{'; '.join(parts)} ({look})")
    return CheckResult(check, True, f"{len(present)} Available: {', '.join(sorted(present))}")


def kai_config_look(namespace: str) -> str:
    return f"kubectl get config.kai.scheduler kai-config -o yaml; kubectl -n {namespace} logs deploy/kai-operator"


def dependencies_detail(dependencies: Json) -> str:
    return f"DependenciesFulfilled={dependencies.get('status')} ({dependencies.get('message')})"


def one_line(message: object) -> str:
    """An operator's multi-line message (KAI's joins one line per operand) as one line of progress."""
    return "; ".join(str(message or "").splitlines())


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


# ---------------------------------------------------------------- after gpu-fractioning


def decide_daemonsets(daemonsets: Sequence[Json], namespace: str) -> CheckResult:
    """The operator's mpsd and fractiond DaemonSets exist, run somewhere, and have desired == ready."""
    check = "daemonsets"
    by_name = {name(d): d for d in daemonsets}
    gaps, counts = [], []
    for daemon in DAEMONS:
        found = by_name.get(f"gpu-fractioning-{daemon}")
        if found is None:
            gaps.append(f"gpu-fractioning-{daemon} not created yet")
            continue
        status = found.get("status") or {}
        desired, ready = int(status.get("desiredNumberScheduled", 0)), int(status.get("numberReady", 0))
        counts.append(f"{name(found)} {ready}/{desired}")
        if desired == 0:
            gaps.append(f"{name(found)} matches no node (are the GPU nodes labelled {GPU_PRESENT_LABEL}=true?)")
        elif ready != desired:
            gaps.append(f"{name(found)} {ready} of {desired} ready")
    if gaps:
        look = f"kubectl -n {namespace} get ds,pods -o wide; kubectl -n {namespace} logs deploy/gpu-fractioning"
        return CheckResult(check, False, f"{'; '.join(gaps)} ({look})")
    return CheckResult(check, True, ", ".join(counts))


def decide_fractioning_config(config: Json | None) -> CheckResult:
    check = "gpu-fractioning-config"
    look = "kubectl get gpufractioningconfig default -o yaml"
    if config is None:
        return CheckResult(
            check, False, f"no GpuFractioningConfig default: the chart creates it after install ({look})"
        )
    found = conditions(config)
    if not found:
        return CheckResult(check, False, f"the operator has not reported on it yet ({look})")
    false = [
        f"{t}={c.get('status')} ({c.get('reason')}: {c.get('message')})"
        for t, c in found.items()
        if c.get("status") != "True"
    ]
    if "Ready" not in found:
        false.append("no Ready condition")
    if false:
        return CheckResult(check, False, f"{'; '.join(false)} ({look})")
    return CheckResult(check, True, ", ".join(f"{t}=True" for t in found))


def decide_kai_sees_fractioning(config: Json | None, kai_namespace: str) -> CheckResult:
    """KAI's operator has seen the GpuFractioningConfig: kai-config's DependenciesFulfilled, False
    (`GpuFractioningConfig not found`) until gpu-fractioning is installed, turns True. The smoke pods
    need KAI and the node agents to agree; a KAI that does not report the condition passes, saying so."""
    check = "kai-dependencies-fulfilled"
    look = kai_config_look(kai_namespace)
    if config is None:
        return CheckResult(check, False, f"no Config kai-config ({look})")
    dependencies = conditions(config).get("DependenciesFulfilled")
    if dependencies is None:
        return CheckResult(check, True, "kai-config reports no DependenciesFulfilled condition")
    if dependencies.get("status") != "True":
        return CheckResult(
            check,
            False,
            f"kai-config {dependencies_detail(dependencies)}: "
            f"KAI's operator has not seen the GpuFractioningConfig Ready yet ({look})",
        )
    return CheckResult(check, True, "kai-config DependenciesFulfilled=True")


def decide_node_readiness(gpu_nodes: Sequence[Json]) -> CheckResult:
    check = "node-ready"
    if not gpu_nodes:
        return CheckResult(check, False, f"no node is labelled {GPU_PRESENT_LABEL}=true")
    gaps = []
    for node in gpu_nodes:
        condition = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == NODE_READY_CONDITION),
            None,
        )
        if condition is None:
            gaps.append(f"{name(node)}: no {NODE_READY_CONDITION} condition yet")
        elif condition.get("status") != "True":
            gaps.append(
                f"{name(node)}: {condition.get('status')} ({condition.get('reason')}: {condition.get('message')})"
            )
    if gaps:
        look = f"kubectl get nodes -o jsonpath='{{.items[*].status.conditions[?(@.type==\"{NODE_READY_CONDITION}\")]}}'"
        return CheckResult(check, False, f"{'; '.join(gaps)} ({look})")
    return CheckResult(check, True, f"{NODE_READY_CONDITION}=True on {', '.join(name(n) for n in gpu_nodes)}")


def log_attributes(line: str) -> dict[str, Any]:
    """The attributes of one log line from either of slog's handlers: JSON (`{"k":v,...}`) or text
    (`k=v k2="quoted value"`); a line in neither format has none."""
    start = line.find("{")
    if start >= 0:
        try:
            found = json.loads(line[start:])
        except ValueError:
            found = None
        if isinstance(found, dict):
            return found
    return {key: unquote(value) for key, value in TEXT_ATTRIBUTE.findall(line)}


def unquote(value: str) -> str:
    """A text-handler value: slog quotes it as Go's strconv.Quote does when it has spaces or quotes."""
    if not value.startswith('"'):
        return value
    try:
        return str(json.loads(value))
    except ValueError:
        return value.strip('"')


def caps_default_namespace(line: str) -> bool:
    """mpsd's line capping the `default` MPS namespace at 10 %, in slog's text or JSON format, or
    the control daemon's echo of that cap."""
    if "default" in line and DAEMON_CAP.search(line):
        return True
    attributes = log_attributes(line)
    try:
        percent = float(attributes.get("activeThreadPercent", ""))
    except (TypeError, ValueError):
        return False
    return attributes.get("namespace") == "default" and percent == 10


def decide_mpsd_logs(logs: Mapping[str, str], namespace: str) -> CheckResult:
    """Each mpsd pod started MPS in multi-user mode and capped the `default` namespace at 10 %."""
    check = "mpsd-log"
    if not logs:
        return CheckResult(
            check, False, f"no mpsd pod (kubectl -n {namespace} get pods -l app.kubernetes.io/component=mpsd)"
        )
    gaps = []
    for pod, log in sorted(logs.items()):
        if "multiuser enabled" not in log:
            gaps.append(f"{pod}: no multi-user server ('Adding server ... [multiuser enabled]')")
        if not any(caps_default_namespace(line) for line in log.splitlines()):
            gaps.append(f"{pod}: no cap of the default namespace at 10%")
    if gaps:
        return CheckResult(check, False, f"{'; '.join(gaps)} (kubectl -n {namespace} logs <pod>)")
    return CheckResult(check, True, f"multi-user server, default namespace at 10% on {len(logs)} pod(s)")


def decide_admission_objects(policy: Json | None, binding: Json | None, mode: str) -> CheckResult:
    """The fractional-pod policy and its binding exist, the binding in the configured mode, and the
    API server has compiled the policy's current generation without type warnings."""
    check = "policy"
    if policy is None or binding is None:
        missing = " and ".join(k for k, found in (("policy", policy), ("binding", binding)) if found is None)
        return CheckResult(check, False, f"{POLICY_NAME}: no {missing} yet (kubectl get validatingadmissionpolicies)")
    actions = (binding.get("spec") or {}).get("validationActions") or []
    wanted = VALIDATION_ACTIONS[mode]
    if actions != wanted:
        return CheckResult(check, False, f"binding {name(binding)} has validationActions {actions}, not {wanted}")
    status = policy.get("status") or {}
    generation = (policy.get("metadata") or {}).get("generation")
    if status.get("observedGeneration") != generation:
        return CheckResult(
            check, False, f"the API server has not compiled generation {generation} of {POLICY_NAME} yet"
        )
    warnings = [w.get("warning", "") for w in (status.get("typeChecking") or {}).get("expressionWarnings") or []]
    if warnings:
        return CheckResult(check, False, f"{POLICY_NAME} does not type-check: {one_line('; '.join(warnings))}")
    return CheckResult(check, True, f"{POLICY_NAME} compiled (generation {generation}), binding in {mode} mode")


def decide_admission_refusal(refusal: str | None, mode: str) -> CheckResult:
    """What a server-side dry run of a fractional pod that runs as root met: in deny mode, the
    policy's refusal (the API server loads a new policy a moment after it is stored); in warn and
    audit mode the pod is admitted, and only the binding says the policy is in force."""
    check = "refuses-root-fraction-pod"
    if mode != "deny":
        if refusal is None:
            return CheckResult(check, True, f"a root fractional pod is admitted, as {mode} mode does")
        return CheckResult(check, False, f"a root fractional pod was refused in {mode} mode: {one_line(refusal)}")
    if refusal is not None and f"ValidatingAdmissionPolicy '{POLICY_NAME}'" in refusal:
        return CheckResult(check, True, "a root fractional pod is refused: " + one_line(refusal))
    seen = f"refused by something else: {one_line(refusal)}" if refusal else "admitted"
    return CheckResult(check, False, f"a root fractional pod was {seen}; the policy is not in force yet")
