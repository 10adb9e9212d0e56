"""The teardown wait's decision: done when no pod matches, an error naming them at the deadline."""

from __future__ import annotations

import traceback

import pytest

from components.cluster.engine import report_failures_without_traceback
from components.teardown import waits as teardown
from components.teardown.waits import PodsStillRunning, _PodsGoneProvider, wait_until_gone
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
