"""The smoke proof run: the guide's four checks on the smoke pods, then the SM share measured with
deviceQuery, each from evidence gathered in the cluster (exec, logs, node labels)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.cluster.protocol import Cluster
from components.cluster.results import (
    CheckResult,
    default_container,
    guarded,
    phase,
)
from components.cluster.waiting import Clock, poll_delays, retry, wait_for
from components.proofs.smoke_decisions import (
    DEVICE_QUERY_IMAGE,
    SmokeSpec,
    decide_binder,
    decide_env,
    decide_memory_view,
    decide_namespaces,
    decide_sm_share,
    expected_memory_cap_mib,
    parse_device_query,
    parse_env,
    parse_memory_total,
    parse_namespace_list,
    sm_count_for_product,
)
from components.vocabulary.fractioning import MPSD_SELECTOR
from components.vocabulary.kai import SCHEDULER_NAME
from components.vocabulary.nvidia import GPU_MEMORY_LABEL, GPU_PRODUCT_LABEL, RUNTIME_CLASS

if TYPE_CHECKING:
    from components.config.model import SmokeTestConfig

# The pods the smoke test creates (gpu_cluster/smoke_pods.py) and this proof proves.
SMOKE_POD_NAMES = ("fraction-smoke-a", "fraction-smoke-b")
CONTAINER = "main"


@dataclass(frozen=True)
class ProofPod:
    """A pod of the proof's own, made as the smoke pods are (the plugin runs the proofs without
    importing the config model)."""

    namespace: str
    queue: str
    image: str
    gpu_fraction: float


def smoke_pod_manifest(name: str, config: SmokeTestConfig | ProofPod) -> dict[str, Any]:
    """A fractional pod as the build guide's smoke test defines it.

    It runs as a non-root user: MPS lets root clients raise their own cap or delete a
    neighbour's namespace. The compute-mode annotation names the container, so both must match.
    """
    return {
        "metadata": {
            "name": name,
            "namespace": config.namespace,
            "labels": {"app": "nvfractions-smoke", "kai.scheduler/queue": config.queue},
            "annotations": {
                "gpu-fraction": f"{config.gpu_fraction:g}",
                f"nvidia.com/container.{CONTAINER}.gpu-compute.mode": "sm-sharing",
            },
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "runtimeClassName": RUNTIME_CLASS,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": CONTAINER,
                    "image": config.image,
                    # They live as long as the stack: a re-run of the proof finds them running.
                    "command": ["sleep", "infinity"],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


DEVICE_QUERY_POD = "fraction-devicequery"
# Every deviceQuery pod carries it, with DEVICE_QUERY_POD as its value.
DEVICE_QUERY_LABEL = "app.kubernetes.io/name"

NAMESPACE_LIST = ["nvidia-cuda-mps-control", "-p", "3", "namespace", "list", "--server=shared"]
HOSTILE_MEMORY_QUERY = [
    "env",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100",
    "nvidia-smi",
    "--query-gpu=memory.total",
    "--format=csv,noheader",
]


def prove_smoke(cluster: Cluster, spec: SmokeSpec, clock: Clock | None = None) -> list[CheckResult]:
    """The guide's four checks on the smoke pods, then the SM share measured with deviceQuery."""
    clock = clock or Clock()
    deadline = clock.now() + spec.timeout_seconds
    pods = wait_for(clock, deadline, lambda: _running_pods(cluster, spec))
    if pods is None:
        phases = {name: phase(cluster.read_pod(spec.namespace, name)) for name in spec.pods}
        reason = "smoke pods not Running: " + ", ".join(f"{n} {p}" for n, p in phases.items())
        checks = ["binder-annotations", "injected-env", "mps-namespaces", "memory-view", "sm-share"]
        return [CheckResult(check, False, reason) for check in checks]
    first = spec.pods[0]
    node = str((pods[first].get("spec") or {}).get("nodeName") or "")
    # The binder computes the cap from the node's label; the config's figure only stands in for it.
    gpu_memory_mib = _labelled_gpu_memory_mib(cluster, node) or spec.gpu_memory_mib
    results = [
        guarded(
            "binder-annotations",
            lambda: decide_binder({n: (p.get("metadata") or {}).get("annotations") or {} for n, p in pods.items()}),
        ),
        guarded(
            "injected-env",
            lambda: decide_env(
                parse_env(cluster.exec(spec.namespace, first, CONTAINER, ["env"])),
                spec.gpu_fraction,
                gpu_memory_mib,
            ),
        ),
        guarded("mps-namespaces", lambda: _namespaces(cluster, spec, node, clock)),
        guarded(
            "memory-view",
            lambda: decide_memory_view(
                parse_memory_total(cluster.exec(spec.namespace, first, CONTAINER, HOSTILE_MEMORY_QUERY)),
                expected_memory_cap_mib(gpu_memory_mib, spec.gpu_fraction),
                gpu_memory_mib,
            ),
        ),
    ]
    if spec.measure_sm_share:
        results.append(guarded("sm-share", lambda: measure_sm_share(cluster, spec, node, clock)))
    return results


