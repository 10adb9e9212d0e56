"""Preflight inside the program: it reads the cluster before anything registers, in preview too."""

from __future__ import annotations

import json
from dataclasses import replace

import pulumi
import pytest

from components.check_specs import preflight_spec
from components.cluster.facts import ClusterFacts
from components.config.load import parse_config
from components.preflight import run as preflight
from components.stack import cluster_access
from tests.unit.harness import PREPARED_CLUSTER, ProgramRunner

A100 = {"registry": {"server": "registry.example.com/team/kai-fork"}}
OWN_OPERATOR_OFF = {**A100, "gpuOperator": {"enabled": False}}


def unprepared() -> ClusterFacts:
    node = PREPARED_CLUSTER.gpu_nodes[0]
    return replace(
        PREPARED_CLUSTER,
        gpu_nodes=[
            replace(node, name="no-memory-label", labels={"nvidia.com/gpu.present": "true"}),
            replace(node, name="old-containerd", container_runtime_version="containerd://1.7.22"),
        ],
        runtime_classes={},
    )


@pytest.mark.parametrize("preview", [True, False])
def test_an_unprepared_cluster_stops_the_program_with_one_line_per_failing_row(
    preview: bool, run_program: ProgramRunner
) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_program(OWN_OPERATOR_OFF, preview=preview, cluster=unprepared())
    report = str(caught.value)
    assert report.startswith("Preflight failed; nothing was changed.")
    assert "no-memory-label" in report and "nvidia.com/gpu.memory" in report
    assert "old-containerd" in report and "1.7.22" in report
    assert "runtime-class" in report
    assert run_program.engine.registrations == [], "preflight runs before any resource is registered"


def test_a_failing_row_can_be_turned_into_a_warning_by_config(run_program: ProgramRunner) -> None:
    cluster = replace(PREPARED_CLUSTER, runtime_classes={})
    config = {**OWN_OPERATOR_OFF, "preflight": {"warnOnly": ["runtime-class"]}}
    _, outputs = run_program(config, cluster=cluster)
    (finding,) = [f for f in outputs["preflight"] if f["check"] == "runtime-class"]
    assert finding["outcome"] == "warn", "the row is reported, not hidden"


def test_preflight_can_be_switched_off(run_program: ProgramRunner) -> None:
    _, outputs = run_program({**OWN_OPERATOR_OFF, "preflight": {"enabled": False}}, cluster=unprepared())
    assert outputs["preflight"] == []


def test_a_lab_that_creates_its_kind_cluster_skips_preflight_because_the_cluster_does_not_exist_yet(
    run_program: ProgramRunner,
) -> None:
    _, outputs = run_program({"profile": "lab"}, cluster=unprepared())
    assert outputs["preflight"] == []


def test_an_unreachable_cluster_is_a_clear_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*_args: object, **_kwargs: object) -> ClusterFacts:
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(preflight, "read_cluster_facts", unreachable)
    config = parse_config({key: json.dumps(value) for key, value in OWN_OPERATOR_OFF.items()})
    spec = preflight_spec(config)
    assert spec is not None, "preflight is on"
    with pytest.raises(pulumi.RunError) as caught:
        preflight.run_preflight(spec, cluster_access(config))
    assert "Preflight could not read the cluster (ConnectionRefusedError: connection refused)" in str(caught.value)
    assert "kai-gpu-fractions:preflight.enabled" in str(caught.value)
