"""The processes a test tier starts, found by working directory and session rather than command
line: a provider plugin or dynamic provider that a killed `pulumi` run orphans names neither the
test nor its workspace in its arguments, but runs in the workspace and keeps the test's session."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# What Linux appends to a process's cwd link once the directory is removed (pytest prunes old tmp dirs).
DELETED = " (deleted)"


@dataclass(frozen=True)
class Process:
    pid: int
    # Clock ticks after boot at which it started: with the pid, it names one process, not a reused pid.
    started: int
    parent: int
    group: int
    session: int
    state: str
    cwd: Path | None
    command: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.started)

    def runs_under(self, directory: Path) -> bool:
        """Whether its working directory is `directory` or inside it."""
        root = directory.resolve()
        return self.cwd is not None and (self.cwd == root or root in self.cwd.parents)


def read_process(pid: int) -> Process | None:
    """The process, or None when it is gone (or a zombie, which holds nothing but its pid)."""
    entry = PROC / str(pid)
    try:
        stat = (entry / "stat").read_text()
        command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    # The command name in parentheses may hold spaces and parentheses: the fields follow the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    state, parent, group, session, started = fields[0], int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    if state in ("Z", "X"):
        return None
    try:
        link = os.readlink(entry / "cwd")
        cwd: Path | None = Path(link.removesuffix(DELETED))
    except OSError:
        cwd = None
    return Process(pid, started, parent, group, session, state, cwd, command)


def running() -> list[Process]:
    """Every live process but this one."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and (process := read_process(int(entry.name))):
            found.append(process)
    return found


def under(directory: Path) -> list[Process]:
    """Live processes working in `directory` or below it."""
    return [p for p in running() if p.runs_under(directory)]


def started_since(before: set[tuple[int, int]], directory: Path) -> list[Process]:
    """Processes that were not running at `before` and either work under `directory`, or are in this
    process's session and are this process's descendants or orphans (what it started and did not
    put in a session of its own). A new child of a process that ran before (kwok running a command
    for `kubectl exec`) is that process's, not this one's."""
    session, live = os.getsid(0), running()
    by_pid = {p.pid: p for p in live}
    ours = []
    for process in live:
        if process.key in before or _is_ancestor(process.pid):
            continue
        if process.runs_under(directory) or (process.session == session and _started_here(process, by_pid, before)):
            ours.append(process)
    return ours


def _started_here(process: Process, by_pid: dict[int, Process], before: set[tuple[int, int]]) -> bool:
    """Whether the first ancestor that ran before `before` is this process (or none is: an orphan)."""
    current = by_pid.get(process.parent)
    while current is not None and current.key not in before:
        current = by_pid.get(current.parent)
    return current is None or current.pid == os.getpid() or current.pid <= 1


def reap(processes: list[Process], timeout: float = 15) -> list[Process]:
    """SIGKILLs each process (and each process group a process leads) and waits until none is
    alive; returns those still alive at the timeout."""
    for process in processes:
        current = read_process(process.pid)
        if current is None or current.key != process.key:
            continue  # gone already, or the pid now names another process
        try:
            if process.group == process.pid and process.group != os.getpgid(0):
                os.killpg(process.group, signal.SIGKILL)
            else:
                os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while alive := [p for p in processes if (now := read_process(p.pid)) is not None and now.key == p.key]:
        if time.monotonic() > deadline:
            return alive
        time.sleep(0.1)
    return []


def fail_on_leftovers(before: set[tuple[int, int]], directory: Path) -> None:
    """Kills what started since `before` (see started_since) and is still alive, then fails naming it."""
    leaked = started_since(before, directory)
    survivors = reap(leaked)
    if leaked:
        killed = "killed now, but some survived" if survivors else "killed now"
        raise AssertionError(f"processes the tests started outlived them ({killed}):\n{describe(leaked)}")


def describe(processes: list[Process]) -> str:
    return "\n".join(f"  pid {p.pid} (group {p.group}) in {p.cwd}: {p.command[:200]}" for p in processes)


def _is_ancestor(pid: int) -> bool:
    current = os.getpid()
    while current > 1:
        try:
            stat = (PROC / str(current) / "stat").read_text()
        except OSError:
            return False
        current = int(stat[stat.rindex(")") + 2 :].split()[1])
        if current == pid:
            return True
    return False
