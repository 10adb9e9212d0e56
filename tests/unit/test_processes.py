"""Finding the processes a test started by where they work and which session they are in, with real
child processes: what the integration tier reaps after killing `pulumi up`, and what fails it."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import processes
from tests.integration.workspace import Workspace


@pytest.fixture
def spawned() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children a test starts; any left alive are killed and waited for afterwards."""
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        child.kill()
        child.wait(timeout=10)


def start(children: list[subprocess.Popen[bytes]], *command: str, cwd: Path, own_session: bool) -> int:
    child = subprocess.Popen(command, cwd=cwd, start_new_session=own_session, stdout=subprocess.PIPE)
    children.append(child)
    return child.pid


def orphan(children: list[subprocess.Popen[bytes]], cwd: Path) -> int:
    """A `sleep` whose parent has exited, as a provider plugin is once `pulumi` is killed: reparented,
    in a session of its own, with a command line that names neither the test nor its directory."""
    parent = subprocess.Popen(
        ["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], cwd=cwd, start_new_session=True, stdout=subprocess.PIPE
    )
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    parent.wait(timeout=10)
    return pid


def alive(pid: int) -> bool:
    return processes.read_process(pid) is not None


def test_kill_strays_reaps_orphans_that_work_in_the_project_whatever_their_command_line(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    workspace = Workspace(tmp_path / "project", tmp_path / "state")
    (workspace.root / "sub").mkdir(parents=True)
    direct = start(spawned, "sleep", "301", cwd=workspace.root, own_session=True)
    nested = start(spawned, "sleep", "302", cwd=workspace.root / "sub", own_session=True)
    orphaned = orphan(spawned, workspace.root)
    elsewhere = start(spawned, "sleep", "303", cwd=tmp_path, own_session=True)
    killed = workspace.kill_strays()
    assert sorted(killed) == sorted([direct, nested, orphaned]), "every process working in the project, only those"
    assert not any(alive(pid) for pid in killed), "kill_strays returns only once they are gone"
    assert alive(elsewhere), "a process working outside the project is not the project's"


def test_a_process_whose_directory_was_removed_is_still_found_there(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    doomed = tmp_path / "pytest-tmp" / "project"
    doomed.mkdir(parents=True)
    pid = orphan(spawned, doomed)
    shutil.rmtree(tmp_path / "pytest-tmp")
    assert [p.pid for p in processes.under(tmp_path / "pytest-tmp")] == [pid], "pytest prunes old tmp folders"
    assert processes.reap(processes.under(tmp_path)) == []
    assert not alive(pid)


def test_the_tier_fails_naming_what_it_started_and_left_running_then_kills_it(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    earlier = start(spawned, "sleep", "304", cwd=tmp_path, own_session=True)
    before = {p.key for p in processes.running()}
    in_tmp = orphan(spawned, tmp_path)
    in_session = start(spawned, "sleep", "305", cwd=Path("/"), own_session=False)
    unrelated = start(spawned, "sleep", "306", cwd=Path("/"), own_session=True)
    with pytest.raises(AssertionError) as failure:
        processes.fail_on_leftovers(before, tmp_path)
    message = str(failure.value)
    assert f"pid {in_tmp} " in message and f"pid {in_session} " in message, message
    assert f"pid {earlier} " not in message and f"pid {unrelated} " not in message, message
    assert not alive(in_tmp) and not alive(in_session), "the run must not leave them behind either"
    assert alive(earlier) and alive(unrelated)


def test_a_new_child_of_a_process_that_ran_before_is_that_processs(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    """As kwok, started with the control plane, runs a command for each `kubectl exec` into a fake pod."""
    server = start(spawned, "sh", "-c", "sleep 0.5; sleep 307", cwd=Path("/"), own_session=False)
    time.sleep(0.1)
    before = {p.key for p in processes.running()}
    ours = start(spawned, "sleep", "308", cwd=Path("/"), own_session=False)
    deadline = time.monotonic() + 10
    while not (forked := [p for p in processes.running() if p.parent == server and "307" in p.command]):
        assert time.monotonic() < deadline, "the server forks its second command"
        time.sleep(0.05)
    try:
        leaked = {p.pid for p in processes.started_since(before, tmp_path)}
        assert forked[0].pid not in leaked, "a process that ran before owns what it starts"
        assert server not in leaked and ours in leaked
    finally:
        processes.reap(forked)


def test_the_check_passes_when_everything_the_tests_started_has_ended(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    before = {p.key for p in processes.running()}
    finished = subprocess.run(["sh", "-c", "sleep 0.1"], cwd=tmp_path, check=True)
    assert finished.returncode == 0
    time.sleep(0.05)
    processes.fail_on_leftovers(before, tmp_path)
