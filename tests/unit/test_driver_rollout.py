"""The driver rollout: its decisions on plain JSON, and its order of work against a fake cluster that
replaces a deleted driver pod as the DaemonSet controller and a driver that loads would."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from components.cluster.waiting import Clock
from components.proofs.smoke_decisions import SmokeSpec
from components.rollout.driver import (
    ROLLOUT_ANNOTATION,
    RolloutSpec,
    agents_missing,
    carries_version,
    cordon_patch,
    driver_missing,
    driver_trouble,
    latest_revision,
    nodes_to_roll,
    taint_patch,
    uncordon_patch,
    untaint_patch,
)
from components.rollout.run import RolloutStopped, roll_driver
from components.vocabulary.fractioning import NODE_READY_CONDITION
from components.vocabulary.nvidia import DRIVER_FULL_LABEL
from tests.unit.fake_cluster import FakeCluster

OLD, NEW = "615.71.09", "615.80.01"
NAMESPACE = "gpu-operator"
SPEC = RolloutSpec(NAMESPACE, NEW, "gpu-fractioning", 1, 30, 600)


def node(name: str, version: str = OLD, **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.memory": "40960", DRIVER_FULL_LABEL: version},
            "annotations": dict(annotations),
        },
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "conditions": [{"type": NODE_READY_CONDITION, "status": "True"}],
        },
    }


def pod(name: str, on: str, namespace: str = "team", ready: bool = True, **extra: Any) -> dict[str, Any]:
    metadata = {
        "name": name,
        "namespace": namespace,
        "labels": extra.pop("labels", {}),
        "annotations": extra.pop("annotations", {}),
    }
    return {
        "metadata": metadata,
        "spec": {"nodeName": on, **extra},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def driver(on: str, revision: str) -> dict[str, Any]:
    return pod(
        f"nvidia-driver-{on}-{revision}",
        on,
        NAMESPACE,
        labels={"app": "nvidia-driver-daemonset", "controller-revision-hash": revision},
    )


def fraction(name: str, on: str) -> dict[str, Any]:
    return pod(name, on, annotations={"gpu-fraction": "0.5"}, runtimeClassName="nvidia")


def reservation(on: str) -> dict[str, Any]:
    return pod(f"gpu-reservation-{on}", on, "kai-resource-reservation")


DAEMONSET = {
    "metadata": {
        "name": "nvidia-driver-daemonset",
        "uid": "ds-1",
        "generation": 2,
        "labels": {"app": "nvidia-driver-daemonset"},
    },
    "spec": {"template": {"spec": {"containers": [{"image": f"nvcr.io/nvidia/driver:{NEW}-ubuntu24.04"}]}}},
    "status": {"observedGeneration": 2},
}


def revision(number: int, hash_: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"ds-{hash_}",
            "labels": {"controller-revision-hash": hash_},
            "ownerReferences": [{"uid": "ds-1"}],
        },
        "revision": number,
    }


def test_the_newest_owned_revision_is_the_one_a_pod_must_carry() -> None:
    stranger = {
        "metadata": {"name": "x", "labels": {"controller-revision-hash": "zzz"}, "ownerReferences": [{"uid": "other"}]},
        "revision": 9,
    }
    assert latest_revision(DAEMONSET, [revision(1, "old"), revision(2, "new"), stranger]) == "new"
    assert latest_revision(DAEMONSET, [stranger]) is None


@pytest.mark.parametrize(
    ("image", "observed", "carries"),
    [
        (f"nvcr.io/nvidia/driver:{NEW}-ubuntu24.04", 2, True),
        (f"nvcr.io/nvidia/driver:{NEW}", 2, True),
        (f"nvcr.io/nvidia/driver:{OLD}-ubuntu24.04", 2, False),
        (f"nvcr.io/nvidia/driver:{NEW}1-ubuntu24.04", 2, False),
        (f"nvcr.io/nvidia/driver:{NEW}-ubuntu24.04", 1, False),
    ],
)
def test_the_daemonset_carries_the_version_once_rendered_and_observed(image: str, observed: int, carries: bool) -> None:
    daemonset = {
        **DAEMONSET,
        "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
        "status": {"observedGeneration": observed},
    }
    assert carries_version(daemonset, NEW) is carries


def test_a_node_left_cordoned_comes_first_then_old_drivers_by_name() -> None:
    nodes = [node("c"), node("a"), node("b", NEW), node("d", **{ROLLOUT_ANNOTATION: "new"}), node("e")]
    drivers = [driver("c", "old"), driver("a", "old"), driver("b", "new"), driver("d", "new")]
    todo, done = nodes_to_roll(nodes, drivers, "new")
    assert todo == ["d", "a", "c"]
    assert done == ["b", "e"], "a node with no driver pod gets the new one from the DaemonSet"


def test_cordon_remembers_a_node_that_was_unschedulable_before_and_keeps_it_so() -> None:
    before = node("a")
    before["spec"]["unschedulable"] = True
    patch = cordon_patch(before, "new")
    assert patch["spec"] == {"unschedulable": True}
    before["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    assert (
        cordon_patch(before, "new")["metadata"]["annotations"]["kai-gpu-fractions/unschedulable-before-rollout"]
        == "true"
    )
    assert uncordon_patch(before)["spec"] == {"unschedulable": True}
    assert uncordon_patch(node("b", **{ROLLOUT_ANNOTATION: "new"}))["spec"] == {"unschedulable": None}


@pytest.mark.parametrize(
    ("statuses", "trouble"),
    [
        (
            {
                "initContainerStatuses": [
                    {
                        "name": "k8s-driver-manager",
                        "restartCount": 3,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    }
                ]
            },
            "Init:CrashLoopBackOff (k8s-driver-manager, 3 restarts)",
        ),
        (
            {
                "containerStatuses": [
                    {
                        "name": "nvidia-driver-ctr",
                        "restartCount": 1,
                        "state": {"waiting": {"reason": "ImagePullBackOff"}},
                    }
                ]
            },
            "ImagePullBackOff (nvidia-driver-ctr, 1 restart)",
        ),
        ({"initContainerStatuses": [{"name": "k8s-driver-manager", "state": {"running": {}}}]}, None),
        (
            {"containerStatuses": [{"name": "nvidia-driver-ctr", "state": {"waiting": {"reason": "PodInitializing"}}}]},
            None,
        ),
    ],
)
def test_a_driver_pod_in_a_back_off_is_trouble_and_one_at_work_is_not(
    statuses: dict[str, Any], trouble: str | None
) -> None:
    assert driver_trouble({"metadata": {"name": "d"}, "status": statuses}) == trouble


def test_a_node_is_serving_again_only_with_everything_back() -> None:
    current = node("a", NEW)
    new = driver("a", "new")
    assert driver_missing(current, new, "new", NEW, [pod("validator", "a", NAMESPACE)]) == []
    assert agents_missing(current, {"mpsd": [pod("mpsd-a", "a", "gpu-fractioning")]}) == []
    stale = node("a", OLD)
    stale["status"]["conditions"] = [{"type": NODE_READY_CONDITION, "status": "False"}]
    assert driver_missing(stale, driver("a", "old"), "new", NEW, []) == [
        "the new driver pod Ready",
        f"GPU Feature Discovery reporting driver {NEW} (it reports {OLD})",
        "the operator validator Ready",
    ]
    assert agents_missing(stale, {"mpsd": []}) == ["mpsd Ready", f"{NODE_READY_CONDITION}=True"]
    assert driver_missing(current, new, "new", NEW, None) == [], "no validator DaemonSet: not waited for"
    assert agents_missing(stale, {}) == [], "no gpu-fractioning: no agents to wait for"


def test_the_taint_is_added_and_removed_beside_the_nodes_own() -> None:
    tainted = node("a")
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    added = taint_patch(tainted, "new")["spec"]["taints"]
    assert added == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": ROLLOUT_ANNOTATION, "effect": "NoExecute", "value": "new"},
    ]
    tainted["spec"]["taints"] = added
    assert taint_patch(tainted, "new")["spec"]["taints"] == added, "a rerun adds it once"
    assert untaint_patch(tainted)["spec"]["taints"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def tolerates_all(pod: dict[str, Any]) -> bool:
    return any(t == {"operator": "Exists"} for t in pod["spec"].get("tolerations") or [])


@dataclass
class DriverCluster(FakeCluster):
    """Replaces a deleted driver pod with one of the new revision, as the DaemonSet controller does;
    the new driver loads (GFD reports it) unless a pod still using the GPU runs on the node."""

    cordoned_at_most: int = 0
    # (pod, its node, the nodes cordoned when it was deleted or evicted)
    deletions: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)

    def cordoned(self) -> frozenset[str]:
        return frozenset(n["metadata"]["name"] for n in self.listed("nodes", "") if n["spec"].get("unschedulable"))

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        super().patch_node(name, patch)
        self.cordoned_at_most = max(self.cordoned_at_most, len(self.cordoned()))
        if any(t["key"] == ROLLOUT_ANNOTATION for t in self.stored("nodes", name)["spec"].get("taints") or []):
            # The taint manager evicts every pod without a toleration for it; the operands have one.
            for evicted in self.list_all_pods(f"spec.nodeName={name}"):
                if evicted["metadata"]["namespace"] != NAMESPACE and not tolerates_all(evicted):
                    self.deletions.append((evicted["metadata"]["name"], name, self.cordoned()))
                    self.remove("pods", evicted["metadata"]["name"], evicted["metadata"]["namespace"])

    def delete_pod(
        self,
        namespace: str,
        name: str,
        wait: bool = True,
        timeout_seconds: float = 120.0,
        grace_period_seconds: int | None = 0,
    ) -> None:
        gone = self.read_pod(namespace, name)
        self.deletions.append((name, (gone or {"spec": {}})["spec"].get("nodeName", ""), self.cordoned()))
        super().delete_pod(namespace, name, wait, timeout_seconds, grace_period_seconds)
        if gone is None or gone["metadata"]["labels"].get("app") != "nvidia-driver-daemonset":
            return
        on = gone["spec"]["nodeName"]
        replacement = driver(on, "new")
        users = [p for p in self.list_all_pods(f"spec.nodeName={on}") if p["spec"].get("runtimeClassName")]
        if users:
            replacement["status"] = {
                "phase": "Pending",
                "initContainerStatuses": [
                    {
                        "name": "k8s-driver-manager",
                        "restartCount": 1,
                        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    }
                ],
            }
        else:
            self.stored("nodes", on)["metadata"]["labels"][DRIVER_FULL_LABEL] = NEW
        self.put("pods", replacement, namespace=NAMESPACE)


def cluster_of(nodes: int, fractions_on: tuple[int, ...] = ()) -> DriverCluster:
    cluster = DriverCluster()
    cluster.put("nodes", *(node(f"gpu-node-{i}") for i in range(nodes)))
    cluster.put("pods", *(driver(f"gpu-node-{i}", "old") for i in range(nodes)), namespace=NAMESPACE)
    for i in fractions_on:
        cluster.put("pods", fraction(f"job-{i}", f"gpu-node-{i}"), namespace="team")
        cluster.put("pods", reservation(f"gpu-node-{i}"), namespace="kai-resource-reservation")
    # A copy: a test may change the stored DaemonSet.
    cluster.put("daemonsets.apps", copy.deepcopy(DAEMONSET), namespace=NAMESPACE)
    cluster.put("controllerrevisions.apps", revision(1, "old"), revision(2, "new"), namespace=NAMESPACE)
    return cluster


def fake_clock() -> Clock:
    now = [0.0]
    return Clock(now=lambda: now[0], sleep=lambda seconds: now.__setitem__(0, now[0] + seconds))


@pytest.mark.parametrize("at_once", [1, 2])
def test_each_node_is_drained_while_cordoned_and_never_more_at_once_than_allowed(at_once: int) -> None:
    cluster = cluster_of(4, fractions_on=(0, 1, 2, 3))
    spec = RolloutSpec(NAMESPACE, NEW, "gpu-fractioning", at_once, 0, 600)
    results = roll_driver(cluster, spec, fake_clock(), progress=lambda _line: None)
    assert [r.check for r in results] == [f"gpu-node-{i}" for i in range(4)]
    assert all(r.passed for r in results)
    assert cluster.cordoned_at_most == at_once
    assert cluster.cordoned() == frozenset(), "every node uncordoned at the end"
    for name, on, cordoned in cluster.deletions:
        assert on in cordoned, f"{name} was deleted while {on} was not cordoned"
        assert at_once > 1 or cordoned == {on}, f"{name} was deleted while another node was being upgraded"
    drained = [name for name, _, _ in cluster.deletions if name.startswith("job-")]
    assert drained == ["job-0", "job-1", "job-2", "job-3"]


def test_a_node_whose_driver_cannot_unload_stops_the_rollout_there_and_a_rerun_resumes() -> None:
    cluster = cluster_of(3)
    # A pod the rollout does not drain (not fractional, it tolerates every taint) uses the GPU on gpu-node-1.
    holder = pod("whole-gpu", "gpu-node-1", runtimeClassName="nvidia", tolerations=[{"operator": "Exists"}])
    cluster.put("pods", holder, namespace="team")
    with pytest.raises(RolloutStopped) as stopped:
        roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)
    message = str(stopped.value)
    assert message.startswith(
        "driver rollout stopped at gpu-node-1: its new driver pod gpu-operator/nvidia-driver-gpu-node-1-new"
    )
    assert "Init:CrashLoopBackOff (k8s-driver-manager, 1 restart): the old driver could not be unloaded" in message
    assert "still using the GPU on gpu-node-1: team/whole-gpu" in message
    assert "kubectl -n gpu-operator logs nvidia-driver-gpu-node-1-new -c k8s-driver-manager" in message
    assert cluster.cordoned() == {"gpu-node-1"}, "the failed node stays cordoned, the others serve"
    assert cluster.stored("nodes", "gpu-node-2")["metadata"]["labels"][DRIVER_FULL_LABEL] == OLD, "not started"

    # The fix: the pod goes, the kubelet retries the init container, the driver loads.
    cluster.remove("pods", "whole-gpu", "team")
    cluster.stored("pods", "nvidia-driver-gpu-node-1-new", NAMESPACE).update(driver("gpu-node-1", "new"))
    cluster.stored("nodes", "gpu-node-1")["metadata"]["labels"][DRIVER_FULL_LABEL] = NEW
    cluster.deletions.clear()
    results = roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)
    assert [r.check for r in results if "already" in r.detail] == ["gpu-node-0"], "a finished node is not redone"
    assert [name for name, _, _ in cluster.deletions] == ["nvidia-driver-gpu-node-2-old"]
    assert cluster.cordoned() == frozenset()


def test_a_first_install_has_nothing_to_roll_and_does_not_wait_for_the_operator() -> None:
    cluster = cluster_of(2)
    cluster.clear("daemonsets.apps")
    (result,) = roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)
    assert (result.passed, result.detail) == (True, "no driver DaemonSet yet: nothing to roll")
    assert cluster.node_patches == [], "no node touched"


def test_an_operator_that_never_renders_the_new_driver_stops_the_rollout_before_any_node() -> None:
    cluster = cluster_of(2)
    cluster.stored("daemonsets.apps", "nvidia-driver-daemonset", NAMESPACE)["spec"]["template"]["spec"]["containers"][
        0
    ]["image"] = f"nvcr.io/nvidia/driver:{OLD}-ubuntu24.04"
    with pytest.raises(RolloutStopped, match=f"has not rendered its driver DaemonSet for driver {NEW} within 300s"):
        roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)
    assert cluster.node_patches == [], "no node touched"


class RacingCluster(DriverCluster):
    """Another controller adds its own taint to each node between the rollout's read and its taint
    patch, `races` times per node."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.races = races
        self.raced: dict[str, int] = {}

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        if "taints" in (patch.get("spec") or {}) and self.raced.get(name, 0) < self.races:
            self.raced[name] = self.raced.get(name, 0) + 1
            node = self.stored("nodes", name)
            foreign = {"key": f"other.example/{self.raced[name]}", "effect": "NoSchedule"}
            super().patch_node(name, {"spec": {"taints": [*(node["spec"].get("taints") or []), foreign]}})
        super().patch_node(name, patch)


