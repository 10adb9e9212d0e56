"""SmokeProof and LabProof: dynamic resources that prove the caps after install, or fail the update.

On create and update they gather evidence with the kubernetes client (pod specs and annotations,
`exec` into pods, logs, events, Queue status), run the decisions of components/proof.py and either
return `results` and `report` as outputs or raise naming each failed check and why. They do nothing
during preview. The provider is pickled into the state: it holds no data, and everything it needs is
imported inside its methods from this importable module.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from components.checks.cluster_facts import (
    GPU_MEMORY_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    api_client,
    raw_json,
)
from components.checks.dynamic import (
    ACCESS_KEYS,
    ReportedFailure,
    cluster_props,
    report_failures_without_traceback,
    with_secret_kubeconfig,
)
from components.checks.proof import (
    DEVICE_QUERY_IMAGE,
    DEVICE_QUERY_POD,
    ProofResult,
    decide_allocatable,
    decide_binder,
    decide_env,
    decide_isolator_injection,
    decide_memory_view,
    decide_namespaces,
    decide_queue_allocation,
    decide_reservation_boundary,
    decide_sm_share,
    device_query_pod_manifest,
    expected_memory_cap_mib,
    failures,
    format_proof,
    parse_device_query,
    parse_env,
    parse_memory_total,
    parse_namespace_list,
    parse_queue_division_log,
    queue_allocated_gpus,
    sm_count_for_product,
)
from components.gpu_cluster.gpu_fractioning import MPSD_SELECTOR

NAMESPACE_LIST = ["nvidia-cuda-mps-control", "-p", "3", "namespace", "list", "--server=shared"]
HOSTILE_MEMORY_QUERY = [
    "env",
    "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100",
    "nvidia-smi",
    "--query-gpu=memory.total",
    "--format=csv,noheader",
]
POLL_SECONDS = 5.0

report_failures_without_traceback()


class ProofCluster(Protocol):
    """The few reads and execs the proofs need, as plain JSON-shaped dicts."""

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]: ...

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str: ...

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> None: ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str: ...

    def read_node(self, name: str) -> dict[str, Any] | None: ...

    def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]: ...

    def read_queue(self, name: str) -> dict[str, Any] | None: ...

    def events_for(self, namespace: str, name: str) -> list[str]: ...


@dataclass
class Clock:
    """Time, injectable so the polling is testable without waiting."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


# ---------------------------------------------------------------- the a100 smoke proof


@dataclass(frozen=True)
class SmokeSpec:
    pods: list[str]
    gpu_memory_mib: int
    gpu_fraction: float
    namespace: str = "default"
    container: str = "main"
    queue: str = "default-queue"
    agents_namespace: str = "gpu-fractioning"
    sm_count: int | None = None
    measure_sm_share: bool = True
    device_query_image: str = DEVICE_QUERY_IMAGE
    timeout_seconds: int = 600


def smoke_spec(props: Mapping[str, Any]) -> SmokeSpec:
    return SmokeSpec(
        pods=[str(p) for p in props["pods"]],
        gpu_memory_mib=int(props["gpu_memory_mib"]),
        gpu_fraction=float(props["gpu_fraction"]),
        namespace=str(props.get("namespace") or "default"),
        container=str(props.get("container") or "main"),
        queue=str(props.get("queue") or "default-queue"),
        agents_namespace=str(props.get("agents_namespace") or "gpu-fractioning"),
        sm_count=int(props["sm_count"]) if props.get("sm_count") else None,
        measure_sm_share=bool(props.get("measure_sm_share", True)),
        device_query_image=str(props.get("device_query_image") or DEVICE_QUERY_IMAGE),
        timeout_seconds=int(props.get("timeout_seconds") or 600),
    )


