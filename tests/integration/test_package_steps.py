"""The GPU stack's steps as components of their own (examples/yaml-steps), with the real engine
against the local control plane and its stand-in operators: each piece installs its step and is done
when its gate holds, so a program's dependsOn orders the steps as the whole stack does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conftest import leftovers, webhooks_off_the_machine
from tests.integration.consumers import given_the_cluster
from tests.integration.workspace import REPO, Workspace, kubectl_json

pytestmark = pytest.mark.integration
TOKEN = "kai-gpu-fractions:index:"
GATES = (
    "GPU Operator ready: all 5 checks hold",
    "KAI-Scheduler ready: all 5 checks hold",
    "gpu-fractioning node agents ready: all 6 checks hold",
)


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    base = tmp_path_factory.mktemp("yaml-steps")
    workspace = given_the_cluster(Workspace.consumer(base, REPO / "examples" / "yaml-steps", {"name": "yaml"}))
    yield workspace
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack="dev", check=False)


def test_up_installs_each_step_after_the_one_it_depends_on(steps: Workspace) -> None:
    up = steps.pulumi("up", "--yes", "--skip-preview", stack="dev", timeout=1200).output
    held = [up.find(gate) for gate in GATES]
    assert -1 not in held and held == sorted(held), f"each gate holds, in the guide's order: {held}"
    assert "fractional-pod admission policy in force: all 2 checks hold" in up
    outputs = steps.outputs("dev")
    assert outputs["releases"] == {"gpuOperator": "deployed", "kai": "deployed", "agents": "deployed"}
    assert outputs["smokePods"] == ["fraction-smoke-a", "fraction-smoke-b"]
    config = kubectl_json("get", "configs.kai.scheduler", "kai-config")
    assert config["spec"]["global"]["gpuSharingMode"] == "NvFractions"
    assert (
        config["spec"]["binder"]["service"]["image"]["repository"] == "registry.example.com/team/kai-fork/kai-scheduler"
    )
    for pod in outputs["smokePods"]:
        live = kubectl_json("get", "pod", pod)
        assert (live["status"]["phase"], live["spec"]["runtimeClassName"]) == ("Running", "nvidia")
    assert webhooks_off_the_machine() == []
    resources = steps.export("dev")["deployment"]["resources"]
    pieces = {r["urn"]: r["type"].removeprefix(TOKEN) for r in resources if r["type"].startswith(TOKEN)}
    gates = {pieces.get(r["parent"]): r["urn"].rsplit("::", 1)[1] for r in resources if r["type"] == TOKEN + "StepGate"}
    assert gates == {
        "GpuOperator": "gpu-operator-ready",
        "KaiScheduler": "kai-scheduler-ready",
        "GpuFractioning": "gpu-fractioning-ready",
        "AdmissionPolicy": "fraction-admission-ready",
    }, "each step's gate is inside its piece"
    assert not [r["urn"] for r in resources if "pulumi-python" in r["type"]]


def test_a_second_up_changes_nothing(steps: Workspace) -> None:
    steps.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", stack="dev")


def test_destroy_leaves_nothing(steps: Workspace) -> None:
    steps.pulumi("destroy", "--yes", "--skip-preview", stack="dev", timeout=900)
    assert leftovers() == {}
    assert steps.export("dev")["deployment"].get("resources", []) == []
