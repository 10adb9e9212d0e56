"""STAND-IN for what a new driver pod does on its node: the GPU Operator's k8s-driver-manager init
container (v0.12.0) and the driver container, with the kernel's module state kept in a node
annotation. kwok runs every pod as Running and Ready at once; this stand-in overwrites a driver
pod's status while its init container works or fails, as a kubelet would report it.

What it replays (../shared/reference/day2-upstream.md sections 1.6 and 2.2, `DM` = driver-manager
v0.12.0 cmd/driver-manager/main.go):
- no module loaded (a new node): install, nothing to evict;
- the same driver loaded: nothing to unload;
- another driver loaded: pause the `gpu.deploy.client` DaemonSets and the validator and wait for
  their pods to go (DM :358-366, :742-829); evict the pods that ask for nvidia.com/gpu*, all or
  none, and none of them when one has no owner (DM client.go:270-370, force false); unload, which
  fails while a pod using the GPU still runs on the node (DM :901-953): a fractional pod, a GPU
  pod it could not evict, an mpsd that did not stop. On failure it re-enables the operands and
  exits non-zero (DM :451-470), which the kubelet reports as Init:CrashLoopBackOff and retries.
"""

from __future__ import annotations

from standins.operators.cluster import Cluster, Json, deleting, name_of, path, pod_ready, pods_by_node
from standins.operators.hardware import DRIVER_VERSION_ANNOTATION, LOADED_DRIVER_ANNOTATION, labels
from standins.operators.knobs import Knobs
from standins.operators.watching import ALARM

PODS = path("v1", "pods")
DRIVER_SELECTOR = "app=nvidia-driver-daemonset"
DRIVER_MANAGER = "k8s-driver-manager"
PAUSED = "paused-for-driver-upgrade"
# The operand labels the driver-manager pauses that this stand-in cluster runs DaemonSets for.
PAUSED_LABELS = ("nvidia.com/gpu.deploy.client", "nvidia.com/gpu.deploy.operator-validator")
# The kubelet's first restart back-off is 10 s; shorter here, so that a fix is seen soon.
RETRY_SECONDS = 2.0
RESERVATION_NAMESPACE = "kai-resource-reservation"
# The init container's state: working, failed (the kubelet backs off, then runs it again), done.
WORKING: Json = {"state": {"running": {}}}
CRASHED: Json = {
    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
}
DONE: Json = {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}


def uses_gpu(pod: Json, operator_namespace: str) -> bool:
    """Whether a running pod holds the driver: it runs with a RuntimeClass (the NVIDIA runtime's device
    nodes) or asks for a GPU. KAI's reservation pods shut NVML down once they read the GPU's UUID
    (day2-upstream.md 4.1), and the operator's own operands are stopped by the driver-manager."""
    namespace = pod["metadata"].get("namespace")
    if namespace in (operator_namespace, RESERVATION_NAMESPACE) or deleting(pod):
        return False
    if (pod.get("status") or {}).get("phase") not in ("Running", "Pending"):
        return False
    spec = pod.get("spec") or {}
    return bool(spec.get("runtimeClassName")) or asks_for_gpu(pod)


def asks_for_gpu(pod: Json) -> bool:
    return any(
        str(name).startswith(("nvidia.com/gpu", "nvidia.com/mig-"))
        for container in (pod.get("spec") or {}).get("containers") or []
        for kind in ("limits", "requests")
        for name in ((container.get("resources") or {}).get(kind) or {})
    )


def selects_paused(pod: Json) -> bool:
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return any(key in selector for key in PAUSED_LABELS)


def status(pod: Json, phase: str, ready: bool, init: Json, restarts: int) -> Json:
    spec = pod.get("spec") or {}
    condition = "True" if ready else "False"
    containers = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": ready,
            "restartCount": 0,
            "state": {"running": {}} if ready else {"waiting": {"reason": "PodInitializing"}},
        }
        for c in spec.get("containers") or []
    ]
    inits = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": ready,
            "restartCount": restarts,
            **init,
        }
        for c in spec.get("initContainers") or []
    ]
    return {
        "status": {
            "phase": phase,
            "conditions": [{"type": kind, "status": condition} for kind in ("Initialized", "Ready", "ContainersReady")],
            "initContainerStatuses": inits,
            "containerStatuses": containers,
        }
    }