def prove_smoke(cluster: ProofCluster, spec: SmokeSpec, clock: Clock | None = None) -> list[ProofResult]:
    """The guide's four checks on the smoke pods, then the SM share measured with deviceQuery."""
    clock = clock or Clock()
    deadline = clock.now() + spec.timeout_seconds
    pods = _wait_for(clock, deadline, lambda: _running_pods(cluster, spec))
    if pods is None:
        phases = {name: _phase(cluster.read_pod(spec.namespace, name)) for name in spec.pods}
        reason = "smoke pods not Running: " + ", ".join(f"{n} {p}" for n, p in phases.items())
        checks = ["binder-annotations", "injected-env", "mps-namespaces", "memory-view", "sm-share"]
        return [ProofResult(check, False, reason) for check in checks]
    first = spec.pods[0]
    node = str((pods[first].get("spec") or {}).get("nodeName") or "")
    # The binder computes the cap from the node's label; the config's figure only stands in for it.
    gpu_memory_mib = _labelled_gpu_memory_mib(cluster, node) or spec.gpu_memory_mib
    results = [
        _guarded(
            "binder-annotations",
            lambda: decide_binder({n: (p.get("metadata") or {}).get("annotations") or {} for n, p in pods.items()}),
        ),
        _guarded(
            "injected-env",
            lambda: decide_env(
                parse_env(cluster.exec(spec.namespace, first, spec.container, ["env"])),
                spec.gpu_fraction,
                gpu_memory_mib,
            ),
        ),
        _guarded("mps-namespaces", lambda: _namespaces(cluster, spec, node, clock)),
        _guarded(
            "memory-view",
            lambda: decide_memory_view(
                parse_memory_total(cluster.exec(spec.namespace, first, spec.container, HOSTILE_MEMORY_QUERY)),
                expected_memory_cap_mib(gpu_memory_mib, spec.gpu_fraction),
                gpu_memory_mib,
            ),
        ),
    ]
    if spec.measure_sm_share:
        results.append(_guarded("sm-share", lambda: _sm_share(cluster, spec, node, clock)))
    return results


def _labelled_gpu_memory_mib(cluster: ProofCluster, node: str) -> int | None:
    raw = ((cluster.read_node(node) or {}).get("metadata") or {}).get("labels", {}).get(GPU_MEMORY_LABEL, "")
    return int(raw) if str(raw).isdigit() and int(raw) > 0 else None


def _running_pods(cluster: ProofCluster, spec: SmokeSpec) -> dict[str, dict[str, Any]] | None:
    pods = {name: cluster.read_pod(spec.namespace, name) for name in spec.pods}
    if all(p is not None and _phase(p) == "Running" for p in pods.values()):
        return {name: pod for name, pod in pods.items() if pod is not None}
    return None


def _namespaces(cluster: ProofCluster, spec: SmokeSpec, node: str, clock: Clock) -> ProofResult:
    mpsd = cluster.list_pods(spec.agents_namespace, MPSD_SELECTOR, f"spec.nodeName={node}")
    if not mpsd:
        return ProofResult("mps-namespaces", False, f"no mpsd pod ({MPSD_SELECTOR}) on node {node}")
    pod = mpsd[0]
    name = str(pod["metadata"]["name"])

    def attempt() -> ProofResult:
        listing = cluster.exec(spec.agents_namespace, name, default_container(pod), NAMESPACE_LIST)
        return decide_namespaces(parse_namespace_list(listing), len(spec.pods), spec.gpu_fraction)

    # Namespaces of a re-run's deleted pods linger and new ones take a moment: ask again for a minute.
    return _retry(clock, 60.0, attempt)


