"""The guide's verification after each install, run as a gate: `up` waits until it holds, printing
progress, and fails the update before the next step starts when it does not hold in time.

- gpu-operator: ClusterPolicy ready, the `nvidia` RuntimeClass, every GPU node labelled by GFD
  (gpu.present, gpu.memory, a driver of at least the pinned branch) and advertising its GPUs;
- kai-scheduler: every Deployment Available (most are the operator's, not the chart's), kai-config
  Available and, for the forks, in NvFractions mode, and the webhooks its operator registers
  (all `failurePolicy: Fail`) answering, so the Queues and pods of later steps are not refused;
- gpu-fractioning: its operator Available, mpsd and fractiond with desired == ready, the `default`
  GpuFractioningConfig's conditions True, KAI's kai-config seeing it (DependenciesFulfilled), every
  GPU node Ready for fractions, and mpsd's log showing the multi-user server and the `default`
  namespace capped at 10 %;
- fraction-admission: the fractional-pod ValidatingAdmissionPolicy compiled, its binding in the
  configured mode and, in deny mode, a dry run of a fractional pod that runs as root refused by it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from components.checks import gate_decisions as decide
from components.checks.cluster import Cluster, Json
from components.checks.cluster_facts import is_gpu_node, node_facts
from components.checks.dynamic import ReportedFailure
from components.checks.results import CheckResult, failures, format_results, guarded
from components.checks.waiting import Clock, Deadline, poll
from components.vocabulary import fractioning, kai
from components.vocabulary.fractions import FRACTION_ANNOTATION, POLICY_NAME
from components.vocabulary.kai import DEFAULT_QUEUE
from components.vocabulary.nvidia import (
    CLUSTER_POLICY_GROUP,
    CLUSTER_POLICY_PLURAL,
    CLUSTER_POLICY_VERSION,
    GPU_PRESENT_LABEL,
    MINIMUM_DRIVER_BRANCH,
    RUNTIME_CLASS,
)

Step = Literal["gpu-operator", "kai-scheduler", "gpu-fractioning", "fraction-admission"]
PROGRESS_EVERY_SECONDS = 60.0

# Where the dry-run probes of KAI's webhooks and the admission policy are admitted: a namespace every cluster has, which
# KAI's pod webhooks select (they skip only kube-system and KAI's own namespace).
PROBE_NAMESPACE = "default"


@dataclass(frozen=True)
class GateSpec:
    """What one gate checks; its fields are the StepGate resource's inputs (components/stack.py
    builds them from the config)."""

    step: Step
    # The step's own namespace (the dry-run probes' for fraction-admission).
    namespace: str
    timeout_seconds: int
    # KAI's namespace, which the gpu-fractioning gate names when kai-config does not see the agents;
    # stacks gated before it was an input used the default.
    kai_namespace: str = kai.DEFAULT_NAMESPACE
    minimum_driver_major: int = MINIMUM_DRIVER_BRANCH
    runtime_class: str = RUNTIME_CLASS
    sharing_mode: str | None = None
    admission_mode: str | None = None


def gpu_nodes(cluster: Cluster) -> list[Json]:
    return [n for n in cluster.list_nodes() if is_gpu_node(node_facts(n))]


def check_gpu_operator(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    return [
        guarded(
            "cluster-policy",
            lambda: decide.decide_cluster_policy(
                cluster.list_cluster_objects(CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL),
                spec.namespace,
            ),
        ),
        guarded(
            "runtime-class",
            lambda: decide.decide_runtime_class(cluster.list_runtime_classes(), spec.runtime_class, spec.namespace),
        ),
        guarded(
            "gpu-nodes",
            lambda: decide.decide_gpu_nodes(gpu_nodes(cluster), spec.minimum_driver_major, spec.namespace),
        ),
    ]


def read_kai_config(cluster: Cluster) -> Json | None:
    return cluster.read_cluster_object(kai.CONFIG_GROUP, kai.CONFIG_VERSION, kai.CONFIG_PLURAL, kai.CONFIG_NAME)


def webhook_probes() -> dict[kai.Admits, tuple[str, str, str | None, Json]]:
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
    services = {s for found in registered.values() if found for s in decide.webhook_services(found)}
    ready = {s: decide.has_ready_endpoint(cluster.list_endpoint_slices(*s)) for s in services}
    refusals: dict[str, str | None] = {}
    if all(registered.values()) and all(ready.values()):
        probes = webhook_probes()
        for admits in dict.fromkeys(w.admits for w in expected):
            api_version, plural, namespace, manifest = probes[admits]
            refusals[admits] = cluster.dry_run_create(api_version, plural, namespace, manifest)
    return decide.decide_kai_webhooks(expected, registered, ready, refusals)


def check_kai_scheduler(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    deployments = guarded(
        "deployments",
        lambda: decide.decide_deployments(cluster.list_deployments(spec.namespace), kai.DEPLOYMENTS, spec.namespace),
    )
    try:
        config = read_kai_config(cluster)
    except Exception as error:  # reported as the check's failure, like every other read
        return [deployments, CheckResult("kai-config", False, f"could not read kai-config: {error}")]
    return [
        deployments,
        *decide.decide_kai_config(config, spec.sharing_mode, spec.namespace),
        guarded("webhooks", lambda: check_kai_webhooks(cluster, config)),
    ]


def check_gpu_fractioning(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    namespace = spec.namespace

    def mpsd_logs() -> dict[str, str]:
        pods = cluster.list_pods(namespace, fractioning.MPSD_SELECTOR)
        return {str(p["metadata"]["name"]): cluster.pod_logs(namespace, str(p["metadata"]["name"])) for p in pods}

    return [
        guarded(
            "operator",
            lambda: decide.decide_deployments(
                cluster.list_deployments(namespace), [fractioning.OPERATOR_DEPLOYMENT], namespace
            ),
        ),
        guarded(
            "daemonsets",
            lambda: decide.decide_daemonsets(
                cluster.list_daemonsets(namespace, fractioning.DAEMONSET_SELECTOR), namespace
            ),
        ),
        guarded(
            "gpu-fractioning-config",
            lambda: decide.decide_fractioning_config(
                cluster.read_cluster_object(
                    fractioning.CONFIG_GROUP,
                    fractioning.CONFIG_VERSION,
                    fractioning.CONFIG_PLURAL,
                    "default",
                )
            ),
        ),
        guarded(
            "kai-dependencies-fulfilled",
            lambda: decide.decide_kai_sees_fractioning(read_kai_config(cluster), spec.kai_namespace),
        ),
        guarded(
            "node-ready",
            lambda: decide.decide_node_readiness(cluster.list_nodes(f"{GPU_PRESENT_LABEL}=true")),
        ),
        guarded("mpsd-log", lambda: decide.decide_mpsd_logs(mpsd_logs(), namespace)),
    ]


def admission_probe() -> Json:
    """A fractional pod without the runtime class that runs as root, for the API server to refuse in
    a dry run. It names no runtime class and no scheduler, so no other admission step (RuntimeClass,
    KAI's pod webhooks) gets to answer first."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "kgf-admission-probe-", "annotations": {FRACTION_ANNOTATION: "0.5"}},
        "spec": {
            "securityContext": {"runAsUser": 0},
            "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def check_fraction_admission(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    mode = spec.admission_mode or "deny"
    group, version = "admissionregistration.k8s.io", "v1"
    return [
        guarded(
            "policy",
            lambda: decide.decide_admission_objects(
                cluster.read_cluster_object(group, version, "validatingadmissionpolicies", POLICY_NAME),
                cluster.read_cluster_object(group, version, "validatingadmissionpolicybindings", POLICY_NAME),
                mode,
            ),
        ),
        guarded(
            "refuses-root-fraction-pod",
            lambda: decide.decide_admission_refusal(
                cluster.dry_run_create("v1", "pods", spec.namespace, admission_probe()), mode
            ),
        ),
    ]


@dataclass(frozen=True)
class GateStep:
    """One step's gate: what it waits for, the config key of its timeout, and its checks. A new
    check is a function here and a decision in gate_decisions.py; a new step is a row here, its
    name in Step, and its spec in components/stack.py."""

    title: str
    timeout_key: str
    checks: Callable[[Cluster, GateSpec], list[CheckResult]]


STEPS: dict[Step, GateStep] = {
    "gpu-operator": GateStep("GPU Operator ready", "gpuOperator.readyTimeoutSeconds", check_gpu_operator),
    "kai-scheduler": GateStep("KAI-Scheduler ready", "kai.readyTimeoutSeconds", check_kai_scheduler),
    "gpu-fractioning": GateStep(
        "gpu-fractioning node agents ready", "gpuFractioning.readyTimeoutSeconds", check_gpu_fractioning
    ),
    "fraction-admission": GateStep(
        "fractional-pod admission policy in force", "admission.readyTimeoutSeconds", check_fraction_admission
    ),
}


class GateTimedOut(ReportedFailure):
    """A step's verification did not hold in time: the next step was not started."""


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds}s"
        if seconds < 60
        else f"{seconds // 60} min {seconds % 60}s"
        if seconds % 60
        else f"{seconds // 60} min"
    )


