"""STAND-IN for the NVIDIA GPU Operator's ClusterPolicy controller (v26.7), for the local control plane.

While the chart's `gpu-operator` Deployment exists it reconciles the oldest ClusterPolicy as the
real controller does: the `nvidia` RuntimeClass (and `nvidia-cdi`/`nvidia-legacy` with CDI), owned
by the ClusterPolicy; `nvidia.com/gpu.present` and the `gpu.deploy.*` labels on nodes with NFD's
NVIDIA PCI label; the operand DaemonSets in its namespace. GPU Feature Discovery and the device
plugin start only once the driver is loaded, after the `gpu-operator` delay; their pods' work is
done by feature_discovery.py and device_plugins.py. The status is `notReady` naming the states
whose DaemonSets are not ready, then `ready`.
"""

from __future__ import annotations

from typing import Any

from standins.operators.cluster import (
    Cluster,
    Condition,
    FirstSeen,
    Json,
    apply,
    daemonset_ready,
    deleting,
    ensure,
    merge_conditions,
    name_of,
    owned_by,
    path,
    same_conditions,
)
from standins.operators.hardware import DRIVER_VERSION_ANNOTATION, GPU_PRESENT_LABEL, NFD_PCI_LABEL, labels, mig_capable
from standins.operators.knobs import Knobs

POLICIES = path("nvidia.com/v1", "clusterpolicies")
RUNTIME_CLASSES = path("node.k8s.io/v1", "runtimeclasses")
COMPONENT_LABEL = {"app.kubernetes.io/component": "gpu-operator"}
DEPLOY_LABELS = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
    "client",
)
# The chart's default for every operand (values.yaml daemonsets.tolerations), which the ClusterPolicy's
# spec.daemonsets.tolerations replaces.
DEFAULT_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
DRIVER_MANAGER_IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager"
DRIVER_MANAGER_VERSION = "v0.12.0"
# The ClusterPolicy key that holds each operand's version, by its deploy label.
VERSION_KEYS = {
    "container-toolkit": "toolkit",
    "operator-validator": "validator",
    "device-plugin": "devicePlugin",
    "gpu-feature-discovery": "gfd",
    "dcgm-exporter": "dcgmExporter",
}


def daemonset_updated(daemonset: Json | None) -> bool:
    """Every pod on the DaemonSet's latest revision: how the operator judges an OnDelete DaemonSet
    (day2-upstream.md 1.1, object_controls.go:4016-4061)."""
    status = (daemonset or {}).get("status") or {}
    return int(status.get("updatedNumberScheduled", 0)) == int(status.get("desiredNumberScheduled", -1))


def operands(spec: dict[str, Any], driver_loaded: bool) -> list[tuple[str, str, str]]:
    """(state, DaemonSet, deploy label) of each operand the controller runs now, in its order."""
    found = []
    if (spec.get("driver") or {}).get("enabled", True):
        found.append(("state-driver", "nvidia-driver-daemonset", "driver"))
    found += [
        ("state-container-toolkit", "nvidia-container-toolkit-daemonset", "container-toolkit"),
        ("state-operator-validation", "nvidia-operator-validator", "operator-validator"),
    ]
    # The device plugin and GFD wait in init containers for the validator, which waits for the driver.
    if driver_loaded:
        found += [
            ("state-device-plugin", "nvidia-device-plugin-daemonset", "device-plugin"),
            ("gpu-feature-discovery", "gpu-feature-discovery", "gpu-feature-discovery"),
        ]
    found.append(("state-dcgm-exporter", "nvidia-dcgm-exporter", "dcgm-exporter"))
    return found


