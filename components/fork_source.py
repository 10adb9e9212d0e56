"""A fork's source tree at its pinned commit, made ready while the program runs, in preview too.

It is not a resource: a tree under `forks.workdir` belongs to the machine that runs Pulumi, and a
fresh CI runner or laptop has none. So every run makes sure it is there and at the pin (a no-op
when it is), the way Helm fetches a remote chart on every preview. That also lets a preview render
the pinned chart, so a pin bump shows its real chart diff.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from components.config import ForkPin
from components.forks import ForkRecipe

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
        done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SourceError(f"`{' '.join(command)}` could not run: {error}") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()[-600:]
        raise SourceError(f"`{' '.join(command)}` failed in {cwd}: {output}")
    return done.stdout


def prepare_fork_source(recipe: ForkRecipe, pin: ForkPin, workdir: str, runner: Runner = run) -> ForkSource:
    """The fork checked out detached at `pin.commit` (fetched from its pull request's head when
    missing) with its chart's dependencies built; a tree with local changes is refused."""
    # Relative to the project, as configured: an absolute path would differ between machines and
    # show as a change of every release and build on each of them.
    root = Path(workdir).expanduser() / recipe.checkout_dir
    chart = root / recipe.chart_path
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".git").exists():
        runner(["git", "init", "-q", "."], root)
    if _head(root, runner) != pin.commit:
        _refuse_local_changes(root, runner)
        # The pinned commit may be on no branch: the pull request's head ref carries it.
        runner(["git", "fetch", "-q", pin.repository, f"pull/{pin.pull_request}/head"], root)
        runner(["git", "checkout", "-q", "--detach", pin.commit], root)
        if _head(root, runner) != pin.commit:
            raise SourceError(f"{root} is not at {pin.commit} after the checkout")
    # Local edits would be built into images and charts that claim to be the pinned commit.
    _refuse_local_changes(root, runner)
    if recipe.chart_needs_dependencies and not any((chart / "charts").glob("*.tgz")):
        # Helm refuses a chart whose declared dependencies are missing, even when disabled.
        runner(["helm", "dependency", "build", str(chart)], root)
    return ForkSource(root, chart)


def _head(root: Path, runner: Runner) -> str:
    try:
        return runner(["git", "rev-parse", "--verify", "-q", "HEAD"], root).strip()
    except SourceError:
        return ""  # a fresh repository has no commit yet


def _refuse_local_changes(root: Path, runner: Runner) -> None:
    # Untracked files are allowed: `helm dependency build` writes the chart's dependency archives.
    changes = runner(["git", "status", "--porcelain", "--untracked-files=no"], root).strip()
    if changes:
        raise SourceError(
            f"{root} has local changes ({changes.splitlines()[0].strip()} …): commit or discard them "
            "(git stash), or point forks.workdir at a clean directory"
        )
