"""A Pulumi workspace for integration tests: the real CLI, a file backend, passphrase secrets."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import yaml

from components.cluster.waiting import Clock, Deadline, poll
from standins.operators.cluster import Cluster
from tests.integration import processes
from tests.integration.previous_release import as_previous_release

REPO = Path(__file__).resolve().parents[2]
PROJECT = "kai-gpu-fractions"
PASSPHRASE = "integration-test-passphrase"


def require_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run the integration tier through scripts/test.sh")
    return value


def engine_environment(state_dir: Path) -> dict[str, str]:
    """The environment every `pulumi` call gets: offline, local state, no update checks, and the
    engine's virtualenv first on PATH so the policy pack finds pulumi_policy. Its temporary files
    go beside the state, so they go with the test: the kubernetes provider writes the kubeconfig it
    is given to a new temporary file at every start and never removes it (pulumi-kubernetes
    provider/pkg/provider/provider.go:774, util.go:125 at v4.25.0). So does its PULUMI_HOME, with a
    link to the toolchain's plugins: the CLI writes a debug log of every command under
    PULUMI_HOME/logs (pkg/logging/encrypted.go, StartLogging, at v3.260.0; kept 7 days, up to
    500 MB) and each stack it selects under workspaces/."""
    venv_bin = Path(require_env("KGF_ENGINE_VENV")) / "bin"
    temporary = state_dir.parent / "engine-tmp"
    temporary.mkdir(exist_ok=True)
    home = state_dir.parent / "pulumi-home"
    home.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):  # made by another thread of the same test
        (home / "plugins").symlink_to(Path(require_env("PULUMI_HOME")) / "plugins")
    return {
        "TMPDIR": str(temporary),
        **os.environ,
        "PULUMI_HOME": str(home),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}",
        "PULUMI_PYTHON_CMD": str(venv_bin / "python"),
        "PULUMI_BACKEND_URL": f"file://{state_dir}",
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_SKIP_CONFIRMATIONS": "true",
    }


@dataclass
class Workspace:
    """A project directory that runs this repository's program with the engine's virtualenv."""

    root: Path
    state: Path
    # What every `pulumi` call of this workspace adds to the engine's environment.
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, base: Path, program: Path | None = None) -> Workspace:
        root, state = base / "project", base / "state"
        root.mkdir(parents=True)
        state.mkdir()
        venv = require_env("KGF_ENGINE_VENV")
        spec = {
            "name": PROJECT,
            "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": venv}},
            "plugins": {"providers": [{"name": PROJECT, "path": str(REPO / "provider")}]},
        }
        (root / "Pulumi.yaml").write_text(yaml.safe_dump(spec))
        (root / "components").symlink_to(REPO / "components")
        if program is None:
            (root / "__main__.py").symlink_to(REPO / "__main__.py")
        else:
            shutil.copy(program, root / "__main__.py")
        # Stable relative chart paths: an absolute path that differs between runs would show as a diff.
        (root / "charts").symlink_to(REPO / "standins" / "charts")
        return cls(root, state)

    @classmethod
    def consumer(cls, base: Path, example: Path, runtime: dict[str, Any]) -> Workspace:
        """Another team's program (one of examples/), which knows nothing of this repository's modules
        and reaches the package only through its plugin. The engine finds the plugin from
        `plugins` rather than the example's `packages:` entry, which would make a virtualenv in this
        clone (`pulumi install` does, from PyPI)."""
        root, state = base / "project", base / "state"
        shutil.copytree(example, root, ignore=shutil.ignore_patterns("Pulumi.yaml", "venv", "node_modules", "sdks"))
        state.mkdir()
        spec = yaml.safe_load((example / "Pulumi.yaml").read_text())
        spec.pop("packages", None)
        spec["runtime"] = runtime
        spec["plugins"] = {"providers": [{"name": PROJECT, "path": str(REPO / "provider")}]}
        (root / "Pulumi.yaml").write_text(yaml.safe_dump(spec))
        (root / "charts").symlink_to(REPO / "standins" / "charts")
        return cls(root, state)

    def pulumi(
        self,
        *args: str,
        stack: str | None = None,
        check: bool = True,
        timeout: int = 900,
        input_text: str | None = None,
        env: dict[str, str] | None = None,
    ) -> Result:
        command = ["pulumi", *args, "--non-interactive", "--cwd", str(self.root)]
        if stack:
            command += ["--stack", stack]
        completed = subprocess.run(
            command,
            env={**engine_environment(self.state), **self.env, **(env or {})},
            input=input_text,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        result = Result(command, completed.returncode, completed.stdout, completed.stderr)
        if check and completed.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed:\n{result.output[-6000:]}")
        return result

    def start(self, *args: str, stack: str) -> subprocess.Popen[str]:
        """Starts a long `pulumi` command in its own process group, so a test can kill all of it."""
        command = ["pulumi", *args, "--non-interactive", "--cwd", str(self.root), "--stack", stack]
        return subprocess.Popen(
            command,
            env={**engine_environment(self.state), **self.env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def new_stack(self, stack: str, config: dict[str, Any], secrets: dict[str, str] | None = None) -> None:
        self.pulumi("stack", "init", stack)
        self.write_config(stack, config)
        for key, value in (secrets or {}).items():
            path = ["--path"] if "." in key else []
            # The value on stdin: a multi-line kubeconfig does not fit an argument well.
            self.pulumi("config", "set", "--secret", *path, key, stack=stack, input_text=value)

    def write_config(self, stack: str, config: dict[str, Any], keep: Collection[str] | None = None) -> None:
        """The stack's plaintext config replaced by `config`, as an edit of its stack file; the
        top-level keys stored with `--secret` stay as they were (only those in `keep`, when given)."""
        stack_file = self.root / f"Pulumi.{stack}.yaml"
        current = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
        kept = {f"{PROJECT}:{key}" for key in keep} if keep is not None else None
        secrets = {
            k: v
            for k, v in (current.get("config") or {}).items()
            if isinstance(v, dict) and "secure" in v and (kept is None or k in kept)
        }
        current["config"] = {**{f"{PROJECT}:{key}": value for key, value in config.items()}, **secrets}
        stack_file.write_text(yaml.safe_dump(current))

    def kill_strays(self) -> list[int]:
        """Kills what a killed `pulumi` run left running for this project and waits until it is gone,
        so a test does not leak processes; returns their pids. The language host, the provider
        plugins and the dynamic providers run in process groups of their own and name neither the
        test nor the project in their arguments; all of them work in the project directory."""
        strays = processes.under(self.root)
        if survivors := processes.reap(strays):
            raise AssertionError(f"processes of {self.root} survived SIGKILL:\n{processes.describe(survivors)}")
        return [p.pid for p in strays]

    def outputs(self, stack: str) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "output", "--json", stack=stack).stdout)

    def state_files(self) -> list[Path]:
        return [p for p in self.state.rglob("*") if p.is_file()]

    def export(self, stack: str) -> dict[str, Any]:
        return dict(json.loads(self.pulumi("stack", "export", stack=stack).stdout))

    def as_previous_release(self, stack: str) -> None:
        """The stack's state as the release before the provider plugin would have left it."""
        previous = self.root / f"{stack}-previous-release.json"
        previous.write_text(json.dumps(as_previous_release(self.export(stack))))
        self.pulumi("stack", "import", "--file", str(previous), stack=stack)


