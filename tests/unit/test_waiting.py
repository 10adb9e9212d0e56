"""Every wait of the program polls through one primitive: each returns as soon as what it waits for
holds, and stops at its own deadline, on a fake clock that never really sleeps."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from components.cluster.client import POD_GONE_TIMEOUT_SECONDS, KubeClient, PodStillThere
from components.cluster.results import CheckResult
from components.cluster.waiting import Clock, Deadline, poll, retry, wait_for
from components.preflight.host_access import PodPhases
from tests.integration import conftest as integration
from tests.integration.workspace import wait_until


@dataclass
class FakeTime:
    t: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, "never a negative sleep"
        self.sleeps.append(seconds)
        self.t += seconds

    def clock(self) -> Clock:
        return Clock(now=lambda: self.t, sleep=self.sleep)


# ---------------------------------------------------------------- the primitive


def test_a_look_that_holds_at_once_returns_without_sleeping() -> None:
    time = FakeTime()
    assert poll(lambda: "here", lambda found: found == "here", Deadline.after(60, time.clock())) == "here"
    assert time.sleeps == []


def test_a_look_that_never_holds_ends_on_the_deadline_with_the_last_look() -> None:
    time, looks = FakeTime(), list[float]()

    def look() -> float:
        looks.append(time.t)
        return time.t

    assert poll(look, lambda _t: False, Deadline.after(12.3, time.clock())) == 12.3
    assert looks[-1] == time.t == 12.3, "the last look falls on the deadline, not a poll interval after it"


def test_looks_that_did_not_hold_are_shown_to_between_before_each_sleep() -> None:
    time, seen = FakeTime(), list[int]()
    counts = itertools.count()
    found = poll(lambda: next(counts), lambda n: n == 3, Deadline.after(60, time.clock()), between=seen.append)
    assert (found, seen, time.sleeps) == (3, [0, 1, 2], [0.5, 0.5, 0.5])


def test_given_delays_replace_the_growing_ones() -> None:
    time = FakeTime()
    poll(lambda: None, lambda _found: False, Deadline.after(5, time.clock()), itertools.repeat(2.0))
    assert time.sleeps == [2.0, 2.0, 1.0]


# ---------------------------------------------------------------- the proofs' wait_for and retry


def test_wait_for_returns_what_it_finds_as_soon_as_it_finds_it() -> None:
    time = FakeTime()
    found = wait_for(time.clock(), 60.0, lambda: "pod" if time.t >= 1.0 else None)
    assert found == "pod" and time.t == 1.0


def test_wait_for_finds_nothing_once_its_deadline_has_passed() -> None:
    time = FakeTime()
    assert wait_for(time.clock(), 30.0, lambda: None) is None
    assert time.t == 30.0


def test_retry_returns_the_first_passing_attempt() -> None:
    time = FakeTime()
    result = retry(time.clock(), 60.0, lambda: CheckResult("c", time.t >= 0.5, "d"))
    assert result.passed and time.t == 0.5


# ---------------------------------------------------------------- the preflight check pods


def check_pods(phase: str, time: FakeTime) -> PodPhases:
    pods = [{"metadata": {"name": "kgf-preflight-1"}, "status": {"phase": phase}}]
    return PodPhases(lambda: pods, clock=time.clock())


def test_a_check_pod_that_finished_is_done_at_the_first_look() -> None:
    time = FakeTime()
    assert check_pods("Succeeded", time).wait_until_done("kgf-preflight-1", 30) and time.sleeps == []


def test_a_check_pod_that_never_finishes_is_given_up_on_at_its_deadline() -> None:
    time = FakeTime()
    assert not check_pods("Running", time).wait_until_done("kgf-preflight-1", 30)
    assert time.t == 30 and set(time.sleeps) == {0.125}, "a look at the shared phases every quarter interval"


# ---------------------------------------------------------------- deleting a pod and waiting for it to go


class FakeCore:
    """CoreV1Api's pod calls: the pod reads as there for `reads_left` more reads after its delete."""

    def __init__(self, reads_left: float) -> None:
        self.reads_left, self.reads = reads_left, 0

    def delete_namespaced_pod(self, name: str, namespace: str, **_kwargs: Any) -> Any:
        class Answer:
            def drain_conn(self) -> None: ...

            def release_conn(self) -> None: ...

        return Answer()

    def read_namespaced_pod(self, name: str, namespace: str, **_kwargs: Any) -> Any:
        self.reads += 1
        if self.reads > self.reads_left:
            raise kube_api().ApiException(status=404)

        class Answer:
            data = b'{"metadata": {"name": "p"}}'

        return Answer()


def kube_api() -> Any:
    from kubernetes import client

    return client


def client_with(core: FakeCore, time: FakeTime) -> KubeClient:
    cluster = KubeClient(None, clock=time.clock())
    cluster.core = core
    return cluster


def test_a_deleted_pod_is_waited_for_only_until_it_is_gone() -> None:
    time, core = FakeTime(), FakeCore(reads_left=2)
    client_with(core, time).delete_pod("default", "device-query")
    assert core.reads == 3 and time.t == 1.0


def test_a_pod_stuck_terminating_fails_the_wait_at_its_deadline_naming_it() -> None:
    time = FakeTime()
    with pytest.raises(PodStillThere, match=r"pod default/device-query is still there 120s after it was deleted"):
        client_with(FakeCore(reads_left=float("inf")), time).delete_pod("default", "device-query")
    assert time.t == POD_GONE_TIMEOUT_SECONDS == 120


def test_the_pod_deletion_wait_takes_its_own_deadline() -> None:
    time = FakeTime()
    with pytest.raises(PodStillThere, match="still there 5s after"):
        client_with(FakeCore(reads_left=float("inf")), time).delete_pod("ns", "p", timeout_seconds=5)
    assert time.t == 5


def test_a_delete_without_wait_reads_nothing_back() -> None:
    time, core = FakeTime(), FakeCore(reads_left=float("inf"))
    client_with(core, time).delete_pod("ns", "p", wait=False)
    assert core.reads == 0 and time.t == 0


# ---------------------------------------------------------------- the integration tier's leftovers


def test_leftovers_are_reported_at_once_when_there_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    time = FakeTime()
    monkeypatch.setattr(integration, "_leftovers", lambda: {})
    assert integration.leftovers(60, time.clock()) == {} and time.t == 0


def test_leftovers_still_there_after_the_wait_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    time = FakeTime()
    monkeypatch.setattr(integration, "_leftovers", lambda: {"namespaces": ["kai-scheduler"]})
    assert integration.leftovers(60, time.clock()) == {"namespaces": ["kai-scheduler"]}
    assert time.t == 60 and set(time.sleeps) == {2.0}


def test_a_tests_wait_returns_once_its_condition_holds() -> None:
    time, looks = FakeTime(), iter([False, False, True])
    wait_until(lambda: next(looks), 30, "the release", clock=time.clock())
    assert time.sleeps == [1.0, 1.0]


def test_a_tests_wait_fails_at_its_deadline_naming_what_it_waited_for() -> None:
    time = FakeTime()
    with pytest.raises(AssertionError, match="timed out after 30s waiting for the release"):
        wait_until(lambda: False, 30, "the release", clock=time.clock())
    assert time.t == 30
