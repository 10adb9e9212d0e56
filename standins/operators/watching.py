"""When the stand-in operators run: as a controller's informers would have them, on a change of what
they read (one watch per kind, reconnecting after any break, relisting after 410 Gone), when a
delay one of them waits out has passed, and at a periodic resync. Idle, nothing polls. Each watch
also keeps its kind's objects in the store the operators read (informer.py).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

# What the operators read, and so what wakes them (standins/operators/*.py, every list and get).
WATCHED = (
    "/api/v1/nodes",
    "/api/v1/pods",
    "/api/v1/namespaces",
    "/api/v1/configmaps",
    "/apis/apps/v1/deployments",
    "/apis/apps/v1/daemonsets",
    "/apis/node.k8s.io/v1/runtimeclasses",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/nvidia.com/v1/clusterpolicies",
    "/apis/kai.scheduler/v1/configs",
    "/apis/kai.scheduler/v1/schedulingshards",
    "/apis/gpu-fractioning.kai.scheduler/v1alpha1/gpufractioningconfigs",
)
# Watched too, for the kinds above whose CRD comes with a chart: its changes say when to try them again.
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
# A controller's full resync: a safety net for anything a watch missed, never the way work is noticed.
RESYNC_SECONDS = 30.0
# How long a burst of events (a chart's install) is gathered into one round of the operators.
SETTLE_SECONDS = 0.05
# The least time from one round's start to the next's: a busy cluster (a test's pods, the rounds'
# own writes echoed back) runs them at most 4 times a second, not back to back.
MIN_ROUND_SECONDS = 0.25
# After a round in which an operator raised: try again soon, as a controller requeues.
RETRY_SECONDS = 1.0
# A watch the API server ends after this long is opened again (the server's own default is 30-60 min).
WATCH_SECONDS = 300
# After a failed watch (a restarting API server; a kind whose CRD changed a moment ago, which the
# API server serves a little after the CRD says Established).
RECONNECT_SECONDS = 2.0
# A kind not served (404) while no CRD changes is tried again after this long, or at the next change.
NOT_SERVED_SECONDS = 30.0
# How long after a CRD's change a kind not served is still tried every RECONNECT_SECONDS.
CRD_SETTLE_SECONDS = 10.0


@dataclass
class Alarm:
    """Wakes the operators' loop: at once on an event, or at the earliest deadline a delay set."""

    event: threading.Event = field(default_factory=threading.Event)
    _deadlines: list[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ring(self) -> None:
        self.event.set()

    def at(self, when: float) -> None:
        with self._lock:
            self._deadlines.append(when)

    def take_earliest(self) -> float | None:
        """The earliest deadline the last round set, even one that passed while it ran (the operator
        that set it has not acted yet); the deadlines are set again by the next round."""
        with self._lock:
            found = min(self._deadlines, default=None)
            self._deadlines.clear()
        return found


# The stand-ins run as one process, and every delay any of them waits out sets this one alarm.
ALARM = Alarm()


def next_round(now: float, last_round: float, deadline: float | None, failed: bool) -> float:
    """When the operators run next unless an event comes first: the earliest of the resync, the
    deadline a delay set, and a retry after a failed round."""
    due = [last_round + RESYNC_SECONDS]
    if deadline is not None:
        due.append(deadline)
    if failed:
        due.append(now + RETRY_SECONDS)
    return max(now, min(due))


class Kinds:
    """Counts the changes of CRDs, so that the watch of a kind not served yet waits for one
    instead of asking every few seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._changed = threading.Condition()
        self._clock = clock
        self.count = 0
        self._last = -math.inf

    def changed(self) -> None:
        with self._changed:
            self.count += 1
            self._last = self._clock()
            self._changed.notify_all()

    def wait_until_served(self, seen: int, stop: threading.Event) -> None:
        """After a 404 of a watch opened when the count was `seen`: until the next CRD change (or
        NOT_SERVED_SECONDS) when none came lately, else RECONNECT_SECONDS."""
        with self._changed:
            if self.count == seen and self._clock() - self._last >= CRD_SETTLE_SECONDS:
                self._changed.wait_for(lambda: self.count != seen, timeout=NOT_SERVED_SECONDS)
                return
        stop.wait(RECONNECT_SECONDS)


class Kept(Protocol):
    """Where each watch keeps its kind's objects for the operators to read (informer.Store)."""

    def restart(self, collection: str) -> None: ...

    def synced(self, collection: str) -> None: ...

    def apply(self, collection: str, kind: str, obj: dict[str, Any]) -> None: ...


# A watch opened from the current state streams every object, then a bookmark with this annotation
# (the API server's streaming list, KEP-3157: watch with sendInitialEvents=true).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def initial_events_end(obj: Mapping[str, Any]) -> bool:
    """Whether a BOOKMARK event closes the current state a watch streamed first."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(INITIAL_EVENTS_END) == "true"


class Gone(Exception):
    """The resource version a watch asked for is too old (410): start again from the current state."""


def watch_events(lines: Iterable[bytes]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(type, object) of each event of a watch stream, one JSON document a line; raises Gone on the
    API server's 410 (an ERROR event whose Status has code 410)."""
    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        kind, obj = str(event.get("type")), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(str(obj.get("message")))
            raise RuntimeError(f"watch error: {obj.get('message')}")
        yield kind, obj


Opener = Callable[[str, str], Iterable[bytes]]


def watch_forever(
    open_watch: Opener,
    url: str,
    alarm: Alarm,
    stop: threading.Event,
    log: Callable[[str], None],
    kinds: Kinds | None = None,
    store: Kept | None = None,
) -> None:
    """Follows `url` until `stop`: rings on every change, reopens from the last resource version
    after a break, from the current state (every object ADDED again) after 410 Gone, and waits a
    moment after a failure; a kind not served yet waits for a CRD to change (`kinds`, which the
    watch of CRDS counts). Every event goes into `store`, synced once the current state is in."""
    version = ""
    while not stop.is_set():
        seen = kinds.count if kinds else 0
        if store is not None and not version:
            store.restart(url)
        try:
            for kind, obj in watch_events(open_watch(url, version)):
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind == "BOOKMARK":
                    if store is not None and initial_events_end(obj):
                        store.synced(url)
                else:
                    if store is not None:
                        store.apply(url, kind, dict(obj))
                    alarm.ring()
                    if kinds and url == CRDS:
                        kinds.changed()
        except Gone:
            version = ""
            alarm.ring()  # events may have been missed: look at everything again
            if kinds and url == CRDS:
                kinds.changed()
        except Exception as error:  # the kind is not served yet, or the API server restarts
            if getattr(error, "status", None) == 410:  # Gone as the response's status, not an event
                version = ""
                alarm.ring()
            if getattr(error, "status", None) == 404 and kinds:
                kinds.wait_until_served(seen, stop)
                continue
            if "404" not in str(error):
                log(f"watch {url}: {error!r}")
            stop.wait(RECONNECT_SECONDS)


def start_watches(
    open_watch: Opener, alarm: Alarm, stop: threading.Event, log: Callable[[str], None], store: Kept | None = None
) -> None:
    kinds = Kinds()
    for url in (*WATCHED, CRDS):
        keep = store if url in WATCHED else None
        threading.Thread(
            target=watch_forever,
            args=(open_watch, url, alarm, stop, log, kinds, keep),
            name=f"watch {url}",
            daemon=True,
        ).start()


def run_rounds(
    round_: Callable[[float], bool], alarm: Alarm, stop: threading.Event, now: Callable[[], float] = time.monotonic
) -> None:
    """Runs `round_` (all operators once; False when one raised) on every wake until `stop`."""
    last_round, failed = now(), not round_(now())
    while not stop.is_set():
        wake_at = next_round(now(), last_round, alarm.take_earliest(), failed)
        if alarm.event.wait(max(0.0, wake_at - now())):
            stop.wait(max(SETTLE_SECONDS, last_round + MIN_ROUND_SECONDS - now()))
        alarm.event.clear()
        if stop.is_set():
            return
        last_round = now()
        failed = not round_(last_round)
