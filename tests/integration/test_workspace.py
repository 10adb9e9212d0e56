"""The engine's environment in the tier: what a `pulumi` call writes outside its project goes with
its test, not into the toolchain's PULUMI_HOME that every run and clone shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.workspace import Workspace, require_env

pytestmark = pytest.mark.integration


def test_a_pulumi_call_writes_its_log_and_stack_selection_beside_the_tests_state(workspace: Workspace) -> None:
    shared = Path(require_env("PULUMI_HOME"))
    shared_logs = shared / "logs"
    before = set(shared_logs.iterdir()) if shared_logs.exists() else set()
    workspace.pulumi("stack", "init", "dev")
    after = set(shared_logs.iterdir()) if shared_logs.exists() else set()
    home = workspace.state.parent / "pulumi-home"
    logs = [p.name for p in (home / "logs").iterdir()]
    # Named for the command as the CLI resolves it: `stack init` is an alias of `stack new`.
    assert any(name.startswith("pulumi-") and name.endswith("-stack_new.log") for name in logs), logs
    assert list((home / "workspaces").iterdir()), "the selected stack is recorded in the test's own home"
    assert (home / "plugins").resolve() == (shared / "plugins").resolve(), "the plugins are the toolchain's"
    assert not [p.name for p in after - before if p.name.endswith("-stack_new.log")], "nothing in the shared home"
