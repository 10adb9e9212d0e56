"""Other teams' programs that use the component package (examples/), set up as their own tooling
would: the SDK generated from the schema the plugin serves and installed as `pulumi package add`
installs it, the program's packages from its registry, the kubeconfig from stack config or from
another resource. The engine finds the plugin from `plugins` (Workspace.consumer)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
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
    install of the generated directory, whose postinstall compiles it), kept between runs
    (npm_installed); the kubeconfig's contents from stack config, as a secret."""
    workspace = Workspace.consumer(base, REPO / "examples" / "typescript", {"name": "nodejs"})
    sdks = workspace.root / "sdks"
    cli("package", "gen-sdk", str(PLUGIN), "--language", "nodejs", "--local", "--out", str(sdks), cwd=base, state=base)
    npm_installed(workspace.root)
    return given_the_cluster(workspace)


def npm_installed(root: Path) -> None:
    """`npm ci`, then `npm install ./sdks/nodejs`, in the program's directory `root`: done once for
    each set of inputs (the program's package files, the SDK just generated, node's and npm's
    versions) and kept in the cache, since the two take 15 CPU-s and give the same tree for the
    same inputs; the program then has links to that tree. A new set of inputs is installed
    afresh, and entries not used for an hour are removed."""
    package_files = ("package.json", "package-lock.json")
    inputs = hashlib.sha256()
    for tool in ("node", "npm"):
        inputs.update(subprocess.run([tool, "--version"], check=True, capture_output=True).stdout)
    for file in sorted(p for p in (root / "sdks").rglob("*") if p.is_file()):
        inputs.update(f"{file.relative_to(root)}\0".encode() + file.read_bytes())
    for name in package_files:
        inputs.update((root / name).read_bytes())
    cache = Path(require_env("KGF_CACHE")) / "typescript-consumer"
    installed = cache / inputs.hexdigest()[:16]
    if not installed.exists():
        cache.mkdir(parents=True, exist_ok=True)
        making = Path(tempfile.mkdtemp(dir=cache, prefix=".installing-"))
        for name in package_files:
            shutil.copy(root / name, making / name)
        shutil.copytree(root / "sdks", making / "sdks", symlinks=True)
        npm = ["npm", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"]
        try:
            subprocess.run([*npm, "ci"], cwd=making, check=True, capture_output=True, timeout=600)
            subprocess.run([*npm, "install", "./sdks/nodejs"], cwd=making, check=True, capture_output=True, timeout=600)
            with contextlib.suppress(OSError):  # another run installed the same inputs first
                making.rename(installed)
        finally:
            shutil.rmtree(making, ignore_errors=True)  # a failed install's half, or the other run's twin
        for stale in cache.iterdir():
            if stale != installed and time.time() - stale.stat().st_mtime > 3600:
                shutil.rmtree(stale, ignore_errors=True)
    os.utime(installed)
    shutil.rmtree(root / "sdks")
    for name in ("node_modules", "sdks"):
        (root / name).symlink_to(installed / name)
    for name in package_files:  # as `npm install ./sdks/nodejs` left them: the SDK added
        shutil.copy(installed / name, root / name)