def one_node(cluster: DriverCluster) -> None:
    cluster.put("nodes", node("gpu-node-0"))
    cluster.put("pods", driver("gpu-node-0", "old"), namespace=NAMESPACE)
    cluster.put("daemonsets.apps", copy.deepcopy(DAEMONSET), namespace=NAMESPACE)
    cluster.put("controllerrevisions.apps", revision(1, "old"), revision(2, "new"), namespace=NAMESPACE)


def test_a_taint_another_controller_adds_meanwhile_is_kept() -> None:
    cluster = RacingCluster(races=1)
    one_node(cluster)
    results = roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)
    assert all(r.passed for r in results)
    keys = [t["key"] for t in cluster.stored("nodes", "gpu-node-0")["spec"].get("taints") or []]
    assert keys == ["other.example/1"], "the rollout's taint is gone, the other controller's stays"


def test_a_node_rewritten_under_every_taint_patch_stops_the_rollout_with_its_name() -> None:
    cluster = RacingCluster(races=99)
    one_node(cluster)
    with pytest.raises(RolloutStopped, match="node gpu-node-0 changed under every one of 5 patches of its taints"):
        roll_driver(cluster, SPEC, fake_clock(), progress=lambda _line: None)


PROOF = SmokeSpec(pods=(), gpu_memory_mib=40960, gpu_fraction=0.5, sm_count=108, timeout_seconds=60)
PROVED = replace(SPEC, proof=PROOF)
EVIDENCE = Path(__file__).parents[1] / "fixtures" / "proof"


