"""STAND-IN forks and the control plane's registry, for running the fork supply chain under the engine.

Each stand-in fork is a local bare git repository shaped like the pinned fork as the program and
the build guide use it: the Makefile's variables and targets (tests/fixtures/forks/), the chart at
the fork's chart path (a copy of the stand-in chart), and a build that writes real OCI images, one
tiny layer naming the commit, pushed with crane. Its history, all reachable from the pull request's
head ref as on GitHub:

- `pinned`: the fork as the stack pins it;
- `bumped`: a later commit, for a pin bump;
- `pushes-nothing` (KAI only): the guide's trap, a build that ignores DOCKER_BUILDX_ADDITIONAL_ARGS,
  so `make build` succeeds and pushes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER, ForkRecipe
from tests.integration.workspace import REPO, require_env

FIXTURES = REPO / "tests" / "fixtures"
BUILD_TOOLS = FIXTURES / "build-tools"
STAND_IN_CHARTS = {KAI_SCHEDULER.key: "kai-scheduler", GPU_FRACTIONING.key: "gpu-fractioning"}
PULL_REQUESTS = {KAI_SCHEDULER.key: 2368, GPU_FRACTIONING.key: 147}
AUTHOR = ["-c", "user.email=stand-in@example.com", "-c", "user.name=stand-in fork"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *AUTHOR, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise AssertionError(f"git {args[0]} failed in {cwd}: {done.stderr}")
    return done.stdout.strip()


@dataclass(frozen=True)
class StandInFork:
    recipe: ForkRecipe
    repository: Path
    commits: dict[str, str]

    def pin(self, commit: str = "pinned") -> dict[str, Any]:
        """The fork's pin as the stack config writes it."""
        return {
            "repository": str(self.repository),
            "pullRequest": PULL_REQUESTS[self.recipe.key],
            "commit": self.commits[commit],
        }


def make_stand_in_fork(base: Path, recipe: ForkRecipe) -> StandInFork:
    work = base / f"{recipe.checkout_dir}-work"
    fixture = FIXTURES / "forks" / STAND_IN_CHARTS[recipe.key]
    work.mkdir(parents=True)
    shutil.copy(fixture / "Makefile", work / "Makefile")
    (work / "hack").mkdir()
    shutil.copy(FIXTURES / "forks" / "stand-in-image.sh", work / "hack" / "stand-in-image.sh")
    shutil.copytree(REPO / "standins" / "charts" / STAND_IN_CHARTS[recipe.key], work / recipe.chart_path)
    (work / ".gitignore").write_text(".stand-in-images/\n")
    (work / "README.md").write_text(f"STAND-IN for the {recipe.key} fork, written for kai-gpu-fractions tests.\n")
    git(work, "init", "-q")
    commits = {"pinned": commit_all(work, "the fork as pinned")}
    (work / "CHANGES.md").write_text("A later commit of the pull request.\n")
    commits["bumped"] = commit_all(work, "a later commit")
    if recipe is KAI_SCHEDULER:
        makefile = work / "Makefile"
        makefile.write_text(makefile.read_text().replace("$(DOCKER_BUILDX_ADDITIONAL_ARGS)", "$(BUILDX_ARGS)"))
        commits["pushes-nothing"] = commit_all(work, "builds without pushing")
    bare = base / f"{recipe.checkout_dir}.git"
    git(base, "init", "-q", "--bare", str(bare))
    git(work, "push", "-q", str(bare), f"HEAD:refs/pull/{PULL_REQUESTS[recipe.key]}/head")
    return StandInFork(recipe, bare, commits)


def commit_all(work: Path, message: str) -> str:
    git(work, "add", ".")
    git(work, "commit", "-q", "-m", message)
    return git(work, "rev-parse", "HEAD")


@dataclass(frozen=True)
class Registry:
    """The control plane's registry (scripts/control-plane.sh env)."""

    host: str
    username: str
    password: str
    trust: Path

    @classmethod
    def of_control_plane(cls) -> Registry:
        password = Path(require_env("KGF_REGISTRY_PASSWORD_FILE")).read_text().strip()
        return cls(
            require_env("KGF_REGISTRY"),
            require_env("KGF_REGISTRY_USERNAME"),
            password,
            Path(require_env("KGF_REGISTRY_TRUST")),
        )

    def environment(self, docker_config: Path) -> dict[str, str]:
        """What a build machine has: docker (here the stand-in) on PATH, trust in the registry's CA
        and a docker config of its own."""
        return {
            "PATH": f"{BUILD_TOOLS}{os.pathsep}{os.environ['PATH']}",
            "SSL_CERT_FILE": str(self.trust),
            "DOCKER_CONFIG": str(docker_config),
        }

    def crane(self, docker_config: Path, *args: str) -> str:
        done = subprocess.run(
            ["crane", *args],
            env={**os.environ, **self.environment(docker_config)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"crane {args[0]} failed: {done.stderr}")
        return done.stdout.strip()

    def login(self, docker_config: Path) -> None:
        subprocess.run(
            ["crane", "auth", "login", self.host, "-u", self.username, "--password-stdin"],
            env={**os.environ, **self.environment(docker_config)},
            input=self.password,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )

    def digest(self, docker_config: Path, reference: str) -> str | None:
        """The manifest digest of `reference`, or None when the registry has no such image."""
        done = subprocess.run(
            ["crane", "digest", reference],
            env={**os.environ, **self.environment(docker_config)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else None
