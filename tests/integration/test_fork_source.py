"""The gpu-fractioning chart from its fork's pinned commit, under the real engine, and a fresh machine.

The fork is the stand-in gpu-fractioning fork (tests/integration/stand_in_forks.py), whose pull
request ref carries the stand-in chart at the fork's chart path (operator/charts). Images are not
built here (`forks.images: prebuilt`); tests/integration/test_fork_supply.py builds them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from components.forks.recipes import GPU_FRACTIONING
from tests.integration.conftest import leftovers
from tests.integration.stand_in_forks import git, make_stand_in_fork
from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import Workspace, kubectl_json

pytestmark = pytest.mark.integration


def test_a_fresh_machine_checks_the_fork_out_again_and_sees_no_changes(tmp_path: Path) -> None:
    fork = make_stand_in_fork(tmp_path, GPU_FRACTIONING)
    commit = fork.commits["pinned"]
    workspace = Workspace.create(tmp_path / "stack")
    config = a100_config()
    del config["gpuFractioning"]  # the chart comes from the fork checkout
    config["forks"] = {**config["forks"], "gpuFractioning": fork.pin()}
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
