"""The gpu-fractioning chart from its fork's pinned commit, under the real engine, and a fresh machine.

The fork is a local repository whose pull request ref carries the stand-in chart at the fork's
chart path (operator/charts); KAI keeps its stand-in chart directory, because its real chart needs
`helm dependency build` and there is no helm on the test machine.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import leftovers
from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import REPO, Workspace, kubectl_json

pytestmark = pytest.mark.integration

PULL_REQUEST = 147


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def fork_with_stand_in_chart(base: Path) -> tuple[str, str]:
    """A bare repository with the stand-in chart on refs/pull/147/head; returns its path and commit."""
    work = base / "gpu-fractioning"
    shutil.copytree(REPO / "tests" / "fixtures" / "charts" / "gpu-fractioning", work / "operator" / "charts")
    git(work, "init", "-q")
    git(work, "-c", "user.email=dev@example.com", "-c", "user.name=dev", "add", ".")
    git(work, "-c", "user.email=dev@example.com", "-c", "user.name=dev", "commit", "-q", "-m", "stand-in chart")
    bare = base / "gpu-fractioning.git"
    git(base, "init", "-q", "--bare", str(bare))
    git(work, "push", "-q", str(bare), f"HEAD:refs/pull/{PULL_REQUEST}/head")
    return str(bare), git(work, "rev-parse", "HEAD")


def test_a_fresh_machine_checks_the_fork_out_again_and_sees_no_changes(tmp_path: Path) -> None:
    repository, commit = fork_with_stand_in_chart(tmp_path)
    workspace = Workspace.create(tmp_path / "stack")
    config = a100_config()
    del config["gpuFractioning"]  # the chart comes from the fork checkout
    config["forks"] = {
        **config["forks"],
        "gpuFractioning": {"repository": repository, "pullRequest": PULL_REQUEST, "commit": commit},
    }
    workspace.new_stack("fork-chart", config, secrets={"registryPassword": PASSWORD})
    checkout = workspace.root / ".forks" / "kai-gpu-fractioning" / commit[:12]
    try:
        workspace.pulumi("up", "--yes", "--skip-preview", stack="fork-chart", timeout=1200)
        assert git(checkout, "rev-parse", "HEAD") == commit
        state = json.loads(workspace.pulumi("stack", "export", stack="fork-chart").stdout)
        (release,) = [r for r in state["deployment"]["resources"] if r["urn"].endswith("::gpu-fractioning-release")]
        assert release["inputs"]["chart"] == f".forks/kai-gpu-fractioning/{commit[:12]}/operator/charts", (
            "relative to the project"
        )
        operator = kubectl_json("-n", "gpu-fractioning", "get", "deployment", "gpu-fractioning")
        assert operator["spec"]["template"]["spec"]["containers"][0]["image"].endswith(f":smshare-44d1d0a-{commit[:7]}")

        shutil.rmtree(workspace.root / ".forks")  # what a new CI runner or laptop starts with
        workspace.pulumi("preview", "--expect-no-changes", stack="fork-chart")
        assert git(checkout, "rev-parse", "HEAD") == commit, "the preview put the pinned tree back"

        (checkout / "operator" / "charts" / "values.yaml").write_text("tampered: true\n")
        refused = workspace.pulumi("preview", stack="fork-chart", check=False)
        assert refused.returncode != 0
        assert "has local changes" in refused.output and "kai-gpu-fractions:forks.gpuFractioning" in refused.output
        assert "Traceback" not in refused.output
        git(checkout, "checkout", "-q", "--", ".")
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="fork-chart", check=False, timeout=900)
    assert leftovers() == {}, "destroy must leave nothing for the next tests"