def _labelled_gpu_memory_mib(cluster: Cluster, node: str) -> int | None:
    raw = ((cluster.read_node(node) or {}).get("metadata") or {}).get("labels", {}).get(GPU_MEMORY_LABEL, "")
    return int(raw) if str(raw).isdigit() and int(raw) > 0 else None


def _running_pods(cluster: Cluster, spec: SmokeSpec) -> dict[str, dict[str, Any]] | None:
    pods = {name: cluster.read_pod(spec.namespace, name) for name in spec.pods}
    if all(p is not None and phase(p) == "Running" for p in pods.values()):
        return {name: pod for name, pod in pods.items() if pod is not None}
    return None


def _namespaces(cluster: Cluster, spec: SmokeSpec, node: str, clock: Clock) -> CheckResult:
    mpsd = cluster.list_pods(spec.agents_namespace, MPSD_SELECTOR, f"spec.nodeName={node}")
    if not mpsd:
        return CheckResult("mps-namespaces", False, f"no mpsd pod ({MPSD_SELECTOR}) on node {node}")
    pod = mpsd[0]
    name = str(pod["metadata"]["name"])

    def attempt() -> CheckResult:
        listing = cluster.exec(spec.agents_namespace, name, default_container(pod), NAMESPACE_LIST)
        return decide_namespaces(parse_namespace_list(listing), len(spec.pods), spec.gpu_fraction)

    # Namespaces of a re-run's deleted pods linger and new ones take a moment: ask again for a minute.
    return retry(clock, 60.0, attempt)


def measure_sm_share(cluster: Cluster, spec: SmokeSpec, node: str, clock: Clock, pinned: bool = False) -> CheckResult:
    """The SM share deviceQuery sees in a fractional pod that asks for 100 %, on a GPU like `node`'s;
    `pinned` runs it on `node` itself (a driver rollout proves each node it took)."""
    sm_count = spec.sm_count
    if sm_count is None:
        product = ((cluster.read_node(node) or {}).get("metadata") or {}).get("labels", {}).get(GPU_PRODUCT_LABEL, "")
        sm_count = sm_count_for_product(product)
        if sm_count is None:
            return CheckResult("sm-share", False, f"unknown SM count for GPU product {product!r}: set smCount")
    on = node if pinned else None
    manifest = device_query_pod_manifest(spec.namespace, spec.queue, spec.gpu_fraction, spec.device_query_image, on)
    pod = str(manifest["metadata"]["name"])
    cluster.delete_pod(spec.namespace, pod)
    cluster.create_pod(spec.namespace, manifest)
    try:
        deadline = clock.now() + spec.timeout_seconds
        # deviceQuery is done within a second of its start: look soon, then back off.
        delays = poll_delays(first=0.1, steady_for=0.0)
        finished = wait_for(clock, deadline, lambda: _finished(cluster.read_pod(spec.namespace, pod)), delays)
        if finished is None:
            events = cluster.events_for(spec.namespace, pod)[-1:]
            return CheckResult(
                "sm-share",
                False,
                f"{pod} did not finish in {spec.timeout_seconds}s (phase {phase(cluster.read_pod(spec.namespace, pod))}"
                + "".join(f"; {event}" for event in events)
                + f"); it needs a free {spec.gpu_fraction:g} GPU "
                + (f"on {node}" if pinned else "besides the one the smoke pods hold"),
            )
        return decide_sm_share(parse_device_query(cluster.pod_logs(spec.namespace, pod)), sm_count, spec.gpu_fraction)
    finally:
        cluster.delete_pod(spec.namespace, pod)


def _finished(pod: dict[str, Any] | None) -> str | None:
    return found if (found := phase(pod)) in ("Succeeded", "Failed") else None


def device_query_pod_manifest(
    namespace: str, queue: str, fraction: float, image: str = DEVICE_QUERY_IMAGE, node: str | None = None
) -> dict:
    """The guide's half-GPU deviceQuery pod: a smoke pod that tries to override its own share to 100 %;
    with a `node`, one of its own that runs there."""
    name = f"{DEVICE_QUERY_POD}-{node}"[:253] if node else DEVICE_QUERY_POD
    pod = smoke_pod_manifest(name, ProofPod(namespace, queue, image, fraction))
    pod["metadata"]["labels"][DEVICE_QUERY_LABEL] = DEVICE_QUERY_POD
    if node:
        pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    (container,) = pod["spec"]["containers"]
    del container["command"]  # the image's entrypoint runs deviceQuery
    container["env"] = [{"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": "100"}]
    return {"apiVersion": "v1", "kind": "Pod", **pod}
