"""The gate after the GPU Operator: ClusterPolicy ready, the `nvidia` RuntimeClass, every GPU node
labelled by GFD (gpu.present, gpu.memory, a driver of at least the pinned branch) and advertising its
GPUs, every rolling operand DaemonSet rolled out, and no GPU node left in a driver upgrade (the
ClusterPolicy turns ready before the upgrade controller validates and uncordons the last node).
The ClusterPolicy's status has no observedGeneration: right after a chart upgrade it can still read
`ready` while the operands roll (day2-upstream.md 3), so the gate reads the DaemonSets' own rollout.
`check_gpu_operator` reads the cluster; each `decide_*` decides from plain JSON."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from components.cluster.facts import is_gpu_node, node_facts
from components.cluster.objects import Json, asks_for_gpus, conditions, is_fractional, labels_of, name, qualified
from components.cluster.protocol import Cluster
from components.cluster.results import CheckResult, guarded
from components.gates.daemonsets import rollout_gap
from components.gates.spec import GateSpec
from components.vocabulary.nvidia import (
    CLUSTER_POLICY_GROUP,
    CLUSTER_POLICY_PLURAL,
    CLUSTER_POLICY_READY,
    CLUSTER_POLICY_VERSION,
    DRIVER_FULL_LABEL,
    GPU_MEMORY_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    UPGRADE_DONE,
    UPGRADE_STATE_LABEL,
)

# GFD's driver-version label, and the deprecated name it still writes next to it.
DRIVER_MAJOR_LABELS = ("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver.major")


def decide_cluster_policy(policies: Sequence[Json], namespace: str) -> CheckResult:
    check = "cluster-policy"
    look = f"kubectl get clusterpolicy; kubectl -n {namespace} get pods"
    if not policies:
        return CheckResult(check, False, f"no ClusterPolicy yet: the chart creates cluster-policy ({look})")
    policy = min(policies, key=lambda p: str(p["metadata"].get("creationTimestamp", "")))
    state = (policy.get("status") or {}).get("state")
    if state == CLUSTER_POLICY_READY:
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
    labels = labels_of(node)
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
        f"{name(n)} ({labels_of(n).get(DRIVER_FULL_LABEL) or 'driver ' + _driver_major(n)}, "
        f"{(n.get('status') or {}).get('allocatable', {}).get(GPU_RESOURCE)} GPUs)"
        for n in gpu_nodes
    )
    return CheckResult(check, True, summary)


def decide_operands(daemonsets: Sequence[Json], namespace: str) -> CheckResult:
    """Every DaemonSet of the namespace that rolls by itself rolled out. The driver's is OnDelete: a
    new driver reaches a node only through the driver rollout (components/rollout)."""
    check = "operands"
    rolling = sorted(
        (d for d in daemonsets if ((d.get("spec") or {}).get("updateStrategy") or {}).get("type") != "OnDelete"),
        key=name,
    )
    gaps = [f"{name(d)}: {gap}" for d in rolling if (gap := rollout_gap(d))]
    if gaps:
        look = f"kubectl -n {namespace} get daemonsets; kubectl -n {namespace} rollout status daemonset/<name>"
        return CheckResult(check, False, f"{'; '.join(gaps)} ({look})")
    return CheckResult(check, True, f"{len(rolling)} operand DaemonSets rolled out")


def upgrading(nodes: Sequence[Json]) -> list[Json]:
    """The GPU nodes in the GPU Operator's driver upgrade state machine, by name."""
    return sorted((n for n in nodes if labels_of(n).get(UPGRADE_STATE_LABEL, "") not in ("", UPGRADE_DONE)), key=name)


def upgrade_blockers(pods: Sequence[Json]) -> list[str]:
    """Why a node's upgrade cannot go on, from its running pods: the upgrade controller deletes only GPU
    pods, and not one without an owner while gpuPodDeletion.force is false (KAI's reservation pods); it
    drains no fractional pod, which holds the driver it would unload (day2-upstream.md 1.4, 1.1)."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") in ("Running", "Pending")]
    ownerless = [qualified(p) for p in running if asks_for_gpus(p) and not p["metadata"].get("ownerReferences")]
    fractional = [qualified(p) for p in running if is_fractional(p)]
    found = [f"GPU pods with no owner, which it does not delete: {', '.join(ownerless)}"] if ownerless else []
    return found + ([f"fractional pods, which it does not drain: {', '.join(fractional)}"] if fractional else [])


def decide_driver_upgrade(
    nodes: Sequence[Json], pods_by_node: Mapping[str, Sequence[Json]], namespace: str
) -> CheckResult:
    check = "driver-upgrade"
    stuck = upgrading(nodes)
    if not stuck:
        return CheckResult(check, True, "no GPU node is in a driver upgrade")
    described = []
    for node in stuck:
        state = labels_of(node)[UPGRADE_STATE_LABEL]
        cordoned = ", cordoned" if (node.get("spec") or {}).get("unschedulable") else ""
        blockers = upgrade_blockers(pods_by_node.get(name(node), []))
        described.append(f"{name(node)}: {state}{cordoned}" + "".join(f"; {b}" for b in blockers))
    look = f"kubectl get nodes -L {UPGRADE_STATE_LABEL}; kubectl -n {namespace} logs deploy/gpu-operator"
    return CheckResult(check, False, f"{' | '.join(described)} ({look})")


def _driver_major(node: Json) -> str:
    labels = labels_of(node)
    return next((labels[k] for k in DRIVER_MAJOR_LABELS if k in labels), "?")


def gpu_nodes(cluster: Cluster) -> list[Json]:
    return [n for n in cluster.list_nodes() if is_gpu_node(node_facts(n))]


def check_gpu_operator(cluster: Cluster, spec: GateSpec) -> list[CheckResult]:
    # One read of the nodes a round for the two checks that need them; a failed read is not kept, so
    # each check still reports its own.
    read_gpu_nodes = functools.cache(lambda: gpu_nodes(cluster))
    return [
        guarded(
            "cluster-policy",
            lambda: decide_cluster_policy(
                cluster.list_cluster_objects(CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL),
                spec.namespace,
            ),
        ),
        guarded(
            "runtime-class",
            lambda: decide_runtime_class(cluster.list_runtime_classes(), spec.runtime_class, spec.namespace),
        ),
        guarded(
            "gpu-nodes",
            lambda: decide_gpu_nodes(read_gpu_nodes(), spec.minimum_driver_major, spec.namespace),
        ),
        guarded("operands", lambda: decide_operands(cluster.list_daemonsets(spec.namespace), spec.namespace)),
        guarded("driver-upgrade", lambda: check_driver_upgrade(cluster, read_gpu_nodes(), spec.namespace)),
    ]


def check_driver_upgrade(cluster: Cluster, nodes: Sequence[Json], namespace: str) -> CheckResult:
    stuck = upgrading(nodes)
    pods = {name(n): cluster.list_all_pods(f"spec.nodeName={name(n)}") for n in stuck}
    return decide_driver_upgrade(stuck, pods, namespace)
