"""Each stand-in operator that never does its work fails its step's gate, under the real engine,
before the next step creates anything (the slow operators are test_step_gates.py's).

One stack meets the four in the guide's order, as a team whose install stops at one step after
another would: each failed `up` leaves the steps before it installed and the next one untouched, and
the following case's `up` takes the stack on from there, its preflight run while the operator the
last case held back is still at work (the GPU Operator's labels not there yet). Each case also holds
on a fresh stack (`-k` runs one alone); sharing one saves three installs and three destroys.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import leftovers, stand_in_operators
from tests.integration.test_fork_stack import a100_config
from tests.integration.test_step_gates import exists, new_a100, patched_by_the_stack
from tests.integration.workspace import Workspace

pytestmark = pytest.mark.integration

STACK = "never"


@pytest.fixture(scope="module")
def never(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = new_a100(tmp_path_factory.mktemp(STACK), STACK)
    yield workspace
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, check=False, timeout=900)


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
    never: Workspace, operator: str, section: str, missing: str, next_step: tuple[str, str]
) -> None:
    config = a100_config()
    # Only this step's gate waits 10 s: the steps before it get their usual time.
    never.write_config(STACK, {**config, section: {**config.get(section, {}), "readyTimeoutSeconds": 10}})
    with stand_in_operators(**{operator.replace("-", "_"): "never"}):
        result = never.pulumi("up", "--yes", "--skip-preview", stack=STACK, check=False, timeout=900)
        assert result.returncode != 0, "a gate that does not hold must fail the update"
        assert f"{section}.readyTimeoutSeconds is 10" in result.output, result.output[-4000:]
        assert "the next step was not started" in result.output
        assert missing in result.output, result.output[-4000:]
        assert "Traceback" not in result.output, "a cluster that is not ready is a finding, not a crash"
        assert not exists(*next_step), f"nothing of the next step may exist: {' '.join(next_step)}"
        if operator == "kai-webhooks":
            assert not patched_by_the_stack("default-queue", "default-parent-queue"), (
                "no kept Queue may be patched before KAI's webhooks answer"
            )


def test_destroy_after_the_failed_updates_leaves_nothing(never: Workspace) -> None:
    never.pulumi("destroy", "--yes", "--skip-preview", stack=STACK, timeout=900)
    assert leftovers() == {}
