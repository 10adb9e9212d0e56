"""A fork's source tree at its pinned commit, made ready while the program runs, in preview too.

It is not a resource: a tree under `forks.workdir` belongs to the machine that runs Pulumi, and a
fresh CI runner or laptop has none. So every run makes sure it is there and at the pin (a no-op
when it is), the way Helm fetches a remote chart on every preview. That also lets a preview render
the pinned chart, so a pin bump shows its real chart diff.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from components.config.model import ForkPin
from components.forks.recipes import ForkRecipe

# Runs a command in a directory and returns its stdout; raises SourceError when it fails.
Runner = Callable[[Sequence[str], Path], str]


class SourceError(Exception):
    """The fork's tree cannot be made ready; the message says which and how to fix it."""


@dataclass(frozen=True)
class ForkSource:
    path: Path
    chart_path: Path


def run(command: Sequence[str], cwd: Path) -> str:
    try:
        done = subprocess.run(
            list(command),
            cwd=cwd,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=900,
            check=False,
            # A preview must fail, not wait for a password, when a repository needs credentials.
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SourceError(f"`{' '.join(command)}` could not run: {error}") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()[-600:]
        raise SourceError(f"`{' '.join(command)}` failed in {cwd}: {output}")
    return done.stdout


def fork_tree(recipe: ForkRecipe, pin: ForkPin, workdir: str) -> Path:
    """One tree per pinned commit, so stacks pinning different commits never move each other's.

    Relative to the project, as configured: an absolute path would differ between machines and
    show as a change of every release and build on each of them.
    """
    return Path(workdir).expanduser() / recipe.checkout_dir / pin.commit[:12]


def prepare_fork_source(recipe: ForkRecipe, pin: ForkPin, workdir: str, runner: Runner = run) -> ForkSource:
    """The fork checked out detached at `pin.commit` with its chart's dependencies built; a tree
    with local changes is refused. Runs of other stacks on this machine wait for each other."""
    root = fork_tree(recipe, pin, workdir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root.parent / f"{root.name}.lock", "w")  # noqa: SIM115 - held until the tree is ready
    except OSError as error:
        raise SourceError(f"cannot create {root}: {error}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _prepare(root, recipe, pin, runner)


def _prepare(root: Path, recipe: ForkRecipe, pin: ForkPin, runner: Runner) -> ForkSource:
    if not (root / ".git").exists():
        runner(["git", "init", "-q", "."], root)
    checked_out = False
    if _head(root, runner) != pin.commit:
        _refuse_local_changes(root, recipe, runner)
        _fetch(root, pin, runner)
        runner(["git", "checkout", "-q", "--detach", pin.commit], root)
        if _head(root, runner) != pin.commit:
            raise SourceError(f"{root} is not at {pin.commit} after the checkout")
        checked_out = True
    # Local edits would be built into images and charts that claim to be the pinned commit.
    _refuse_local_changes(root, recipe, runner)
    chart = root / recipe.chart_path
    if recipe.chart_needs_dependencies and (checked_out or not any((chart / "charts").glob("*.tgz"))):
        # Helm refuses a chart whose declared dependencies are missing, even when disabled.
        runner(["helm", "dependency", "build", recipe.chart_path], root)
    return ForkSource(root, chart)


def _fetch(root: Path, pin: ForkPin, runner: Runner) -> None:
    # The pinned commit may be on no branch: the pull request's head ref carries it. After a
    # force-push it no longer does, but the host may still serve the commit by its SHA.
    # `--`: whatever the repository says, git reads it as a repository, never as an option.
    runner(["git", "fetch", "-q", "--", pin.repository, f"pull/{pin.pull_request}/head"], root)
    try:
        runner(["git", "cat-file", "-e", f"{pin.commit}^{{commit}}"], root)
    except SourceError:
        runner(["git", "fetch", "-q", "--", pin.repository, pin.commit], root)


def _head(root: Path, runner: Runner) -> str:
    try:
        return runner(["git", "rev-parse", "--verify", "-q", "HEAD"], root).strip()
    except SourceError:
        return ""  # a fresh repository has no commit yet


def _refuse_local_changes(root: Path, recipe: ForkRecipe, runner: Runner) -> None:
    # The only files allowed that git does not know: the dependency archives `helm dependency
    # build` writes into the chart's charts/ directory.
    generated = f"?? {recipe.chart_path}/charts/"
    status = runner(["git", "status", "--porcelain", "--untracked-files=all"], root).splitlines()
    changes = [line for line in status if line.strip() and not line.startswith(generated)]
    if changes:
        raise SourceError(
            f"{root} has local changes ({changes[0].strip()} …): commit or discard them "
            "(git stash, git clean), or point forks.workdir at a clean directory"
        )