class GpuOperator:
    def __init__(self) -> None:
        self.first_seen = FirstSeen()

    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None:
        delay = knobs.delay("gpu-operator")
        operator = cluster.list(path("apps/v1", "deployments"), "app.kubernetes.io/component=gpu-operator")
        policies = sorted(
            (p for p in cluster.list(POLICIES) if not deleting(p)), key=lambda p: p["metadata"]["creationTimestamp"]
        )
        if delay is None or not operator or not policies:
            return
        namespace = str(operator[0]["metadata"]["namespace"])
        policy = policies[0]
        spec = policy.get("spec") or {}
        self._runtime_classes(cluster, policy)
        gpu_nodes = self._label_nodes(cluster)
        if not gpu_nodes:
            self._status(cluster, policy, namespace, Condition("Ready", "True", "NoGPUNodes", NO_GPU_NODES))
            return
        driver_loaded = self.first_seen.reached(policy, now, delay)
        not_ready = []
        for state, name, deploy in operands(spec, driver_loaded):
            daemonset = apply(
                cluster,
                path("apps/v1", "daemonsets", namespace),
                self._daemonset(policy, name, deploy, namespace),
            )
            if not daemonset_ready(daemonset) or not daemonset_updated(daemonset):
                not_ready.append(state)
        if not driver_loaded:
            not_ready += ["state-device-plugin", "gpu-feature-discovery"]
        if not_ready:
            message = f"ClusterPolicy is not ready; states not ready: [{' '.join(not_ready)}]"
            self._status(cluster, policy, namespace, Condition("Error", "True", "OperandNotReady", message))
        else:
            self._status(cluster, policy, namespace, Condition("Ready", "True", "Reconciled", RECONCILED))

    @staticmethod
    def _runtime_classes(cluster: Cluster, policy: Json) -> None:
        spec = policy.get("spec") or {}
        names = [str((spec.get("operator") or {}).get("runtimeClass") or "nvidia")]
        if (spec.get("cdi") or {}).get("enabled"):
            names += ["nvidia-cdi", "nvidia-legacy"]
        for name in names:
            body = {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": name, "labels": COMPONENT_LABEL, "ownerReferences": owned_by(policy)},
                "handler": name,
            }
            ensure(cluster, RUNTIME_CLASSES, body)

    @staticmethod
    def _label_nodes(cluster: Cluster) -> list[Json]:
        gpu_nodes = []
        for node in cluster.list(path("v1", "nodes")):
            current = labels(node)
            if current.get(NFD_PCI_LABEL) != "true":
                continue
            wanted = {GPU_PRESENT_LABEL: "true"}
            wanted |= {
                f"nvidia.com/gpu.deploy.{name}": current.get(f"nvidia.com/gpu.deploy.{name}") or "true"
                for name in DEPLOY_LABELS
            }
            if mig_capable(node):
                wanted["nvidia.com/gpu.deploy.mig-manager"] = "true"
            if any(current.get(k) != v for k, v in wanted.items()):
                cluster.patch(path("v1", "nodes", name=name_of(node)), {"metadata": {"labels": wanted}})
            gpu_nodes.append(node)
        return gpu_nodes

    @staticmethod
    def _daemonset(policy: Json, name: str, deploy: str, namespace: str) -> Json:
        spec = policy.get("spec") or {}
        driver = spec.get("driver") or {}
        selector = {"app": name}
        annotations = {}
        # An operand's version in the ClusterPolicy is its image's tag: a new one rolls its pods.
        tag = (spec.get(VERSION_KEYS.get(deploy, "")) or {}).get("version")
        pod_spec: Json = {
            "nodeSelector": {f"nvidia.com/gpu.deploy.{deploy}": "true"},
            "tolerations": (spec.get("daemonsets") or {}).get("tolerations") or DEFAULT_TOLERATIONS,
            "containers": [{"name": name, "image": f"nvcr.io/nvidia/stand-in/{name}{f':{tag}' if tag else ''}"}],
        }
        strategy: Json = {}
        if name == "gpu-feature-discovery":
            # Empty when the driver is the host's: GFD then reads the host's version.
            annotations[DRIVER_VERSION_ANNOTATION] = str(driver.get("version") or "") if driver.get("enabled") else ""
        if deploy == "driver":
            # A new driver reaches a node only when its driver pod is deleted (day2-upstream.md 1.1).
            version = str(driver.get("version") or "")
            annotations[DRIVER_VERSION_ANNOTATION] = version
            strategy = {"updateStrategy": {"type": "OnDelete"}}
            manager = (driver.get("manager") or {}).get("version") or DRIVER_MANAGER_VERSION
            pod_spec["initContainers"] = [{"name": "k8s-driver-manager", "image": f"{DRIVER_MANAGER_IMAGE}:{manager}"}]
            pod_spec["containers"] = [
                {"name": "nvidia-driver-ctr", "image": f"nvcr.io/nvidia/driver:{version}-ubuntu24.04"}
            ]
        return {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "labels": selector, "ownerReferences": owned_by(policy)},
            "spec": {
                "selector": {"matchLabels": selector},
                "template": {"metadata": {"labels": selector, "annotations": annotations}, "spec": pod_spec},
                **strategy,
            },
        }

    @staticmethod
    def _status(cluster: Cluster, policy: Json, namespace: str, condition: Condition) -> None:
        """Conditions come in pairs: Ready=True with Error=False, or Ready=False with Error=True."""
        if condition.type == "Ready":
            pair = [condition, Condition("Error", "False", "Ready")]
            state = "ready"
        else:
            pair = [Condition("Ready", "False", "Error"), condition]
            state = "notReady"
        status = policy.get("status") or {}
        conditions = merge_conditions(status.get("conditions") or [], pair, None)
        if status.get("state") == state and same_conditions(status.get("conditions") or [], conditions):
            return
        cluster.patch(
            f"{POLICIES}/{name_of(policy)}/status",
            {"status": {"state": state, "namespace": namespace, "conditions": conditions}},
        )


RECONCILED = "ClusterPolicy is ready as all resources have been successfully reconciled"
NO_GPU_NODES = "No GPU node found, watching for new nodes to join the cluster."
