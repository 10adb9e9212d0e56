"""Other teams' programs that use the component package (examples/), set up as their own tooling
would: the SDK generated from the schema the plugin serves and installed as `pulumi package add`
installs it, the program's packages from its registry, the kubeconfig from stack config or from
another resource. The engine finds the plugin from `plugins` (Workspace.consumer)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.integration.workspace import REPO, Workspace, engine_environment, require_env

PLUGIN = REPO / "provider" / "pulumi-resource-kai-gpu-fractions"


def cli(*args: str, cwd: Path, state: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["pulumi", *args], cwd=cwd, env=engine_environment(state), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def given_the_cluster(workspace: Workspace) -> Workspace:
    """A new stack whose config holds the test cluster's kubeconfig, contents and all, as a secret."""
    workspace.pulumi("stack", "init", "dev")
    contents = Path(os.environ["KUBECONFIG"]).read_text()
    workspace.pulumi("config", "set", "--secret", "kubeconfig", stack="dev", input_text=contents)
    return workspace


def python_program(base: Path, example: Path = REPO / "examples" / "python") -> Workspace:
    """examples/python: the SDK `pulumi package gen-sdk` makes from the plugin's schema; the cluster
    made by another resource in the same update, so its kubeconfig is unknown at preview."""
    cli("package", "gen-sdk", str(PLUGIN), "--language", "python", "--out", str(base / "sdks"), cwd=base, state=base)
    venv = require_env("KGF_ENGINE_VENV")
    # What `pulumi package add` pip-installs into the program's virtualenv, installed beside it
    # instead: the virtualenv is shared by every test.
    install = ["-m", "pip", "install", "--quiet", "--no-deps"]
    target = ["--target", str(base / "site-packages"), str(base / "sdks" / "python")]
    subprocess.run([f"{venv}/bin/python", *install, *target], check=True, capture_output=True)
    runtime = {"name": "python", "options": {"toolchain": "pip", "virtualenv": venv}}
    workspace = Workspace.consumer(base, example, runtime)
    workspace.env["PYTHONPATH"] = str(base / "site-packages")
    workspace.pulumi("stack", "init", "dev")
    return workspace


def yaml_program(base: Path) -> Workspace:
    """examples/yaml: no SDK; the kubeconfig's contents from stack config, as a secret."""
    workspace = Workspace.consumer(base, REPO / "examples" / "yaml", {"name": "yaml"})
    return given_the_cluster(workspace)


def typescript_program(base: Path) -> Workspace:
    """examples/typescript: its packages from npm (`npm ci`, the lock committed beside it), then the
    SDK generated from the plugin's schema and installed as `pulumi package add` links it (npm
    install of the generated directory, whose postinstall compiles it); the kubeconfig's contents
    from stack config, as a secret."""
    workspace = Workspace.consumer(base, REPO / "examples" / "typescript", {"name": "nodejs"})
    npm = ["npm", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run([*npm, "ci"], cwd=workspace.root, check=True, capture_output=True, timeout=600)
    sdks = workspace.root / "sdks"
    cli("package", "gen-sdk", str(PLUGIN), "--language", "nodejs", "--local", "--out", str(sdks), cwd=base, state=base)
    subprocess.run([*npm, "install", "./sdks/nodejs"], cwd=workspace.root, check=True, capture_output=True, timeout=600)
    return given_the_cluster(workspace)