def _sm_share(cluster: ProofCluster, spec: SmokeSpec, node: str, clock: Clock) -> ProofResult:
    sm_count = spec.sm_count
    if sm_count is None:
        product = ((cluster.read_node(node) or {}).get("metadata") or {}).get("labels", {}).get(GPU_PRODUCT_LABEL, "")
        sm_count = sm_count_for_product(product)
        if sm_count is None:
            return ProofResult("sm-share", False, f"unknown SM count for GPU product {product!r}: set smCount")
    manifest = device_query_pod_manifest(spec.namespace, spec.queue, spec.gpu_fraction, spec.device_query_image)
    cluster.delete_pod(spec.namespace, DEVICE_QUERY_POD)
    cluster.create_pod(spec.namespace, manifest)
    try:
        deadline = clock.now() + spec.timeout_seconds
        phase = _wait_for(clock, deadline, lambda: _finished(cluster.read_pod(spec.namespace, DEVICE_QUERY_POD)))
        if phase is None:
            pod = cluster.read_pod(spec.namespace, DEVICE_QUERY_POD)
            events = cluster.events_for(spec.namespace, DEVICE_QUERY_POD)[-1:]
            return ProofResult(
                "sm-share",
                False,
                f"{DEVICE_QUERY_POD} did not finish in {spec.timeout_seconds}s (phase {_phase(pod)}"
                + "".join(f"; {event}" for event in events)
                + f"); it needs a free {spec.gpu_fraction:g} GPU besides the one the smoke pods hold",
            )
        return decide_sm_share(
            parse_device_query(cluster.pod_logs(spec.namespace, DEVICE_QUERY_POD)), sm_count, spec.gpu_fraction
        )
    finally:
        cluster.delete_pod(spec.namespace, DEVICE_QUERY_POD)


def _finished(pod: dict[str, Any] | None) -> str | None:
    phase = _phase(pod)
    return phase if phase in ("Succeeded", "Failed") else None


# ---------------------------------------------------------------- the lab proof


@dataclass(frozen=True)
class LabSpec:
    gpu_count: int
    gpu_memory_mib: int
    shared_memory_mib: int
    nodes: list[str] = field(default_factory=list)
    namespace: str = "default"
    queue: str = "default-queue"
    whole_gpus: int = 1
    shared_pod: str = "gpu-sharing-with-isolation"
    reservation_namespace: str = "kai-resource-reservation"
    scheduler_namespace: str = "kai-scheduler"
    timeout_seconds: int = 300


def lab_spec(props: Mapping[str, Any]) -> LabSpec:
    return LabSpec(
        gpu_count=int(props["gpu_count"]),
        gpu_memory_mib=int(props["gpu_memory_mib"]),
        shared_memory_mib=int(props["shared_memory_mib"]),
        nodes=[str(n) for n in props.get("nodes") or []],
        namespace=str(props.get("namespace") or "default"),
        queue=str(props.get("queue") or "default-queue"),
        whole_gpus=int(props.get("whole_gpus") or 1),
        shared_pod=str(props.get("shared_pod") or "gpu-sharing-with-isolation"),
        timeout_seconds=int(props.get("timeout_seconds") or 300),
    )


def wait_for_allocatable(
    cluster: ProofCluster, gpu_count: int, nodes: Sequence[str], timeout_seconds: float, clock: Clock | None = None
) -> list[ProofResult]:
    """The device plugin is ready once every lab GPU node advertises the profile's GPU count."""
    attempt = lambda: _allocatable(cluster, gpu_count, nodes)  # noqa: E731
    return [_guarded("allocatable-gpus", lambda: _retry(clock or Clock(), timeout_seconds, attempt))]


def prove_lab(cluster: ProofCluster, spec: LabSpec, clock: Clock | None = None) -> list[ProofResult]:
    """Allocatable GPUs, the queue's fractional allocation, the isolator's injection, the reservation boundary."""
    clock = clock or Clock()
    fraction = spec.shared_memory_mib / spec.gpu_memory_mib
    return [
        _guarded("allocatable-gpus", lambda: _allocatable(cluster, spec.gpu_count, spec.nodes)),
        _guarded(
            "queue-allocation",
            lambda: _retry(
                clock,
                spec.timeout_seconds,
                lambda: decide_queue_allocation(_queue_allocated(cluster, spec), spec.queue, spec.whole_gpus, fraction),
            ),
        ),
        _guarded("isolator-injection", lambda: _isolator(cluster, spec)),
        _guarded("reservation-boundary", lambda: _retry(clock, spec.timeout_seconds, lambda: _boundary(cluster, spec))),
    ]


