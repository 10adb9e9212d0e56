"""The lab proof run: what the laptop lab can show on fake GPUs, gathered from the cluster, and the
wait for the device plugin to advertise the lab's GPUs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.cluster.protocol import Cluster
from components.cluster.results import CheckResult, guarded, phase
from components.cluster.waiting import Clock, retry
from components.proofs.lab_decisions import (
    decide_allocatable,
    decide_isolator_injection,
    decide_queue_allocation,
    decide_reservation_boundary,
    parse_queue_division_log,
    queue_allocated_gpus,
)
from components.vocabulary.kai import (
    DEFAULT_NAMESPACE,
    DEFAULT_QUEUE,
    QUEUE_GROUP,
    QUEUE_PLURAL,
    QUEUE_VERSION,
    RESERVATION_NAMESPACE,
    SCHEDULER_DEPLOYMENT,
)
from components.vocabulary.nvidia import GPU_PRESENT_LABEL

# The lab's whole-GPU pod, which the queue's allocation counts next to the shared pod's slice.
WHOLE_GPUS = 1


@dataclass(frozen=True)
class LabSpec:
    """What the lab proof checks; its fields are the LabProof resource's inputs."""

    gpu_count: int
    gpu_memory_mib: int
    shared_memory_mib: int
    shared_pod: str
    nodes: tuple[str, ...] = ()
    namespace: str = "default"
    queue: str = DEFAULT_QUEUE
    # Where KAI's scheduler logs each queue's division; stacks proved before it was an input used the default.
    kai_namespace: str = DEFAULT_NAMESPACE
    timeout_seconds: int = 300


@dataclass(frozen=True)
class AllocatableSpec:
    """The wait for the device plugin; its fields are the GpusAllocatable resource's inputs."""

    gpu_count: int
    nodes: tuple[str, ...]
    timeout_seconds: int = 300


def wait_for_allocatable(cluster: Cluster, spec: AllocatableSpec, clock: Clock | None = None) -> list[CheckResult]:
    """The device plugin is ready once every lab GPU node advertises the profile's GPU count."""
    attempt = lambda: _allocatable(cluster, spec.gpu_count, spec.nodes)  # noqa: E731
    return [guarded("allocatable-gpus", lambda: retry(clock or Clock(), spec.timeout_seconds, attempt))]


def prove_lab(cluster: Cluster, spec: LabSpec, clock: Clock | None = None) -> list[CheckResult]:
    """Allocatable GPUs, the queue's fractional allocation, the isolator's injection, the reservation boundary."""
    clock = clock or Clock()
    fraction = spec.shared_memory_mib / spec.gpu_memory_mib
    return [
        guarded("allocatable-gpus", lambda: _allocatable(cluster, spec.gpu_count, spec.nodes)),
        guarded(
            "queue-allocation",
            lambda: retry(
                clock,
                spec.timeout_seconds,
                lambda: decide_queue_allocation(_queue_allocated(cluster, spec), spec.queue, WHOLE_GPUS, fraction),
            ),
        ),
        guarded("isolator-injection", lambda: _isolator(cluster, spec)),
        guarded("reservation-boundary", lambda: retry(clock, spec.timeout_seconds, lambda: _boundary(cluster, spec))),
    ]


def _allocatable(cluster: Cluster, gpu_count: int, names: Sequence[str]) -> CheckResult:
    nodes = cluster.list_nodes("" if names else f"{GPU_PRESENT_LABEL}=true")
    allocatable = {
        str(n["metadata"]["name"]): {
            str(k): str(v) for k, v in ((n.get("status") or {}).get("allocatable") or {}).items()
        }
        for n in nodes
        if not names or n["metadata"]["name"] in names
    }
    return decide_allocatable(allocatable, gpu_count)


def _isolator(cluster: Cluster, spec: LabSpec) -> CheckResult:
    pod = cluster.read_pod(spec.namespace, spec.shared_pod)
    if pod is None:
        return CheckResult("isolator-injection", False, f"no shared pod {spec.namespace}/{spec.shared_pod}")
    return decide_isolator_injection(pod)


def _queue_allocated(cluster: Cluster, spec: LabSpec) -> float | None:
    queue = cluster.read_cluster_object(QUEUE_GROUP, QUEUE_VERSION, QUEUE_PLURAL, spec.queue)
    allocated = queue_allocated_gpus(queue) if queue else None
    if allocated is not None:
        return allocated
    # KAI also logs each queue's division; read it when the Queue status carries no allocation.
    for pod in cluster.list_pods(spec.kai_namespace):
        name = str(pod["metadata"]["name"])
        if name.startswith(SCHEDULER_DEPLOYMENT):
            logged = parse_queue_division_log(cluster.pod_logs(spec.kai_namespace, name), spec.queue)
            if logged is not None:
                return logged
    return None


def _boundary(cluster: Cluster, spec: LabSpec) -> CheckResult:
    shared = cluster.read_pod(spec.namespace, spec.shared_pod)
    logs = []
    for pod in cluster.list_pods(RESERVATION_NAMESPACE):
        for container in (pod.get("spec") or {}).get("containers") or []:
            logs.append(cluster.pod_logs(RESERVATION_NAMESPACE, str(pod["metadata"]["name"]), container["name"]))
    events = cluster.events_for(spec.namespace, spec.shared_pod)
    return decide_reservation_boundary(phase(shared) if shared else None, "\n".join(logs), events)
