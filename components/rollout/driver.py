"""A new driver, node by node: which GPU nodes still run the old one, what a node must shed before its
driver pod is deleted, what it must show again before it is uncordoned, and what a failed reinstall
looks like. Pure decisions on plain JSON; components/rollout/run.py reads the cluster and acts.

Why the program drives it, not the GPU Operator's upgrade controller (off: gpu_cluster/gpu_operator.py),
from ../shared/reference/day2-upstream.md: the controller labels every out-of-date node at once, and
gpu-fractioning's daemons leave every labelled node (1.2, 5.2); its pod deletion selects only pods that
ask for nvidia.com/gpu*, so fractional pods stay and hold the driver, and it fails on KAI's ownerless
reservation pods (1.4). The driver DaemonSet is OnDelete (1.1): a node takes the new driver only when
its driver pod is deleted, which is what this rollout does, once the node is cordoned and drained.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from components.cluster.objects import (
    Json,
    asks_for_gpus,
    is_fractional,
    labels_of,
    name,
    pod_ready,
    qualified,
    template_seen,
)
from components.proofs.smoke_decisions import SmokeSpec
from components.vocabulary.fractioning import NODE_READY_CONDITION
from components.vocabulary.kai import RESERVATION_NAMESPACE
from components.vocabulary.nvidia import DRIVER_FULL_LABEL

J = TypeVar("J", bound=Json)

# On a node this rollout has cordoned: the driver revision it takes the node to, and whether the node
# was unschedulable before (then it stays so). A rerun finishes such a node first.
ROLLOUT_ANNOTATION = "kai-gpu-fractions/driver-rollout"
WAS_UNSCHEDULABLE_ANNOTATION = "kai-gpu-fractions/unschedulable-before-rollout"
# While its driver is replaced a node carries this NoExecute taint: every pod that does not tolerate it
# leaves the node (fractional pods, KAI's reservation pods, gpu-fractioning's mpsd and fractiond, which
# hold the driver too), and nothing else; the GPU Operator's operands tolerate it (gpu_operator.py).
ROLLOUT_TAINT = {"key": ROLLOUT_ANNOTATION, "effect": "NoExecute"}
REVISION_LABEL = "controller-revision-hash"
# A container waiting for one of these does not come right by waiting.
FAILED_WAITING = frozenset(
    {"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "RunContainerError"}
)


@dataclass(frozen=True)
class RolloutSpec:
    """What a driver rollout takes to the nodes, and how (config: gpuOperator.rollout)."""

    namespace: str
    driver_version: str
    agents_namespace: str
    max_nodes_at_once: int
    drain_grace_seconds: int
    node_timeout_seconds: int
    # The SM-share proof each node must pass once uncordoned, before the next is taken; None: none.
    proof: SmokeSpec | None = None


def latest_revision(daemonset: Json, revisions: Sequence[Json]) -> str | None:
    """The revision hash of the DaemonSet's newest ControllerRevision: the one a pod must carry."""
    uid = daemonset["metadata"].get("uid")
    owned = [r for r in revisions if any(o.get("uid") == uid for o in r["metadata"].get("ownerReferences") or [])]
    if not owned:
        return None
    return labels_of(max(owned, key=lambda r: int(r.get("revision", 0)))).get(REVISION_LABEL)


def carries_version(daemonset: Json, version: str) -> bool:
    """Whether the operator has rendered the driver DaemonSet for `version` (its driver image's tag is
    `<version>-<os>`) and the DaemonSet controller has seen that template."""
    spec = (daemonset.get("spec") or {}).get("template", {}).get("spec") or {}
    tags = [str(c.get("image", "")).rsplit(":", 1)[-1] for c in spec.get("containers") or []]
    return any(tag == version or tag.startswith(f"{version}-") for tag in tags) and template_seen(daemonset)


def node_of(pod: Json) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def live(pods: Sequence[J]) -> list[J]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def nodes_to_roll(gpu_nodes: Sequence[Json], driver_pods: Sequence[Json], revision: str) -> tuple[list[str], list[str]]:
    """(the nodes to take to `revision`, in order; the nodes already on it). A node this rollout left
    cordoned comes first, then every node whose driver pod is older, by name. A node with no driver
    pod gets one of the new revision from the DaemonSet: there is nothing to unload."""
    drivers = {node_of(p): p for p in live(driver_pods)}
    started = sorted(name(n) for n in gpu_nodes if ROLLOUT_ANNOTATION in (n["metadata"].get("annotations") or {}))
    old = sorted(
        name(n)
        for n in gpu_nodes
        if name(n) not in started and name(n) in drivers and labels_of(drivers[name(n)]).get(REVISION_LABEL) != revision
    )
    done = sorted(name(n) for n in gpu_nodes if name(n) not in started and name(n) not in old)
    return started + old, done


def in_groups(names: Sequence[str], size: int) -> list[list[str]]:
    return [list(names[i : i + size]) for i in range(0, len(names), size)]


