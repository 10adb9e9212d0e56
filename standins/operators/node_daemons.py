"""STAND-INS for what GPU daemons do to their node once their pod runs there:

- GPU Feature Discovery (with nfd-master publishing its labels): the `nvidia.com/gpu.*` and
  `nvidia.com/cuda.*` labels, from the node's stand-in hardware and the driver version;
- a kubelet's device manager: `nvidia.com/gpu` capacity and allocatable while a device plugin pod
  (the GPU Operator's or the lab's mock one) runs on the node, 0 allocatable after it stops;
- nvml-mock's setup and cleanup scripts: `nvidia.com/gpu.present=true` while its pod runs.
"""

from __future__ import annotations

import time
from typing import Any

from standins.operators.cluster import Cluster, FirstSeen, Json, name_of, path, pod_ready, pods_by_node
from standins.operators.hardware import (
    DRIVER_VERSION_ANNOTATION,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    LOADED_DRIVER_ANNOTATION,
    gpu_count,
    hardware,
    labels,
    mig_capable,
)
from standins.operators.knobs import Knobs

NODES = path("v1", "nodes")
PODS = path("v1", "pods")
DEVICE_PLUGIN_SELECTORS = ("app=nvidia-device-plugin-daemonset", "name=nvidia-device-plugin-mock")
NVML_MOCK_SELECTOR = "app.kubernetes.io/name=nvml-mock"
# Marks a gpu.present label nvml-mock set, which its cleanup removes again.
NVML_MOCK_MARK = "stand-in.kai-gpu-fractions/labelled-by-nvml-mock"


def running_on(cluster: Cluster, selector: str) -> dict[str, list[Json]]:
    return pods_by_node(p for p in cluster.list(PODS, selector) if pod_ready(p))


def gfd_labels(node: Json, driver_version: str, mig_strategy: str) -> dict[str, str]:
    """GFD's labels for the node's GPUs (GFD v0.20 formats; all values are strings)."""
    major, minor, revision = (driver_version.split(".") + ["", ""])[:3]
    found = {
        "nvidia.com/gpu.product": hardware(node, "gpu-product") or "",
        "nvidia.com/gpu.count": str(gpu_count(node)),
        "nvidia.com/gpu.memory": hardware(node, "gpu-memory-mib") or "",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": revision,
        "nvidia.com/cuda.driver-version.full": driver_version,
        "nvidia.com/cuda.driver.major": major,
        "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": revision,
        "nvidia.com/mig.capable": str(mig_capable(node)).lower(),
        "nvidia.com/mig.strategy": mig_strategy,
        "nvidia.com/mps.capable": "false",
    }
    return {k: v for k, v in found.items() if v}


class FeatureDiscovery:
    def step(self, cluster: Cluster, _knobs: Knobs, _now: float) -> None:
        pods = running_on(cluster, "app=gpu-feature-discovery")
        if not pods:
            return
        policies = cluster.list(path("nvidia.com/v1", "clusterpolicies"))
        mig = (
            str(((policies[0].get("spec") or {}).get("mig") or {}).get("strategy") or "single")
            if policies
            else "single"
        )
        for node in cluster.list(NODES):
            on_node = pods.get(name_of(node))
            if not on_node:
                continue
            annotations = on_node[0]["metadata"].get("annotations") or {}
            loaded = (node["metadata"].get("annotations") or {}).get(LOADED_DRIVER_ANNOTATION)
            driver = loaded or annotations.get(DRIVER_VERSION_ANNOTATION) or hardware(node, "host-driver-version") or ""
            wanted = gfd_labels(node, driver, mig)
            if any(labels(node).get(k) != v for k, v in wanted.items()):
                wanted["nvidia.com/gfd.timestamp"] = str(int(time.time()))
                cluster.patch(path("v1", "nodes", name=name_of(node)), {"metadata": {"labels": wanted}})


class DevicePlugins:
    def step(self, cluster: Cluster, _knobs: Knobs, _now: float) -> None:
        plugins: dict[str, list[Json]] = {}
        for selector in DEVICE_PLUGIN_SELECTORS:
            for node_name, pods in running_on(cluster, selector).items():
                plugins.setdefault(node_name, []).extend(pods)
        for node in cluster.list(NODES):
            status: dict[str, Any] = node.get("status") or {}
            advertised = (status.get("allocatable") or {}).get(GPU_RESOURCE)
            if plugins.get(name_of(node)) and gpu_count(node):
                count = str(gpu_count(node))
                if advertised != count:
                    resources = {GPU_RESOURCE: count}
                    patch = {"status": {"capacity": resources, "allocatable": resources}}
                    cluster.patch(path("v1", "nodes", name=name_of(node)) + "/status", patch)
            elif advertised not in (None, "0"):
                # The kubelet keeps the capacity of a plugin that stopped but allocates none of it.
                cluster.patch(
                    path("v1", "nodes", name=name_of(node)) + "/status",
                    {"status": {"allocatable": {GPU_RESOURCE: "0"}}},
                )


class NvmlMock:
    def __init__(self) -> None:
        self.first_seen = FirstSeen()

    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None:
        delay = knobs.delay("nvml-mock")
        pods = running_on(cluster, NVML_MOCK_SELECTOR)
        for node in cluster.list(NODES):
            node_path = path("v1", "nodes", name=name_of(node))
            annotations = node["metadata"].get("annotations") or {}
            on_node = pods.get(name_of(node))
            if on_node and delay is not None and self.first_seen.reached(on_node[0], now, delay):
                if labels(node).get(GPU_PRESENT_LABEL) != "true":
                    patch = {
                        "metadata": {"labels": {GPU_PRESENT_LABEL: "true"}, "annotations": {NVML_MOCK_MARK: "true"}}
                    }
                    cluster.patch(node_path, patch)
            elif not on_node and annotations.get(NVML_MOCK_MARK):
                cluster.patch(
                    node_path,
                    {"metadata": {"labels": {GPU_PRESENT_LABEL: None}, "annotations": {NVML_MOCK_MARK: None}}},
                )