def device_query_prints(cluster: DriverCluster, **by_node: str) -> None:
    """Each node's deviceQuery pod finishes and prints the named fixture."""
    cluster.created_phase = "Succeeded"
    for node_name, fixture in by_node.items():
        cluster.logs[("default", f"fraction-devicequery-{node_name}")] = (EVIDENCE / fixture).read_text()


def test_each_node_is_proved_once_uncordoned_before_the_next_is_cordoned() -> None:
    cluster = cluster_of(3, fractions_on=(0, 1, 2))
    device_query_prints(cluster, **{f"gpu-node-{i}": "devicequery-half.txt" for i in range(3)})
    lines: list[str] = []
    results = roll_driver(cluster, PROVED, fake_clock(), progress=lines.append)
    assert all(r.passed for r in results)
    assert cluster.created_pods == [f"fraction-devicequery-gpu-node-{i}" for i in range(3)]
    steps = [line for line in lines if line.endswith(": cordoned") or ": fractions proved" in line]
    assert [step.split(":")[0] for step in steps] == [
        "gpu-node-0",
        "gpu-node-0",
        "gpu-node-1",
        "gpu-node-1",
        "gpu-node-2",
        "gpu-node-2",
    ]
    assert all(": fractions proved (" in step for step in steps[1::2]), "each node proved before the next is cordoned"
    assert cluster.cordoned() == frozenset()