def cordon_patch(node: Json, revision: str) -> dict[str, Any]:
    was = bool((node.get("spec") or {}).get("unschedulable"))
    annotations = node["metadata"].get("annotations") or {}
    if ROLLOUT_ANNOTATION in annotations:  # a rerun: what it found before the first cordon stands
        was = annotations.get(WAS_UNSCHEDULABLE_ANNOTATION) == "true"
    return {
        "metadata": {"annotations": {ROLLOUT_ANNOTATION: revision, WAS_UNSCHEDULABLE_ANNOTATION: str(was).lower()}},
        "spec": {"unschedulable": True},
    }


def uncordon_patch(node: Json) -> dict[str, Any]:
    was = (node["metadata"].get("annotations") or {}).get(WAS_UNSCHEDULABLE_ANNOTATION) == "true"
    return {
        "metadata": {"annotations": {ROLLOUT_ANNOTATION: None, WAS_UNSCHEDULABLE_ANNOTATION: None}},
        "spec": {"unschedulable": True if was else None},
    }


def _taints(node: Json) -> list[Any]:
    return [
        t
        for t in (node.get("spec") or {}).get("taints") or []
        if (t.get("key"), t.get("effect")) != (ROLLOUT_TAINT["key"], ROLLOUT_TAINT["effect"])
    ]


def _taints_patch(node: Json, taints: list[Json]) -> dict[str, Any]:
    """A patch replaces the taint list whole: it names the version it was read at, so a taint another
    controller added in between is never lost (the API server refuses it with a conflict instead)."""
    return {"metadata": {"resourceVersion": node["metadata"].get("resourceVersion")}, "spec": {"taints": taints}}


def taint_patch(node: Json, revision: str) -> dict[str, Any]:
    """The node's taints with the rollout's added."""
    return _taints_patch(node, [*_taints(node), {**ROLLOUT_TAINT, "value": revision}])


def untaint_patch(node: Json) -> dict[str, Any]:
    return _taints_patch(node, _taints(node))


def running(pods: Sequence[Json]) -> list[Json]:
    return [p for p in live(pods) if (p.get("status") or {}).get("phase") in ("Running", "Pending")]


def fractional_jobs(pods: Sequence[Json]) -> list[Json]:
    return [p for p in running(pods) if is_fractional(p)]


def drain_targets(pods: Sequence[Json]) -> list[Json]:
    """What a node sheds before its driver is unloaded: its fractional pods and KAI's reservation pods
    (bare pods the driver-manager cannot evict; KAI would delete them anyway once their fractional
    pods are gone, day2-upstream.md 4.1)."""
    return [p for p in running(pods) if is_fractional(p) or p["metadata"].get("namespace") == RESERVATION_NAMESPACE]


def gpu_users(pods: Sequence[Json], operator_namespace: str) -> list[str]:
    """The pods on a node that may still hold the driver: anything running with a RuntimeClass or asking
    for a GPU, beyond the GPU Operator's own operands and KAI's reservation pods."""
    return [
        qualified(p)
        for p in running(pods)
        if p["metadata"].get("namespace") not in (operator_namespace, RESERVATION_NAMESPACE)
        and ((p.get("spec") or {}).get("runtimeClassName") or asks_for_gpus(p))
    ]


def driver_trouble(pod: Json) -> str | None:
    """How a driver pod shows a reinstall that failed: a container waiting in a back-off state."""
    status = pod.get("status") or {}
    for kind, prefix in (("initContainerStatuses", "Init:"), ("containerStatuses", "")):
        for container in status.get(kind) or []:
            reason = ((container.get("state") or {}).get("waiting") or {}).get("reason")
            if reason in FAILED_WAITING:
                restarts = int(container.get("restartCount", 0))
                return f"{prefix}{reason} ({container.get('name')}, {restarts} restart{'' if restarts == 1 else 's'})"
    return None


def node_condition(node: Json, kind: str) -> str | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def driver_missing(
    node: Json, driver: Json | None, revision: str, version: str, validators: Sequence[Json] | None
) -> list[str]:
    """What a node must show before its taint goes: the new driver pod Ready, GPU Feature Discovery
    reporting the new driver, and the validator Ready (`validators` is None without a validator
    DaemonSet)."""
    missing = []
    if driver is None or labels_of(driver).get(REVISION_LABEL) != revision or not pod_ready(driver):
        missing.append("the new driver pod Ready")
    reported = labels_of(node).get(DRIVER_FULL_LABEL)
    if reported != version:
        missing.append(f"GPU Feature Discovery reporting driver {version} (it reports {reported or 'none'})")
    if validators is not None and not any(pod_ready(p) for p in validators):
        missing.append("the operator validator Ready")
    return missing


def agents_missing(node: Json, agents: Mapping[str, Sequence[Json]]) -> list[str]:
    """What a node must show, once its taint is gone, before it is uncordoned: where gpu-fractioning
    runs (`agents` maps each node agent to its pods on the node), mpsd and fractiond Ready and the
    node's Ready condition."""
    missing = [f"{agent} Ready" for agent, pods in agents.items() if not any(pod_ready(p) for p in pods)]
    if agents and node_condition(node, NODE_READY_CONDITION) != "True":
        missing.append(f"{NODE_READY_CONDITION}=True")
    return missing