def progress_to_stderr(line: str) -> None:
    """The engine shows a dynamic provider's stderr as it comes, under the stack's diagnostics."""
    print(line, file=sys.stderr, flush=True)


def wait_for_gate(
    cluster: Cluster,
    spec: GateSpec,
    clock: Clock | None = None,
    progress: Callable[[str], None] = progress_to_stderr,
) -> list[CheckResult]:
    """The gate's results once every check holds; raises GateTimedOut naming what did not."""
    clock = clock or Clock()
    step = STEPS[spec.step]
    title = step.title
    start = clock.now()
    last_said, said_at = "", start

    def say_what_it_waits_for(results: list[CheckResult]) -> None:
        nonlocal last_said, said_at
        waiting = waiting_for(results)
        if waiting != last_said or clock.now() - said_at >= PROGRESS_EVERY_SECONDS:
            progress(f"{title}: waiting, {minutes(clock.now() - start)} of {minutes(spec.timeout_seconds)}: {waiting}")
            last_said, said_at = waiting, clock.now()

    results = poll(
        lambda: step.checks(cluster, spec),
        lambda results: not failures(results),
        Deadline(clock, start + spec.timeout_seconds),
        between=say_what_it_waits_for,
    )
    elapsed = clock.now() - start
    if waiting := waiting_for(results):
        raise GateTimedOut(
            f"{title}: not after {minutes(elapsed)} ({step.timeout_key} is {spec.timeout_seconds}); "
            f"the next step was not started. Waiting for: {waiting}\n{format_results(results, title)}"
        )
    progress(f"{title}: all {len(results)} checks hold after {minutes(elapsed)}")
    return results


def waiting_for(results: list[CheckResult]) -> str:
    return "; ".join(f"{r.check}: {r.detail}" for r in failures(results))
