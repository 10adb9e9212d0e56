"""Parallel workers: scripts/test.sh starts one control plane per pytest worker and names each one's
environment file in KGF_TEST_ENV_FILES; a worker points itself at its own before any test runs.
The order the workers take the modules in is tests/module_order.py's."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

pytest_plugins = ("tests.module_order",)


def worker_environment(env_files: str, worker: str) -> dict[str, str]:
    """The variables of worker `gwN`'s file: `export NAME=value` lines as control-plane.sh env
    prints them (shell-quoted, `$VAR` expanded)."""
    files = env_files.split()
    index = int(worker.removeprefix("gw"))
    if index >= len(files):
        raise RuntimeError(f"pytest worker {worker} has no control plane: KGF_TEST_ENV_FILES names {len(files)}")
    found = {}
    for line in Path(files[index]).read_text().splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            found[name] = os.path.expandvars(value)
    return found


def pytest_configure(config: pytest.Config) -> None:
    worker, env_files = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("KGF_TEST_ENV_FILES")
    if worker and env_files:
        os.environ.update(worker_environment(env_files, worker))
