"""Waiting for the cluster: one way to look again and again until something holds or a deadline
passes, used by every wait of the program (gates, proofs, teardown, check pods, pod deletion).

Each wait states its deadline and what it does when the deadline passes; `poll` only looks, sleeps
and hands back the last look, so the wait decides what a look that never held means.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

Look = TypeVar("Look")


@dataclass
class Clock:
    """Time, injectable so the polling is testable without waiting."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class Deadline:
    """The moment on `clock` after which a wait stops looking."""

    clock: Clock
    at: float

    @classmethod
    def after(cls, seconds: float, clock: Clock | None = None) -> Deadline:
        clock = clock or Clock()
        return cls(clock, clock.now() + seconds)

    def passed(self) -> bool:
        return self.clock.now() >= self.at

    def left(self) -> float:
        return max(0.0, self.at - self.clock.now())


def poll_delays(first: float = 0.5, longest: float = 5.0, steady_for: float = 10.0) -> Iterator[float]:
    """The waits between two looks at the cluster: every half second for the first 10 s, since most
    of what the checks wait for is there within seconds (a back-off from the start would notice a
    step ready at 2.5 s only at 4 s), then half as long again each time up to `longest`, so a wait
    of minutes polls the API no more than every 5 s."""
    waited = 0.0
    while waited < steady_for:
        yield first
        waited += first
    delay = first
    while True:
        delay = min(longest, delay * 1.5)
        yield delay


def poll(
    look: Callable[[], Look],
    holds: Callable[[Look], bool],
    deadline: Deadline,
    delays: Iterator[float] | None = None,
    between: Callable[[Look], None] = lambda _look: None,
) -> Look:
    """Looks until what `look` finds `holds` or the deadline has passed, and returns the last look:
    the caller tells whether it held. The first look is at once; then `poll_delays` (or `delays`)
    apart, the last one falling on the deadline, not up to a poll interval after it. `between` sees
    each look that did not hold before the sleep that follows it."""
    delays = delays or poll_delays()
    while True:
        found = look()
        if holds(found) or deadline.passed():
            return found
        between(found)
        deadline.clock.sleep(min(next(delays), deadline.left()))


class Outcome(Protocol):
    @property
    def passed(self) -> bool: ...


Attempt = TypeVar("Attempt", bound=Outcome)


def wait_for(clock: Clock, deadline: float, probe: Callable[[], Any], delays: Iterator[float] | None = None) -> Any:
    """What `probe` finds (not None) by the deadline; None if it found nothing by then."""
    return poll(probe, lambda found: found is not None, Deadline(clock, deadline), delays)


def retry(clock: Clock, seconds: float, attempt: Callable[[], Attempt]) -> Attempt:
    """The first attempt that passes within `seconds`; else the last one, made on the deadline."""
    return poll(attempt, lambda result: result.passed, Deadline.after(seconds, clock))