def _allocatable(cluster: ProofCluster, gpu_count: int, names: Sequence[str]) -> ProofResult:
    nodes = cluster.list_nodes("" if names else f"{GPU_PRESENT_LABEL}=true")
    allocatable = {
        str(n["metadata"]["name"]): {
            str(k): str(v) for k, v in ((n.get("status") or {}).get("allocatable") or {}).items()
        }
        for n in nodes
        if not names or n["metadata"]["name"] in names
    }
    return decide_allocatable(allocatable, gpu_count)


def _isolator(cluster: ProofCluster, spec: LabSpec) -> ProofResult:
    pod = cluster.read_pod(spec.namespace, spec.shared_pod)
    if pod is None:
        return ProofResult("isolator-injection", False, f"no shared pod {spec.namespace}/{spec.shared_pod}")
    return decide_isolator_injection(pod)


def _queue_allocated(cluster: ProofCluster, spec: LabSpec) -> float | None:
    queue = cluster.read_queue(spec.queue)
    allocated = queue_allocated_gpus(queue) if queue else None
    if allocated is not None:
        return allocated
    # KAI also logs each queue's division; read it when the Queue status carries no allocation.
    for pod in cluster.list_pods(spec.scheduler_namespace):
        name = str(pod["metadata"]["name"])
        if name.startswith("kai-scheduler-default"):
            logged = parse_queue_division_log(cluster.pod_logs(spec.scheduler_namespace, name), spec.queue)
            if logged is not None:
                return logged
    return None


def _boundary(cluster: ProofCluster, spec: LabSpec) -> ProofResult:
    shared = cluster.read_pod(spec.namespace, spec.shared_pod)
    logs = []
    for pod in cluster.list_pods(spec.reservation_namespace):
        for container in (pod.get("spec") or {}).get("containers") or []:
            logs.append(cluster.pod_logs(spec.reservation_namespace, str(pod["metadata"]["name"]), container["name"]))
    events = cluster.events_for(spec.namespace, spec.shared_pod)
    return decide_reservation_boundary(_phase(shared) if shared else None, "\n".join(logs), events)


# ---------------------------------------------------------------- shared helpers


def default_container(pod: Mapping[str, Any]) -> str | None:
    """The container `kubectl exec` would pick: the annotated default, else the first."""
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
    if annotated:
        return str(annotated)
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0]["name"]) if containers else None


def _phase(pod: Mapping[str, Any] | None) -> str | None:
    return str((pod.get("status") or {}).get("phase")) if pod else None


def _guarded(check: str, decide: Callable[[], ProofResult]) -> ProofResult:
    """Evidence that cannot be gathered fails its check with the reason, instead of hiding the others."""
    try:
        return decide()
    except Exception as error:  # any API or exec failure is that check's failure
        return ProofResult(check, False, f"could not gather the evidence: {error}")


def _wait_for(clock: Clock, deadline: float, probe: Callable[[], Any]) -> Any:
    while True:
        found = probe()
        if found is not None or clock.now() >= deadline:
            return found
        clock.sleep(POLL_SECONDS)


def _retry(clock: Clock, seconds: float, attempt: Callable[[], ProofResult]) -> ProofResult:
    deadline = clock.now() + seconds
    while True:
        result = attempt()
        if result.passed or clock.now() >= deadline:
            return result
        clock.sleep(POLL_SECONDS)


def raise_on_failure(kind: str, results: Sequence[ProofResult]) -> None:
    failed = failures(results)
    if failed:
        named = "; ".join(f"{r.check}: {r.detail}" for r in failed)
        raise ProofFailed(f"{kind} failed {len(failed)} of {len(results)} checks: {named}\n{format_proof(results)}")


class ProofFailed(ReportedFailure):
    """A proof check failed: the caps are not shown to be enforced."""


# ---------------------------------------------------------------- kubernetes client


