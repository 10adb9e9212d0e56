"""The stand-in command and docker provider plugins (tools/standin-plugins) under the real engine.

They stand in for pulumi-command 1.2.1 and pulumi-docker 5.2.0, whose plugins cannot be built from
the Go module proxy (scripts/toolchain.sh installs them). The docker stand-in asks the control
plane's registry (distribution, htpasswd, TLS from the control plane's CA); crane pushes the image.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.stand_in_forks import Registry
from tests.integration.workspace import Workspace, require_env

pytestmark = pytest.mark.integration

PROGRAMS = Path(__file__).parent / "standin_programs"
TOKEN = "command-token-5d1e8b"
WRONG_PASSWORD = "wrong-password-90e1f3"
IMAGE = "kgf/app:v1"
# What `pulumi stack export` shows in place of a secret value.
SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d"


@pytest.mark.parametrize(("name", "version"), [("command", "1.2.1"), ("docker", "5.2.0")])
def test_the_engine_binds_the_installed_stand_ins_schema(tmp_path: Path, name: str, version: str) -> None:
    plugin = Path(require_env("PULUMI_HOME")) / "plugins" / f"resource-{name}-v{version}" / f"pulumi-resource-{name}"
    completed = subprocess.run(
        ["pulumi", "package", "get-schema", str(plugin)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    schema = json.loads(completed.stdout)
    assert (schema["name"], schema["version"]) == (name, version)
    assert schema["description"].startswith("STAND-IN"), "the installed plugin must be the stand-in"


def recorder(tmp_path: Path, stack: str, trigger: str, **config: str) -> tuple[Workspace, Path]:
    """A stack of the command_recorder program; returns it and the log its scripts append to."""
    workspace = Workspace.create(tmp_path, program=PROGRAMS / "command_recorder.py")
    run_log = tmp_path / "runs.log"
    workspace.new_stack(stack, {"trigger": trigger, "runLog": str(run_log), **config}, secrets={"token": TOKEN})
    return workspace, run_log


def runs(run_log: Path) -> list[str]:
    return run_log.read_text().splitlines() if run_log.exists() else []


def test_create_runs_once_and_a_second_up_changes_nothing(tmp_path: Path) -> None:
    workspace, run_log = recorder(tmp_path, "once", trigger="a")
    workspace.pulumi("up", "--yes", "--skip-preview", stack="once")
    workspace.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", stack="once")
    assert runs(run_log) == ["create a"]
    assert workspace.pulumi("stack", "output", "stdout", "--show-secrets", stack="once").stdout.strip() == "built a"
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack="once")
    assert runs(run_log) == ["create a", "delete a after built a"]


def test_a_trigger_change_replaces_the_command(tmp_path: Path) -> None:
    workspace, run_log = recorder(tmp_path, "replace", trigger="a")
    workspace.pulumi("up", "--yes", "--skip-preview", stack="replace")
    workspace.pulumi("config", "set", "trigger", "b", stack="replace")
    preview = workspace.pulumi("preview", "--diff", stack="replace")
    assert "+-command:local:Command: (replace)" in preview.output, preview.output[-3000:]
    workspace.pulumi("up", "--yes", "--skip-preview", stack="replace")
    # The default replacement creates the new command before it deletes the old one.
    assert runs(run_log) == ["create a", "create b", "delete a after built a"]
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack="replace")


def test_a_failing_create_fails_up_with_its_stderr(tmp_path: Path) -> None:
    workspace, run_log = recorder(tmp_path, "failing", trigger="a", failWith="compiler exploded on line 7")
    result = workspace.pulumi("up", "--yes", "--skip-preview", stack="failing", check=False)
    assert result.returncode != 0
    assert "compiler exploded on line 7" in result.output
    assert "exit status 7" in result.output
    assert "[stand-in pulumi-resource-command" in result.output, "the error must say it came from the stand-in"
    state = json.loads(workspace.pulumi("stack", "export", stack="failing").stdout)
    assert not [r for r in state["deployment"].get("resources") or [] if r["type"] == "command:local:Command"]


def test_a_secret_environment_value_is_stored_only_encrypted(tmp_path: Path) -> None:
    workspace, _ = recorder(tmp_path, "secret", trigger="a")
    up = workspace.pulumi("up", "--yes", "--skip-preview", stack="secret")
    assert TOKEN not in up.output
    for state_file in workspace.state_files():
        assert TOKEN not in state_file.read_text(errors="replace"), f"plaintext secret in {state_file}"
    state = json.loads(workspace.pulumi("stack", "export", stack="secret").stdout)
    (command,) = [r for r in state["deployment"]["resources"] if r["type"] == "command:local:Command"]
    for side in ("inputs", "outputs"):
        token = command[side]["environment"]["TOKEN"]
        assert isinstance(token, dict) and SECRET_SIGNATURE in token, f"{side}.environment.TOKEN is {token!r}"
    assert SECRET_SIGNATURE in command["outputs"]["stdout"], "additional_secret_outputs keeps stdout secret"
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack="secret")


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Registry, Path]]:
    """The control plane's registry holding one image pushed by crane; the engine and its plugins
    trust its CA through SSL_CERT_FILE while the module runs."""
    found = Registry.of_control_plane()
    base = tmp_path_factory.mktemp("registry")
    docker_config = base / "docker"
    found.login(docker_config)
    layer = base / "layer.tar"
    (base / "hello.txt").write_text("kai-gpu-fractions stand-in test image\n")
    with tarfile.open(layer, "w") as tar:
        tar.add(base / "hello.txt", arcname="hello.txt")
    found.crane(docker_config, "append", "--new_layer", str(layer), "--new_tag", f"{found.host}/{IMAGE}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SSL_CERT_FILE", str(found.trust))
        yield found, docker_config


def registry_stack(tmp_path: Path, registry: Registry, image: str, password: str) -> Workspace:
    workspace = Workspace.create(tmp_path, program=PROGRAMS / "registry_digest.py")
    config = {"registry": registry.host, "username": registry.username, "image": f"{registry.host}/{image}"}
    workspace.new_stack("registry", config, secrets={"password": password})
    return workspace


def test_get_registry_image_returns_the_registry_digest(tmp_path: Path, registry: tuple[Registry, Path]) -> None:
    found, docker_config = registry
    workspace = registry_stack(tmp_path, found, IMAGE, found.password)
    up = workspace.pulumi("up", "--yes", "--skip-preview", stack="registry")
    digest = found.digest(docker_config, f"{found.host}/{IMAGE}")
    assert digest is not None and digest.startswith("sha256:")
    assert workspace.outputs("registry")["digest"] == digest
    assert found.password not in up.output
    for state_file in workspace.state_files():
        assert found.password not in state_file.read_text(errors="replace"), f"plaintext password in {state_file}"


def test_a_missing_image_fails_clearly(tmp_path: Path, registry: tuple[Registry, Path]) -> None:
    found, _ = registry
    workspace = registry_stack(tmp_path, found, "kgf/missing:v1", found.password)
    result = workspace.pulumi("up", "--yes", "--skip-preview", stack="registry", check=False)
    assert result.returncode != 0
    assert "kgf/missing:v1" in result.output and "not found" in result.output.lower(), result.output[-3000:]
    assert "[stand-in pulumi-resource-docker" in result.output
    assert found.password not in result.output


def test_a_wrong_password_fails_clearly(tmp_path: Path, registry: tuple[Registry, Path]) -> None:
    found, _ = registry
    workspace = registry_stack(tmp_path, found, IMAGE, WRONG_PASSWORD)
    result = workspace.pulumi("up", "--yes", "--skip-preview", stack="registry", check=False)
    assert result.returncode != 0
    assert "bad credentials" in result.output and found.host in result.output, result.output[-3000:]
    assert WRONG_PASSWORD not in result.output and found.password not in result.output
