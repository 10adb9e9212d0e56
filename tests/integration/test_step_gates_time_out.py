"""Each stand-in operator that never does its work fails its step's gate, under the real engine,
before the next step creates anything (the slow operators are test_step_gates.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import leftovers, stand_in_operators
from tests.integration.test_step_gates import exists, new_a100, patched_by_the_stack

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("operator", "section", "missing", "next_step"),
    [
        ("gpu-operator", "gpuOperator", "runtime-class: RuntimeClass nvidia not found", ("namespace", "kai-scheduler")),
        ("kai-operator", "kai", "deployments: not created yet: admission", ("namespace", "gpu-fractioning")),
        (
            "kai-webhooks",
            "kai",
            "kai-queue-validation-v2 does not answer: a dry-run create of queues was refused: Internal error "
            'occurred: failed calling webhook "queue-validation.kai.scheduler"',
            ("namespace", "gpu-fractioning"),
        ),
        (
            "gpu-fractioning",
            "gpuFractioning",
            "daemonsets: gpu-fractioning-mpsd not created yet",
            ("pod", "fraction-smoke-a"),
        ),
    ],
    ids=["gpu-operator", "kai", "kai-webhooks", "gpu-fractioning"],
)
def test_an_operator_that_never_works_fails_its_gate_before_the_next_step(
    tmp_path: Path, operator: str, section: str, missing: str, next_step: tuple[str, str]
) -> None:
    workspace = new_a100(tmp_path, "never", **{section: {"readyTimeoutSeconds": 10}})
    try:
        with stand_in_operators(**{operator.replace("-", "_"): "never"}):
            result = workspace.pulumi("up", "--yes", "--skip-preview", stack="never", check=False, timeout=900)
            assert result.returncode != 0, "a gate that does not hold must fail the update"
            assert f"{section}.readyTimeoutSeconds is 10" in result.output
            assert "the next step was not started" in result.output
            assert missing in result.output, result.output[-4000:]
            assert "Traceback" not in result.output, "a cluster that is not ready is a finding, not a crash"
            assert not exists(*next_step), f"nothing of the next step may exist: {' '.join(next_step)}"
            if operator == "kai-webhooks":
                assert not patched_by_the_stack("default-queue", "default-parent-queue"), (
                    "no kept Queue may be patched before KAI's webhooks answer"
                )
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="never", check=False, timeout=900)
    assert leftovers() == {}
