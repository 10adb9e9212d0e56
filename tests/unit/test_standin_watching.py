"""When the stand-in operators run: on a watch event, at a delay's end, at the resync, and soon
again after a failed round; and how a watch stream is read, broken and resumed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator

import pytest

from standins.operators.cluster import FirstSeen
from standins.operators.watching import (
    CRDS,
    MIN_ROUND_SECONDS,
    NOT_SERVED_SECONDS,
    RESYNC_SECONDS,
    RETRY_SECONDS,
    Alarm,
    Gone,
    Kinds,
    next_round,
    run_rounds,
    watch_events,
    watch_forever,
)


def line(kind: str, obj: dict[str, object]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


def versioned(version: str) -> dict[str, object]:
    return {"metadata": {"name": "gpu-node-0", "resourceVersion": version}}


def test_idle_operators_run_only_at_the_resync() -> None:
    assert next_round(now=100.0, last_round=95.0, deadline=None, failed=False) == 95.0 + RESYNC_SECONDS


def test_a_delay_that_ends_before_the_resync_wakes_them_then() -> None:
    assert next_round(now=100.0, last_round=99.0, deadline=102.5, failed=False) == 102.5


def test_a_failed_round_is_tried_again_soon() -> None:
    assert next_round(now=100.0, last_round=100.0, deadline=None, failed=True) == 100.0 + RETRY_SECONDS


def test_a_deadline_already_past_runs_them_at_once() -> None:
    assert next_round(now=100.0, last_round=50.0, deadline=90.0, failed=False) == 100.0


def test_a_delay_not_yet_over_sets_the_alarm_at_its_end_and_only_once_over_it_is_reached() -> None:
    alarm = Alarm()
    seen = FirstSeen(alarm=alarm)
    obj = {"metadata": {"uid": "u1"}}
    assert not seen.reached(obj, now=10.0, delay=4.0)
    assert alarm.take_earliest() == 14.0
    assert alarm.take_earliest() is None, "each round sets its deadlines again"
    assert not seen.reached(obj, now=13.9, delay=4.0)
    assert alarm.take_earliest() == 14.0
    assert seen.reached(obj, now=14.0, delay=4.0), "the delay counts from the first sight"
    assert alarm.take_earliest() is None, "a delay that is over sets no alarm"


def test_the_earliest_deadline_wins() -> None:
    alarm = Alarm()
    for when in (30.0, 12.0, 20.0):
        alarm.at(when)
    assert alarm.take_earliest() == 12.0


def test_a_deadline_that_passed_while_the_round_ran_still_wakes_them_at_once() -> None:
    alarm = Alarm()
    seen = FirstSeen(alarm=alarm)
    obj = {"metadata": {"uid": "u1"}}
    assert not seen.reached(obj, now=10.0, delay=4.0)
    alarm.take_earliest()
    # The next round began 0.01 s before the delay's end and took 0.05 s: the operator has not acted.
    assert not seen.reached(obj, now=13.99, delay=4.0)
    deadline = alarm.take_earliest()
    assert deadline == 14.0
    assert next_round(now=14.04, last_round=13.99, deadline=deadline, failed=False) == 14.04


def test_events_are_read_line_by_line_and_a_410_is_gone() -> None:
    stream = [line("ADDED", versioned("1")), b"", line("BOOKMARK", versioned("2"))]
    assert [kind for kind, _ in watch_events(stream)] == ["ADDED", "BOOKMARK"]
    with pytest.raises(Gone, match="too old resource version"):
        list(watch_events([line("ERROR", {"code": 410, "message": "too old resource version: 1 (5)"})]))
    with pytest.raises(RuntimeError, match="watch error: internal"):
        list(watch_events([line("ERROR", {"code": 500, "message": "internal"})]))


class FakeWatches:
    """One scripted stream per call; the stop is set once the script is done."""

    def __init__(self, streams: list[list[bytes] | Exception], stop: threading.Event) -> None:
        self.streams, self.stop = streams, stop
        self.asked: list[str] = []

    def __call__(self, url: str, version: str) -> Iterable[bytes]:
        self.asked.append(version)
        if not self.streams:
            self.stop.set()
            return []
        stream = self.streams.pop(0)
        if isinstance(stream, Exception):
            raise stream
        return iter(stream)


def test_a_watch_resumes_from_its_last_version_relists_after_410_and_rings_on_changes() -> None:
    stop, alarm = threading.Event(), Alarm()
    watches = FakeWatches(
        [
            [line("ADDED", versioned("7")), line("MODIFIED", versioned("9"))],
            [line("BOOKMARK", versioned("12"))],
            [line("ERROR", {"code": 410, "message": "too old"})],
            RuntimeError("connection refused"),
            [line("DELETED", versioned("20"))],
        ],
        stop,
    )
    logged: list[str] = []
    watch_forever(watches, "/api/v1/nodes", alarm, stop, logged.append)
    # From now; after a break from the last version; a bookmark moves it without waking anyone;
    # after 410 from now again; after a failure from the last version it had.
    assert watches.asked == ["", "9", "12", "", "", "20"]
    assert alarm.event.is_set()
    assert logged == ["watch /api/v1/nodes: RuntimeError('connection refused')"]


class GoneResponse(Exception):
    """What the kubernetes client raises for a 410 response (ApiException: a `status`)."""

    status = 410


def test_a_410_response_when_the_watch_opens_starts_again_from_the_current_state() -> None:
    stop, alarm = threading.Event(), Alarm()
    watches = FakeWatches([[line("MODIFIED", versioned("5"))], GoneResponse("Gone"), []], stop)
    watch_forever(watches, "/api/v1/pods", alarm, stop, lambda _: None)
    assert watches.asked == ["", "5", "", ""]


class NotFound(Exception):
    """What the kubernetes client raises for a kind the API server does not serve."""

    status = 404


def test_a_kind_not_served_is_tried_again_when_a_crd_changes_not_every_few_seconds() -> None:
    stop, alarm, kinds = threading.Event(), Alarm(), Kinds()
    watches = FakeWatches([NotFound("(404)"), [line("ADDED", versioned("3"))]], stop)
    threading.Timer(0.3, kinds.changed).start()
    started = time.monotonic()
    watch_forever(watches, "/apis/nvidia.com/v1/clusterpolicies", alarm, stop, print, kinds)
    assert 0.25 <= time.monotonic() - started < NOT_SERVED_SECONDS / 2
    assert watches.asked == ["", "", "3"]


def test_a_kind_not_served_just_after_a_crd_changed_is_tried_again_soon() -> None:
    stop, kinds = threading.Event(), Kinds()
    kinds.changed()  # its CRD says Established: the API server serves it a moment later
    stop.set()  # so that the short wait returns at once
    started = time.monotonic()
    kinds.wait_until_served(kinds.count, stop)
    assert time.monotonic() - started < 1.0, "no wait for a further change"


def test_the_watch_of_crds_counts_their_changes_but_not_bookmarks() -> None:
    stop, alarm, kinds = threading.Event(), Alarm(), Kinds()
    stream = [line("ADDED", versioned("1")), line("BOOKMARK", versioned("2")), line("MODIFIED", versioned("3"))]
    watch_forever(FakeWatches([stream], stop), CRDS, alarm, stop, print, kinds)
    assert kinds.count == 2


def test_a_bookmark_alone_wakes_nobody() -> None:
    stop, alarm = threading.Event(), Alarm()
    watch_forever(FakeWatches([[line("BOOKMARK", versioned("3"))]], stop), "/api/v1/pods", alarm, stop, print)
    assert not alarm.event.is_set()


def test_rounds_run_on_each_event_and_stop_when_told() -> None:
    stop, alarm = threading.Event(), Alarm()
    ran: list[float] = []

    def round_(now: float) -> bool:
        ran.append(now)
        if len(ran) == 3:
            stop.set()
        else:
            alarm.ring()  # as a write of the round's own would
        return True

    thread = threading.Thread(target=run_rounds, args=(round_, alarm, stop))
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert len(ran) == 3, "the first round at start, then one per wake"


def test_a_busy_cluster_runs_them_at_most_every_min_round_seconds() -> None:
    stop, alarm = threading.Event(), Alarm()
    ran: list[float] = []

    def round_(now: float) -> bool:
        ran.append(now)
        if len(ran) == 4:
            stop.set()
        alarm.ring()  # events keep coming
        return True

    thread = threading.Thread(target=run_rounds, args=(round_, alarm, stop))
    thread.start()
    thread.join(timeout=10)
    assert len(ran) == 4
    assert all(b - a >= MIN_ROUND_SECONDS * 0.95 for a, b in zip(ran, ran[1:], strict=False))


def test_a_failed_round_runs_again_without_any_event() -> None:
    stop, alarm = threading.Event(), Alarm()
    outcomes: Iterator[bool] = iter([False, True])
    ran: list[float] = []

    def round_(now: float) -> bool:
        ran.append(now)
        if len(ran) == 2:
            stop.set()
        return next(outcomes)

    thread = threading.Thread(target=run_rounds, args=(round_, alarm, stop))
    thread.start()
    thread.join(timeout=RETRY_SECONDS + 5)
    assert len(ran) == 2 and ran[1] - ran[0] >= RETRY_SECONDS * 0.9
