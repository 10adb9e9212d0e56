"""Where the seconds of a `pulumi up` go, read from the engine's own event stream.

`pulumi up --json` streams the engine's events as JSON objects. A resource's step runs from its
`resourcePreEvent` to its `resOutputsEvent` (or the failure that ends it); the step cannot start
before every resource it depends on (`pulumi stack export`: `dependencies`, a component standing
for its children) has finished. The critical path is the chain, from the last step to finish back
to the first, of the dependency that finished last: shortening anything off that chain does not
shorten the update.

The engine stamps its events in whole seconds, so every figure here is to within a second.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Step:
    urn: str
    start: int
    end: int

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @property
    def seconds(self) -> int:
        return self.end - self.start


def read_events(path: Path) -> list[dict[str, Any]]:
    """The engine events of `pulumi up --json`: a stream of JSON objects, one after another."""
    decoder, events, rest = json.JSONDecoder(), [], path.read_text().strip()
    while rest:
        event, end = decoder.raw_decode(rest)
        events.append(event)
        rest = rest[end:].lstrip()
    return events


def dependencies_from_export(export: Mapping[str, Any]) -> dict[str, set[str]]:
    """What each custom resource waited for, from `pulumi stack export`: its own dependencies and
    those of the components it sits in (a component's children register once its dependencies
    are done). Components only group, so waiting for one means waiting for its custom descendants."""
    resources = {r["urn"]: r for r in export["deployment"].get("resources") or []}
    children: dict[str, list[str]] = {}
    for urn, resource in resources.items():
        children.setdefault(resource.get("parent") or "", []).append(urn)

    def descendants(urn: str) -> set[str]:
        if resources[urn].get("custom"):
            return {urn}
        return set().union(*(descendants(child) for child in children.get(urn, [])))

    def waited_for(urn: str) -> set[str]:
        resource = resources[urn]
        own = set().union(*(descendants(d) for d in resource.get("dependencies") or [] if d in resources))
        parent = resource.get("parent")
        return own | (waited_for(parent) if parent in resources else set())

    return {urn: waited_for(urn) for urn, resource in resources.items() if resource.get("custom")}


def steps(events: Iterable[Mapping[str, Any]]) -> dict[str, Step]:
    """Each resource step the update ran, with when it started and ended; unchanged ones are left out."""
    started: dict[str, int] = {}
    done: dict[str, Step] = {}
    for event in events:
        for kind in ("resourcePreEvent", "resOutputsEvent", "resOpFailedEvent"):
            if kind not in event:
                continue
            metadata = event[kind]["metadata"]
            if metadata.get("op") == "same":
                continue
            urn, stamp = metadata["urn"], int(event["timestamp"])
            if kind == "resourcePreEvent":
                started[urn] = stamp
            elif urn in started:
                done[urn] = Step(urn, started[urn], stamp)
    return done


def last_to_finish(candidates: Iterable[Step]) -> Step | None:
    """The step that ended last (the longer one of a tie: the engine stamps whole seconds)."""
    return max(candidates, key=lambda step: (step.end, step.seconds), default=None)


def critical_path(ran: Mapping[str, Step], dependencies: Mapping[str, Iterable[str]]) -> list[Step]:
    """The chain of steps that decided when the update ended, first step first."""
    path: list[Step] = []
    step = last_to_finish(ran.values())
    while step is not None:
        path.append(step)
        step = last_to_finish(ran[urn] for urn in dependencies.get(step.urn, ()) if urn in ran)
    return path[::-1]


def update_span(events: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    stamps = [int(event["timestamp"]) for event in events if "timestamp" in event]
    return min(stamps), max(stamps)


def report(events: list[dict[str, Any]], dependencies: Mapping[str, Iterable[str]], longest: int = 8) -> str:
    """The profile of the custom resources `dependencies` names (components and the stack only
    group their children, whose steps are counted)."""
    ran = {urn: step for urn, step in steps(events).items() if urn in dependencies}
    first, last = update_span(events)
    chain = critical_path(ran, dependencies)
    lines = [f"event stream: {last - first} s from the first event to the last, {len(ran)} resource steps"]
    if chain:
        start = min(step.start for step in ran.values())
        lines.append(f"  before the first step: {start - first} s (program start, config, preflight reads)")
        lines.append("  critical path (s, to within a second):")
        lines += [f"    {step.seconds:4d}  {step.name}" for step in chain]
        lines.append(f"  after the last step: {last - chain[-1].end} s")
    slowest = sorted(ran.values(), key=lambda step: -step.seconds)[:longest]
    lines.append("  longest steps (s): " + ", ".join(f"{step.name} {step.seconds}" for step in slowest))
    return "\n".join(lines)