def test_a_node_whose_fractions_fail_their_proof_is_cordoned_again_and_a_rerun_proves_it_without_a_reinstall() -> None:
    cluster = cluster_of(3)
    device_query_prints(cluster, **{"gpu-node-0": "devicequery-half.txt", "gpu-node-1": "devicequery-uncapped.txt"})
    with pytest.raises(RolloutStopped) as stopped:
        roll_driver(cluster, PROVED, fake_clock(), progress=lambda _line: None)
    message = str(stopped.value)
    assert message.startswith(f"driver rollout stopped at gpu-node-1: it runs driver {NEW}, but fractions there failed")
    assert "It is cordoned again" in message
    assert cluster.cordoned() == {"gpu-node-1"}, "KAI places no fraction on a node whose caps failed"
    assert ROLLOUT_ANNOTATION in cluster.stored("nodes", "gpu-node-1")["metadata"]["annotations"]
    assert cluster.stored("nodes", "gpu-node-2")["metadata"]["labels"][DRIVER_FULL_LABEL] == OLD, "not started"

    device_query_prints(cluster, **{"gpu-node-1": "devicequery-half.txt", "gpu-node-2": "devicequery-half.txt"})
    cluster.deletions.clear()
    cluster.created_pods.clear()
    results = roll_driver(cluster, PROVED, fake_clock(), progress=lambda _line: None)
    assert all(r.passed for r in results)
    drivers = [name for name, _, _ in cluster.deletions if name.startswith("nvidia-driver")]
    assert drivers == ["nvidia-driver-gpu-node-2-old"], "gpu-node-1 is proved again, not reinstalled"
    assert cluster.created_pods == ["fraction-devicequery-gpu-node-1", "fraction-devicequery-gpu-node-2"]
    assert cluster.cordoned() == frozenset()
