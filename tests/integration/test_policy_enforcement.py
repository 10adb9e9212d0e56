"""The policy pack under the real engine: deliberately violating programs are blocked at preview."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.workspace import REPO, Workspace

pytestmark = pytest.mark.integration
VIOLATING = Path(__file__).parent / "violating"


@pytest.mark.parametrize(
    ("program", "policy"),
    [
        ("root_fraction_pod.py", "gpu-pod-require-non-root-fractions"),
        ("gpu_deployment_without_runtime_class.py", "gpu-pod-require-runtime-class"),
        ("mismatched_fork_tags.py", "kai-fork-require-paired-image-tags"),
    ],
)
def test_a_violating_program_is_blocked_at_preview(tmp_path: Path, program: str, policy: str) -> None:
    workspace = Workspace.create(tmp_path, program=VIOLATING / program)
    workspace.pulumi("stack", "init", "violating")
    result = workspace.pulumi("preview", "--policy-pack", str(REPO / "policy"), stack="violating", check=False)
    assert result.returncode != 0, f"{program} must be blocked:\n{result.output[-3000:]}"
    assert policy in result.output, f"the violation must name {policy}:\n{result.output[-3000:]}"
    assert "mandatory" in result.output
