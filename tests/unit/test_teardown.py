"""The teardown waits' decisions: done when no pod matches, or when every namespace being deleted is gone; an
error naming what is left at the deadline."""

from __future__ import annotations

import traceback
from typing import Any

import pytest

from components.cluster.engine import report_failures_without_traceback
from components.teardown import waits as teardown
from components.teardown.waits import (
    NamespacesStillTerminating,
    PodsStillRunning,
    _PodsGoneProvider,
    terminating,
    wait_until_gone,
    wait_until_namespaces_gone,
)
from components.vocabulary.kai import CHART_KEPT_QUEUES
from tests.unit.fake_cluster import FakeCluster


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def test_it_returns_once_the_pods_are_gone() -> None:
    clock = Clock()
    listings = iter([["mpsd-a", "mpsd-b"], ["mpsd-b"], []])
    wait_until_gone(lambda: next(listings), "gpu-fractioning", 180, "fix", clock.now, clock.sleep)
    assert clock.t == 1.0, "two looks after the first, half a second apart"


def test_pods_left_at_the_deadline_fail_the_destroy_naming_them_and_the_fix() -> None:
    clock = Clock()
    with pytest.raises(PodsStillRunning) as raised:
        wait_until_gone(
            lambda: ["mpsd-x"], "gpu-fractioning (app=mpsd)", 9, "Check the operator.", clock.now, clock.sleep
        )
    message = str(raised.value)
    assert "mpsd-x" in message and "gpu-fractioning (app=mpsd)" in message and "after 9s" in message
    assert "Check the operator." in message and "pulumi destroy" in message
    assert clock.t >= 9


def test_a_change_of_cluster_access_is_stored_because_the_wait_uses_it_at_destroy() -> None:
    provider = _PodsGoneProvider()
    props = {"namespace": "gpu-fractioning", "label_selector": "app=mpsd", "timeout_seconds": 180, "fix": "x"}
    assert not provider.diff("id", {**props, "kubeconfig": "a"}, {**props, "kubeconfig": "a"}).changes
    assert provider.diff("id", {**props, "kubeconfig": "a"}, {**props, "kubeconfig": "b"}).changes
    assert provider.diff("id", {**props, "context": None}, {**props, "context": "gpu"}).changes


def test_a_reported_failure_reaches_the_operator_without_python_frames() -> None:
    report_failures_without_traceback()
    try:
        raise PodsStillRunning("1 pod(s) in gpu-fractioning still there after 180s: mpsd-x.")
    except PodsStillRunning:
        reported = traceback.format_exc()  # what the dynamic provider server sends to the engine
    assert reported == "1 pod(s) in gpu-fractioning still there after 180s: mpsd-x."
    try:
        raise KeyError("a bug")
    except KeyError:
        reported = traceback.format_exc()
    assert reported.startswith("Traceback (most recent call last)"), "a bug keeps its traceback"


def test_destroy_deletes_what_the_kai_chart_keeps_whether_or_not_the_stack_owned_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = FakeCluster()
    # default-queue is already gone: deleting it is not an error.
    kept = [{"metadata": {"name": n}} for n in CHART_KEPT_QUEUES if n != "default-queue"]
    cluster.put("queues.scheduling.run.ai", *kept)
    monkeypatch.setattr(teardown.KubeClient, "connect", classmethod(lambda cls, *_a, **_k: cluster))
    objects = [
        {"group": "scheduling.run.ai", "version": "v2", "plural": "queues", "name": n} for n in CHART_KEPT_QUEUES
    ]
    teardown._KeptObjectsProvider().delete("id", {"objects": objects, "kubeconfig": None, "context": None})
    assert cluster.deleted_objects == [("scheduling.run.ai", "v2", "queues", n) for n in CHART_KEPT_QUEUES]


def namespace(name: str, *conditions: tuple[str, str], deleting: bool = True) -> dict[str, Any]:
    """A namespace as the API server returns it; `conditions` as the namespace controller sets them."""
    return {
        "metadata": {"name": name, **({"deletionTimestamp": "2026-12-05T22:46:51Z"} if deleting else {})},
        "status": {
            "phase": "Terminating" if deleting else "Active",
            "conditions": [{"type": t, "status": "True", "message": m} for t, m in conditions],
        },
    }


def test_the_namespace_wait_returns_once_every_deleted_namespace_is_gone() -> None:
    clock, cluster = Clock(), FakeCluster()
    cluster.put("namespaces", namespace("kai-scheduler"), namespace("gpu-fractioning"))
    gone_after = {"kai-scheduler": 2.0, "gpu-fractioning": 5.0}

    def left() -> dict[str, str]:
        for name, at in gone_after.items():
            if clock.t >= at:
                cluster.remove("namespaces", name)
        return terminating(cluster, ["kai-scheduler", "kai-resource-reservation", "gpu-fractioning"])

    wait_until_namespaces_gone(left, 600, clock.now, clock.sleep)
    assert 5.0 <= clock.t < 6.0, "one wait for all of them, over as soon as the last is gone"


def test_a_namespace_nothing_deleted_is_not_waited_for() -> None:
    cluster = FakeCluster()
    cluster.put("namespaces", namespace("kai-scheduler", deleting=False), namespace("gpu-fractioning"))
    assert terminating(cluster, ["kai-scheduler", "gpu-fractioning"]) == {"gpu-fractioning": "terminating"}


def test_namespaces_left_at_the_deadline_fail_the_destroy_naming_each_and_what_holds_it() -> None:
    clock, cluster = Clock(), FakeCluster()
    held = (
        "NamespaceFinalizersRemaining",
        # The namespace controller's words (k8s.io/kubernetes v1.37.2 deletion/status_condition_utils.go:137).
        "Some content in the namespace has finalizers remaining: "
        "gpu-fractioning.nvidia.com/cleanup-node-conditions in 1 resource instances",
    )
    cluster.put("namespaces", namespace("gpu-fractioning", held), namespace("kai-scheduler"))
    with pytest.raises(NamespacesStillTerminating) as raised:
        wait_until_namespaces_gone(
            lambda: terminating(cluster, ["gpu-fractioning", "kai-scheduler"]), 30, clock.now, clock.sleep
        )
    message = str(raised.value)
    assert "after 30s" in message and clock.t >= 30
    assert f"gpu-fractioning ({held[1]})" in message and "kai-scheduler (terminating)" in message
    assert "kubectl get namespace" in message and "pulumi destroy" in message


def test_the_namespace_wait_at_destroy_reads_the_cluster_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = FakeCluster()
    cluster.put("namespaces", namespace("isolator", deleting=False))
    connected: list[tuple[Any, ...]] = []

    def connect(cls: Any, *args: Any, **_: Any) -> FakeCluster:
        connected.append(args)
        return cluster

    monkeypatch.setattr(teardown.KubeClient, "connect", classmethod(connect))
    props = {"namespaces": ["kai-scheduler", "isolator"], "timeout_seconds": 5, "kubeconfig": "k", "context": "c"}
    teardown._NamespacesGoneProvider().delete("id", props)
    assert connected == [("k", "c")]
