"""The engine's environment in the tier: what a `pulumi` call writes outside its project goes with
its test, not into the toolchain's PULUMI_HOME that every run and clone shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.workspace import Workspace, require_env

pytestmark = pytest.mark.integration


def test_a_pulumi_call_writes_its_log_and_stack_selection_beside_the_tests_state(workspace: Workspace) -> None:
    workspace.pulumi("stack", "init", "dev")
    home = workspace.state.parent / "pulumi-home"
    logs = [p.name for p in (home / "logs").iterdir()]
    # Named for the command as the CLI resolves it: `stack init` is an alias of `stack new`.
    assert any(name.startswith("pulumi-") and name.endswith("-stack_new.log") for name in logs), logs
    assert list((home / "workspaces").iterdir()), "the selected stack is recorded in the test's own home"
    shared = Path(require_env("PULUMI_HOME"))
    assert (home / "plugins").resolve() == (shared / "plugins").resolve(), "the plugins are the toolchain's"
    assert not [name for name in logs if (shared / "logs" / name).exists()]
