"""The cold-up profile the engine_vs_helm benchmark prints, from an engine event stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.event_profile import critical_path, dependencies_from_export, read_events, report, steps

PREFIX = "urn:pulumi:dev::kai-gpu-fractions::kubernetes:helm.sh/v3:Release::"


def event(kind: str, name: str, second: int, op: str = "create") -> dict[str, Any]:
    return {"timestamp": 1_700_000_000 + second, kind: {"metadata": {"op": op, "urn": PREFIX + name}}}


def ran(name: str, start: int, end: int, op: str = "create") -> list[dict[str, Any]]:
    return [event("resourcePreEvent", name, start, op), event("resOutputsEvent", name, end, op)]


# nvml-mock (0-2) -> kai (2-9) -> pods (9-10); labels (0-5) also feed the pods; provider unchanged;
# the lab component groups nvml-mock and labels; the workloads component, which holds the pods,
# waits for kai and the whole lab.
EVENTS = [
    {"timestamp": 1_699_999_997, "preludeEvent": {}},
    *ran("lab", 0, 5),
    *ran("nvml-mock", 0, 2),
    *ran("labels", 0, 5),
    *ran("provider", 0, 0, op="same"),
    *ran("kai", 2, 9),
    *ran("pods", 9, 10),
    {"timestamp": 1_700_000_011, "summaryEvent": {}},
]
EXPORT = {
    "deployment": {
        "resources": [
            {"urn": PREFIX + "lab", "custom": False},
            {"urn": PREFIX + "nvml-mock", "custom": True, "parent": PREFIX + "lab"},
            {"urn": PREFIX + "labels", "custom": True, "parent": PREFIX + "lab"},
            {"urn": PREFIX + "provider", "custom": True},
            {"urn": PREFIX + "kai", "custom": True, "dependencies": [PREFIX + "nvml-mock", PREFIX + "provider"]},
            {"urn": PREFIX + "workloads", "custom": False, "dependencies": [PREFIX + "kai", PREFIX + "lab"]},
            {"urn": PREFIX + "pods", "custom": True, "parent": PREFIX + "workloads"},
        ]
    }
}
DEPENDENCIES = dependencies_from_export(EXPORT)


def test_a_child_waits_for_what_its_component_waits_for_and_a_component_for_its_children() -> None:
    assert DEPENDENCIES[PREFIX + "pods"] == {PREFIX + "kai", PREFIX + "nvml-mock", PREFIX + "labels"}
    assert DEPENDENCIES[PREFIX + "nvml-mock"] == set()
    assert PREFIX + "lab" not in DEPENDENCIES, "a component has no step of its own"


def test_each_step_runs_from_its_pre_event_to_its_outputs_and_unchanged_ones_are_left_out() -> None:
    found = steps(EVENTS)
    assert {step.name: step.seconds for step in found.values()} == {
        "lab": 5,
        "nvml-mock": 2,
        "labels": 5,
        "kai": 7,
        "pods": 1,
    }


def test_the_critical_path_follows_the_dependency_that_finished_last() -> None:
    assert [step.name for step in critical_path(steps(EVENTS), DEPENDENCIES)] == ["nvml-mock", "kai", "pods"]


def test_a_failed_step_ends_at_its_failure() -> None:
    failed = [*ran("nvml-mock", 0, 2), event("resourcePreEvent", "kai", 2), event("resOpFailedEvent", "kai", 30)]
    assert [(s.name, s.seconds) for s in critical_path(steps(failed), DEPENDENCIES)] == [("nvml-mock", 2), ("kai", 28)]


def test_the_report_accounts_for_the_time_before_and_after_the_steps() -> None:
    text = report(EVENTS, DEPENDENCIES)
    assert "14 s from the first event to the last, 4 resource steps" in text
    assert "before the first step: 3 s" in text
    assert "after the last step: 1 s" in text
    assert "longest steps (s): kai 7, labels 5, nvml-mock 2, pods 1" in text


def test_the_stream_is_read_whether_one_event_per_line_or_pretty_printed(tmp_path: Path) -> None:
    stream = tmp_path / "events"
    stream.write_text(json.dumps(EVENTS[0]) + "\n" + "\n".join(json.dumps(e, indent=2) for e in EVENTS[1:]) + "\n")
    assert read_events(stream) == EVENTS
