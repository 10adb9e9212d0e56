"""Preparing a fork's tree with real git against a local repository shaped like GitHub's: the pinned
commit is reachable only from the pull request's head ref."""

from __future__ import annotations

import fcntl
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from components.config.model import ForkPin
from components.forks.recipes import KAI_SCHEDULER
from components.forks.source import SourceError, fork_tree, prepare_fork_source, run

PULL_REQUEST = 2368


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class Upstream:
    """A bare repository with two commits on refs/pull/<n>/head and none on any branch."""

    url: str
    first: str
    second: str
    author: Path


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    work = tmp_path / "author"
    chart = work / KAI_SCHEDULER.chart_path
    chart.mkdir(parents=True)
    git(work, "init", "-q")
    git(work, "config", "user.email", "dev@example.com")
    git(work, "config", "user.name", "dev")
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kai-scheduler\nversion: 0.0.1\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "first")
    first = git(work, "rev-parse", "HEAD")
    (chart / "values.yaml").write_text("global: {}\n")
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", "second")
    second = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "KAI-Scheduler.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(work, "push", "-q", str(bare), f"HEAD:refs/pull/{PULL_REQUEST}/head")
    return Upstream(str(bare), first, second, work)


@dataclass
class Recorder:
    """Runs git for real and records every command; stands in for helm by writing the archive
    `helm dependency build` would."""

    commands: list[list[str]] = field(default_factory=list)

    def __call__(self, command: Sequence[str], cwd: Path) -> str:
        self.commands.append(list(command))
        if command[0] == "helm":
            charts = cwd / command[-1] / "charts"  # as helm resolves it: against its working directory
            charts.mkdir()
            (charts / "crds-0.0.1.tgz").write_bytes(b"")
            return ""
        return run(command, cwd)

    def ran(self, *words: str) -> int:
        return sum(command[: len(words)] == list(words) for command in self.commands)


def pin(upstream: Upstream, commit: str) -> ForkPin:
    return ForkPin(repository=upstream.url, pull_request=PULL_REQUEST, commit=commit)


def test_a_fresh_machine_gets_the_pinned_commit_from_the_pull_request(upstream: Upstream, tmp_path: Path) -> None:
    recorder = Recorder()
    source = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path / "forks"), recorder)
    assert git(source.path, "rev-parse", "HEAD") == upstream.first, "the pin, not the pull request's newest commit"
    assert source.path == tmp_path / "forks" / "KAI-Scheduler" / upstream.first[:12]
    assert source.chart_path == source.path / "deployments" / "kai-scheduler"
    assert (source.chart_path / "Chart.yaml").exists()
    assert recorder.ran("helm", "dependency", "build") == 1


def test_the_default_relative_workdir_works_from_the_project_directory(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    source = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), ".forks", Recorder())
    assert source.chart_path == Path(".forks", "KAI-Scheduler", upstream.first[:12], "deployments", "kai-scheduler")
    assert list((source.chart_path / "charts").glob("*.tgz")), "helm ran on the chart, not on a path below the tree"


def test_a_tree_already_at_the_pin_is_left_alone(upstream: Upstream, tmp_path: Path) -> None:
    prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    again = Recorder()
    prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), again)
    assert again.ran("git", "fetch") == 0, "no network when the tree is at the pin"
    assert again.ran("helm") == 0, "the chart's dependency archives are already there"


def test_each_pin_gets_its_own_tree_so_stacks_do_not_move_each_other(upstream: Upstream, tmp_path: Path) -> None:
    first = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    second = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.second), str(tmp_path), Recorder())
    assert first.path != second.path
    assert (git(first.path, "rev-parse", "HEAD"), git(second.path, "rev-parse", "HEAD")) == (
        upstream.first,
        upstream.second,
    )
    assert (second.chart_path / "values.yaml").exists() and not (first.chart_path / "values.yaml").exists()


def test_local_edits_and_stray_files_are_refused_naming_the_tree(upstream: Upstream, tmp_path: Path) -> None:
    source = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    (source.chart_path / "Chart.yaml").write_text("apiVersion: v2\nname: edited\nversion: 9.9.9\n")
    with pytest.raises(SourceError, match="has local changes") as raised:
        prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    assert str(source.path) in str(raised.value)
    git(source.path, "checkout", "-q", "--", ".")
    (source.chart_path / "templates").mkdir()
    (source.chart_path / "templates" / "extra.yaml").write_text("kind: ConfigMap\n")
    with pytest.raises(SourceError, match="extra.yaml"):
        prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())


def test_the_charts_dependency_archives_are_the_only_untracked_files_allowed(
    upstream: Upstream, tmp_path: Path
) -> None:
    source = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    assert list((source.chart_path / "charts").glob("*.tgz")), "the recorder wrote an archive, as helm would"
    prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())


def test_a_force_pushed_pull_request_still_yields_the_pinned_commit(upstream: Upstream, tmp_path: Path) -> None:
    # The pull request now points elsewhere; the host still serves the pinned commit by its SHA.
    git(upstream.author, "push", "-q", upstream.url, f"{upstream.first}:refs/heads/kept")
    git(upstream.author, "checkout", "-q", "--orphan", "rewritten")
    git(upstream.author, "-c", "user.email=d@example.com", "-c", "user.name=d", "commit", "-q", "-m", "rewritten")
    git(upstream.author, "push", "-q", "--force", upstream.url, f"HEAD:refs/pull/{PULL_REQUEST}/head")
    source = prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
    assert git(source.path, "rev-parse", "HEAD") == upstream.first


def test_a_commit_the_host_does_not_have_is_a_clear_error(upstream: Upstream, tmp_path: Path) -> None:
    missing = "0" * 40
    with pytest.raises(SourceError, match=f"git fetch -q .* {missing}"):
        prepare_fork_source(KAI_SCHEDULER, pin(upstream, missing), str(tmp_path), Recorder())


def test_an_unreachable_repository_is_a_clear_error(tmp_path: Path) -> None:
    gone = ForkPin(repository=str(tmp_path / "gone.git"), pull_request=PULL_REQUEST, commit="1" * 40)
    with pytest.raises(SourceError, match="git fetch"):
        prepare_fork_source(KAI_SCHEDULER, gone, str(tmp_path / "forks"), Recorder())


def test_a_workdir_that_cannot_be_created_is_a_clear_error(upstream: Upstream, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the workdir should be")
    with pytest.raises(SourceError, match="cannot create"):
        prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path / "taken"), Recorder())


def test_a_second_run_on_the_same_machine_waits_for_the_first(upstream: Upstream, tmp_path: Path) -> None:
    tree = fork_tree(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path))
    tree.parent.mkdir(parents=True)
    done = threading.Event()

    def second_run() -> None:
        prepare_fork_source(KAI_SCHEDULER, pin(upstream, upstream.first), str(tmp_path), Recorder())
        done.set()

    with open(tree.parent / f"{tree.name}.lock", "w") as held:  # another stack's preview holds the tree
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = threading.Thread(target=second_run)
        waiting.start()
        assert not done.wait(0.5), "it must not touch the tree while another run holds it"
    waiting.join(timeout=30)
    assert done.is_set(), "it proceeds once the other run is done"