def restarts_of(pod: Json) -> int:
    return max(
        (int(s.get("restartCount", 0)) for s in (pod.get("status") or {}).get("initContainerStatuses") or []), default=0
    )


class DriverManager:
    def __init__(self) -> None:
        self.failed_at: dict[str, float] = {}
        # Driver pods whose node unloaded the old driver, by uid: when the new one's install began.
        self.installing: dict[str, float] = {}

    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None:
        drivers = [p for p in cluster.list(PODS, DRIVER_SELECTOR) if not deleting(p)]
        if not drivers:
            return
        on_nodes = pods_by_node(p for p in cluster.list(PODS) if p["spec"].get("nodeName"))
        for driver in drivers:
            node = cluster.get(path("v1", "nodes", name=driver["spec"].get("nodeName") or "-"))
            if node is not None:
                self._driver_pod(cluster, knobs, driver, node, on_nodes.get(name_of(node), []), now)

    def _driver_pod(
        self, cluster: Cluster, knobs: Knobs, driver: Json, node: Json, on_node: list[Json], now: float
    ) -> None:
        wanted = (driver["metadata"].get("annotations") or {}).get(DRIVER_VERSION_ANNOTATION, "")
        loaded = (node["metadata"].get("annotations") or {}).get(LOADED_DRIVER_ANNOTATION)
        pod_path = path("v1", "pods", driver["metadata"]["namespace"], name_of(driver)) + "/status"
        node_path = path("v1", "nodes", name=name_of(node))
        if loaded == wanted:
            if not pod_ready(driver):
                cluster.patch(pod_path, status(driver, "Running", True, DONE, restarts_of(driver)))
            return
        if loaded is not None and pod_ready(driver):
            # kwok ran it at once; the kubelet would show its init container working.
            cluster.patch(pod_path, status(driver, "Pending", False, WORKING, restarts_of(driver)))
        if loaded is None:
            cluster.patch(node_path, {"metadata": {"annotations": {LOADED_DRIVER_ANNOTATION: wanted}}})
            return
        uid = str(driver["metadata"].get("uid"))
        if uid in self.installing:
            # The old driver is unloaded: the driver container builds and loads the new one.
            done_at = self.installing[uid] + (knobs.delay("driver-install") or 0.0)
            if now < done_at:
                ALARM.at(done_at)
                return
            del self.installing[uid]
            cluster.patch(node_path, {"metadata": {"annotations": {LOADED_DRIVER_ANNOTATION: wanted}}})
            cluster.patch(pod_path, status(driver, "Running", True, DONE, restarts_of(driver)))
            return
        retry_at = self.failed_at.get(name_of(driver), 0.0) + RETRY_SECONDS
        if now < retry_at:
            ALARM.at(retry_at)
            return
        # A reinstall: the operands that select the paused labels must be gone first.
        paused = {key: PAUSED for key in PAUSED_LABELS if key in labels(node)}
        if any(labels(node).get(key) != PAUSED for key in paused):
            cluster.patch(node_path, {"metadata": {"labels": paused}})
        if any(selects_paused(p) for p in on_node):
            return
        self._evict_gpu_pods(cluster, on_node)
        operator_namespace = str(driver["metadata"]["namespace"])
        holders = [p for p in on_node if uses_gpu(p, operator_namespace) and not selects_paused(p)]
        enabled = {key: "true" for key in paused}
        if holders:
            self.failed_at[name_of(driver)] = now
            cluster.patch(pod_path, status(driver, "Pending", False, CRASHED, restarts_of(driver) + 1))
            cluster.patch(node_path, {"metadata": {"labels": enabled}})
            return
        # The driver-manager re-enables the operands once it has unloaded (DM :485-521).
        cluster.patch(node_path, {"metadata": {"labels": enabled}})
        self.installing[uid] = now
        ALARM.ring()

    @staticmethod
    def _evict_gpu_pods(cluster: Cluster, on_node: list[Json]) -> None:
        """All or none: a GPU pod with no owner cannot be evicted without force, and then none is."""
        gpu_pods = [p for p in on_node if asks_for_gpu(p) and not deleting(p)]
        if any(not p["metadata"].get("ownerReferences") for p in gpu_pods):
            return
        for pod in gpu_pods:
            cluster.delete(path("v1", "pods", pod["metadata"]["namespace"], name_of(pod)))
