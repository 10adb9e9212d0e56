"""An `up` of the a100 stack killed mid-run under the real engine, the documented recovery, and the
re-run that converges: a module of its own so that another worker runs it beside test_fork_stack.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import leftovers
from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import REPO, Workspace, engine_environment, kill_group, kubectl, wait_until

pytestmark = pytest.mark.integration


def test_an_up_killed_mid_run_converges_on_the_next_run(tmp_path: Path) -> None:
    workspace = Workspace.create(tmp_path)
    workspace.new_stack("killed", a100_config(), secrets={"registryPassword": PASSWORD})
    try:
        run = workspace.start("up", "--yes", "--skip-preview", stack="killed")
        try:
            wait_until(
                lambda: kubectl("-n", "kai-scheduler", "get", "deploy", "binder", check=False).returncode == 0,
                timeout=600,
                what="the KAI release to be mid-install",
            )
        finally:
            kill_group(run)
            workspace.kill_strays()
        # The documented recovery: release the killed run's lock, import what it left pending, re-run.
        workspace.pulumi("cancel", "--yes", stack="killed")
        recovered = subprocess.run(
            [sys.executable, "-m", "tools.recover_interrupted", "--stack", "killed", "--cwd", str(workspace.root)],
            cwd=REPO,
            env=engine_environment(workspace.state),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert recovered.returncode == 0, f"recovery failed:\n{recovered.stdout}{recovered.stderr}"
        rerun = workspace.pulumi("up", "--yes", "--skip-preview", stack="killed", check=False, timeout=1200)
        assert rerun.returncode == 0, (
            f"re-run after SIGKILL did not converge:\n{recovered.stdout}\n{rerun.output[-4000:]}"
        )
        again = workspace.pulumi("preview", "--expect-no-changes", stack="killed", check=False)
        assert again.returncode == 0, f"after the re-run the stack must be converged:\n{again.output[-3000:]}"
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="killed", check=False, timeout=900)
    assert leftovers() == {}, "nothing the killed run created may be orphaned"