class KubernetesProofCluster:
    """ProofCluster over the official kubernetes client."""

    def __init__(self, client: Any) -> None:
        from kubernetes import client as k8s

        self.client = client
        self.core = k8s.CoreV1Api(client)
        self.custom = k8s.CustomObjectsApi(client)

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._or_none(lambda: raw_json(self.core.read_namespaced_pod(name, namespace, _preload_content=False)))

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]:
        pods = self.core.list_namespaced_pod(
            namespace, label_selector=label_selector, field_selector=field_selector, _preload_content=False
        )
        return list(raw_json(pods)["items"])

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str:
        from kubernetes.stream import stream

        kwargs: dict[str, Any] = {"command": command, "stderr": True, "stdin": False, "stdout": True, "tty": False}
        if container:
            kwargs["container"] = container
        return str(stream(self.core.connect_get_namespaced_pod_exec, pod, namespace, **kwargs))

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> None:
        self.core.create_namespaced_pod(namespace, manifest)

    def delete_pod(self, namespace: str, name: str) -> None:
        from kubernetes.client import ApiException

        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as error:
            if error.status != 404:
                raise
            return
        while self.read_pod(namespace, name) is not None:  # the guide's pod name is reused on every run
            time.sleep(1)

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str:
        from kubernetes.client import ApiException

        try:
            return str(self.core.read_namespaced_pod_log(name, namespace, container=container))
        except ApiException:
            return ""

    def read_node(self, name: str) -> dict[str, Any] | None:
        return self._or_none(lambda: raw_json(self.core.read_node(name, _preload_content=False)))

    def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]:
        return list(raw_json(self.core.list_node(label_selector=label_selector, _preload_content=False))["items"])

    def read_queue(self, name: str) -> dict[str, Any] | None:
        return self._or_none(
            lambda: dict(self.custom.get_cluster_custom_object("scheduling.run.ai", "v2", "queues", name))
        )

    def events_for(self, namespace: str, name: str) -> list[str]:
        events = self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}", _preload_content=False
        )
        return [f"{e.get('reason')}: {e.get('message')}" for e in raw_json(events)["items"]]

    @staticmethod
    def _or_none(read: Callable[[], Any]) -> Any:
        from kubernetes.client import ApiException

        try:
            return read()
        except ApiException as error:
            if error.status == 404:
                return None
            raise


# ---------------------------------------------------------------- dynamic providers and resources

# Inputs that do not change what is proved; everything else re-runs the proof when it changes.
_UNPROVED_KEYS = ACCESS_KEYS | {"results", "report"}


class _ProofProvider(ResourceProvider):
    kind = "proof"

    def prove(self, props: Mapping[str, Any]) -> list[ProofResult]:
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        results = self.prove(props)
        raise_on_failure(self.kind, results)
        return {**props, "results": [r.to_dict() for r in results], "report": format_proof(results)}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=uuid.uuid4().hex, outs=self._run(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._run(news))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = sorted(k for k in set(olds) | set(news) if k not in _UNPROVED_KEYS and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)


class SmokeProofProvider(_ProofProvider):
    kind = "SmokeProof"

    def prove(self, props: Mapping[str, Any]) -> list[ProofResult]:
        cluster = KubernetesProofCluster(api_client(props.get("kubeconfig"), props.get("context")))
        return prove_smoke(cluster, smoke_spec(props))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        # The deviceQuery pod is removed after each run; this only clears one an interrupted run left.
        try:
            cluster = KubernetesProofCluster(api_client(props.get("kubeconfig"), props.get("context")))
            cluster.delete_pod(str(props.get("namespace") or "default"), DEVICE_QUERY_POD)
        except Exception as error:  # an unreachable cluster must not block destroy
            pulumi.log.warn(f"SmokeProof: could not check for a leftover {DEVICE_QUERY_POD} pod: {error}")


class LabProofProvider(_ProofProvider):
    kind = "LabProof"

    def prove(self, props: Mapping[str, Any]) -> list[ProofResult]:
        cluster = KubernetesProofCluster(api_client(props.get("kubeconfig"), props.get("context")))
        return prove_lab(cluster, lab_spec(props))