@dataclass
class Result:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILLs a command started with Workspace.start and every process still in its group."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def kubectl(*args: str, check: bool = True, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    completed = subprocess.run(["kubectl", *args], input=input_text, capture_output=True, text=True, timeout=120)
    if check and completed.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {completed.stderr}")
    return completed


def api() -> Cluster:
    """The worker's cluster as plain API paths over one pool of kept connections, for the reads and
    writes the fixtures repeat around every module and destroy: a `kubectl` call costs about 50 ms
    of CPU before it sends its request, and the tier made some 600 of them."""
    return _api(require_env("KUBECONFIG"))


@functools.cache
def _api(kubeconfig: str) -> Cluster:
    return Cluster(kubeconfig)


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    """The helm client scripts/control-plane.sh builds, as a user changing the cluster by hand."""
    completed = subprocess.run(["helm", *args], capture_output=True, text=True, timeout=300)
    if completed.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed: {completed.stderr}")
    return completed


def kubectl_json(*args: str) -> Any:
    return json.loads(kubectl(*args, "-o", "json").stdout)


def wait_until(
    condition: Callable[[], object], timeout: float, what: str, interval: float = 1.0, clock: Clock | None = None
) -> None:
    """Looks every `interval` seconds until `condition` holds; fails the test after `timeout`."""
    if not poll(condition, bool, Deadline.after(timeout, clock), repeat(interval)):
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
