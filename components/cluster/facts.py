"""What preflight knows of the cluster: node and cluster facts read from the Kubernetes API, and the
host facts a node access found (components/preflight/host_check.py).

The API tells node labels, nodeInfo, allocatable resources, RuntimeClasses, the GPU Operator's
ClusterPolicy and the caller's own rights. The driver, MPS, Fabric Manager and the NRI socket live on
the host; without a node access, HostFacts stays None.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from components.cluster.protocol import Cluster
from components.vocabulary.nvidia import (
    CLUSTER_POLICY_GROUP,
    CLUSTER_POLICY_PLURAL,
    CLUSTER_POLICY_READY,
    CLUSTER_POLICY_VERSION,
    GPU_COUNT_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    NVIDIA_PCI_LABEL,
)

# The GPU Operator labels its ClusterPolicy with its own version.
VERSION_LABEL = "app.kubernetes.io/version"

# The five `kubectl auth can-i create <resource> --all-namespaces` checks of the guide, with API groups.
ADMIN_RESOURCES: dict[str, str] = {
    "customresourcedefinitions": "apiextensions.k8s.io",
    "clusterroles": "rbac.authorization.k8s.io",
    "clusterrolebindings": "rbac.authorization.k8s.io",
    "priorityclasses": "scheduling.k8s.io",
    "namespaces": "",
}


@dataclass(frozen=True)
class HostFacts:
    """What a node access found on one GPU host; None means it could not tell."""

    driver_version: str | None = None
    mps_namespace_commands: frozenset[str] | None = None
    fabricmanager_active: bool | None = None
    nri_socket_present: bool | None = None
    nvswitch: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    container_runtime_version: str = ""
    allocatable: dict[str, str] = field(default_factory=dict)
    host: HostFacts | None = None

    @property
    def gpu_count(self) -> int | None:
        """GPUs the node advertises, else the count GPU Feature Discovery labelled."""
        for raw in (self.allocatable.get(GPU_RESOURCE), self.labels.get(GPU_COUNT_LABEL)):
            if raw is not None and raw.strip().isdigit() and int(raw) > 0:
                return int(raw)
        return None


@dataclass(frozen=True)
class ClusterFacts:
    gpu_nodes: list[NodeFacts]
    runtime_classes: dict[str, str]
    cluster_policy_version: str | None
    can_create: dict[str, bool]
    # The ClusterPolicy's status.state: "ready", "notReady", or None when there is none or it has
    # not been reconciled yet.
    cluster_policy_state: str | None = None

    @property
    def gpu_operator_ready(self) -> bool:
        return self.cluster_policy_state == CLUSTER_POLICY_READY


# ---------------------------------------------------------------- pure parsing of API objects


def node_facts(node: Mapping[str, Any], host: HostFacts | None = None) -> NodeFacts:
    """A Node as the API serialises it (camelCase JSON) to NodeFacts."""
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    return NodeFacts(
        name=str(metadata.get("name", "")),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        container_runtime_version=str((status.get("nodeInfo") or {}).get("containerRuntimeVersion") or ""),
        allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
        host=host,
    )


def is_gpu_node(node: NodeFacts) -> bool:
    """Any sign of an NVIDIA GPU, so a node the GPU Operator has not labelled is still checked."""
    labels = node.labels
    return (
        labels.get(GPU_PRESENT_LABEL) == "true" or labels.get(NVIDIA_PCI_LABEL) == "true" or node.gpu_count is not None
    )


def select_gpu_nodes(nodes: Sequence[NodeFacts]) -> list[NodeFacts]:
    """The nodes with a GPU; all nodes when none shows one, so that the missing label gets reported."""
    return [n for n in nodes if is_gpu_node(n)] or list(nodes)


def runtime_class_handlers(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {str((i.get("metadata") or {}).get("name")): str(i.get("handler", "")) for i in items}


def cluster_policy_version(items: Iterable[Mapping[str, Any]]) -> str | None:
    """The GPU Operator version its ClusterPolicy is labelled with; None when there is none."""
    for item in items:
        version = ((item.get("metadata") or {}).get("labels") or {}).get(VERSION_LABEL)
        if version:
            return str(version)
    return None


def cluster_policy_state(items: Iterable[Mapping[str, Any]]) -> str | None:
    """The state the GPU Operator wrote on its ClusterPolicy; None when there is none or no state yet."""
    first = next(iter(items), None)
    state = ((first or {}).get("status") or {}).get("state")
    return str(state) if state else None


_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")
_SUFFIXES = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
}


def parse_quantity(value: str) -> float:
    """A Kubernetes resource quantity ("1510m", "1Gi", "40960") as a number."""
    match = _QUANTITY.match(value)
    if not match or match.group(2) not in _SUFFIXES:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return float(match.group(1)) * _SUFFIXES[match.group(2)]


def version_tuple(version: str) -> tuple[int, ...]:
    """ "v26.7.1" → (26, 7, 1); "615.71.09" → (615, 71, 9); pre-release suffixes are dropped."""
    core = version.strip().lstrip("vV").split("-", 1)[0].split("+", 1)[0]
    parts = core.split(".")
    if not core or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(p) for p in parts)


# ---------------------------------------------------------------- reading the cluster


# The host facts of the named node, never raising: a node access that fails gives the facts it
# could not read (HostFacts.error).
HostFactsReader = Callable[[str], HostFacts]


# A host check mostly waits (on an SSH round trip, or on a pod that is scheduled, runs and is read),
# so the nodes are checked side by side: a 64-node fleet in one wave, while a larger fleet never has
# more than this many SSH sessions or check pods open at once.
HOST_CHECKS_AT_ONCE = 64


def read_hosts(read_host: HostFactsReader, nodes: Sequence[NodeFacts]) -> list[NodeFacts]:
    """Each node with its host facts, in the order given."""
    if not nodes:
        return []
    with ThreadPoolExecutor(max_workers=min(HOST_CHECKS_AT_ONCE, len(nodes))) as pool:
        hosts = list(pool.map(read_host, [node.name for node in nodes]))
    return [replace(node, host=host) for node, host in zip(nodes, hosts, strict=True)]


def collect_cluster_facts(cluster: Cluster, read_host: HostFactsReader | None = None) -> ClusterFacts:
    nodes = select_gpu_nodes([node_facts(n) for n in cluster.list_nodes()])
    if read_host is not None:
        nodes = read_hosts(read_host, nodes)
    policies = cluster.list_cluster_objects(CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL)
    return ClusterFacts(
        gpu_nodes=nodes,
        runtime_classes=runtime_class_handlers(cluster.list_runtime_classes()),
        cluster_policy_version=cluster_policy_version(policies),
        cluster_policy_state=cluster_policy_state(policies),
        can_create={resource: cluster.can_create(group, resource) for resource, group in ADMIN_RESOURCES.items()},
    )