class GpusAllocatableProvider(_ProofProvider):
    kind = "GpusAllocatable"

    def prove(self, props: Mapping[str, Any]) -> list[ProofResult]:
        cluster = KubernetesProofCluster(api_client(props.get("kubeconfig"), props.get("context")))
        nodes = [str(node) for node in props.get("nodes") or []]
        return wait_for_allocatable(cluster, int(props["gpu_count"]), nodes, float(props["timeout_seconds"]))


def _proof_props(kubeconfig: pulumi.Input[str] | None, context: str | None, **props: Any) -> dict[str, Any]:
    """A proof's inputs (see cluster_props); its outputs start empty."""
    return cluster_props(kubeconfig, context, **props, results=None, report=None)


class SmokeProof(Resource, module="kai-gpu-fractions", name="SmokeProof"):
    """Proves the a100 smoke pods' caps are enforced; fails the update naming each failed check.

    Needs a real GPU cluster: it execs into the smoke pods and the mpsd pod, and runs deviceQuery.
    """

    results: pulumi.Output[list[dict[str, Any]]]
    report: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: pulumi.Input[str] | None,
        context: str | None,
        pods: pulumi.Input[Sequence[pulumi.Input[str]]],
        gpu_memory_mib: int,
        gpu_fraction: float,
        namespace: str = "default",
        queue: str = "default-queue",
        agents_namespace: str = "gpu-fractioning",
        sm_count: int | None = None,
        measure_sm_share: bool = True,
        device_query_image: str = DEVICE_QUERY_IMAGE,
        timeout_seconds: int = 600,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = _proof_props(
            kubeconfig,
            context,
            pods=pods,
            gpu_memory_mib=gpu_memory_mib,
            gpu_fraction=gpu_fraction,
            namespace=namespace,
            queue=queue,
            agents_namespace=agents_namespace,
            sm_count=sm_count,
            measure_sm_share=measure_sm_share,
            device_query_image=device_query_image,
            timeout_seconds=timeout_seconds,
            triggers=triggers,
        )
        super().__init__(SmokeProofProvider(), name, props, with_secret_kubeconfig(opts))


class LabProof(Resource, module="kai-gpu-fractions", name="LabProof"):
    """Proves what the laptop lab can show on fake GPUs, and reports the reservation-pod boundary as expected."""

    results: pulumi.Output[list[dict[str, Any]]]
    report: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: pulumi.Input[str] | None,
        context: str | None,
        gpu_count: int,
        gpu_memory_mib: int,
        shared_memory_mib: int,
        nodes: pulumi.Input[Sequence[pulumi.Input[str]]] | None = None,
        namespace: str = "default",
        queue: str = "default-queue",
        shared_pod: str = "gpu-sharing-with-isolation",
        timeout_seconds: int = 300,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = _proof_props(
            kubeconfig,
            context,
            gpu_count=gpu_count,
            gpu_memory_mib=gpu_memory_mib,
            shared_memory_mib=shared_memory_mib,
            nodes=nodes,
            namespace=namespace,
            queue=queue,
            shared_pod=shared_pod,
            timeout_seconds=timeout_seconds,
            triggers=triggers,
        )
        super().__init__(LabProofProvider(), name, props, with_secret_kubeconfig(opts))


class GpusAllocatable(Resource, module="kai-gpu-fractions", name="GpusAllocatable"):
    """Waits until every lab GPU node advertises the profile's count of `nvidia.com/gpu`; fails the
    update, naming the nodes, when the device plugin does not get there in time."""

    results: pulumi.Output[list[dict[str, Any]]]
    report: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        kubeconfig: pulumi.Input[str] | None,
        context: str | None,
        gpu_count: int,
        nodes: pulumi.Input[Sequence[pulumi.Input[str]]],
        timeout_seconds: int = 300,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = _proof_props(
            kubeconfig,
            context,
            gpu_count=gpu_count,
            nodes=nodes,
            timeout_seconds=timeout_seconds,
        )
        super().__init__(GpusAllocatableProvider(), name, props, with_secret_kubeconfig(opts))
