"""Program evaluation cost under Pulumi mocks, side by side with the import floor, in one run.

Each sample is a fresh interpreter that measures, in order:
  floor       `import pulumi, pulumi_kubernetes` (the issue's import floor; pulumi_kubernetes loads
              its API groups lazily, so this is only the package shell);
  api groups  the pulumi_kubernetes modules the program uses (core, apps, helm, ...), plus pydantic
              and the program's own modules: a fixed import cost any program using them pays;
  evaluation  running __main__.py under mocks: config validation, every registration and output;
  again       a second evaluation in the same process (all imports warm).
Usage: scripts/benchmark.sh program_evaluation [-- --samples N] (it needs no cluster, so
`.venv/bin/python benchmarks/program_evaluation.py [--samples N]` works as well).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import json, time
t0 = time.perf_counter()
import pulumi, pulumi_kubernetes
t1 = time.perf_counter()
import pulumi_kubernetes.core.v1, pulumi_kubernetes.apps.v1, pulumi_kubernetes.helm.v3
import pulumi_kubernetes.apiextensions, pulumi_kubernetes.meta.v1, pulumi_kubernetes.node.v1
import components.stack, components.forks.images, components.forks.source
import pytest
from tests.unit.harness import ProgramRunner
t2 = time.perf_counter()
with pytest.MonkeyPatch.context() as monkeypatch:
    run_program = ProgramRunner(monkeypatch)
    run_program({config!r}, secret_keys=("registryPassword",))
    t3 = time.perf_counter()
    run_program({config!r}, secret_keys=("registryPassword",))
    t4 = time.perf_counter()
print(json.dumps({{"floor": t1 - t0, "api groups": t2 - t1, "evaluation": t3 - t2, "again": t4 - t3}}))
"""
A100 = {
    "registry": {"server": "registry.example.com/team/kai-fork", "username": "robot"},
    "registryPassword": "benchmark",
}
# The fork graph has no per-node resources: a 64-node / 512-GPU fleet changes only mpsd sizing
# when GPUs per node change, so the fleet case is the same graph with the fleet's node facts.
FLEET = {**A100, "nodes": {"gpusPerNode": 8}, "gpuFractioning": {"nodeRuntime": "containerd"}}
LAB_ONE = {"profile": "lab", "lab": {"kind": None, "gpuNodes": ["gpu-node-0"]}}
LAB_FLEET = {"profile": "lab", "lab": {"kind": None, "gpuNodes": [f"gpu-node-{i}" for i in range(64)]}}
CASES = {
    "a100 stack (8 GPUs)": A100,
    "a100 stack, 64-node / 512-GPU fleet": FLEET,
    "lab, 1 GPU node": LAB_ONE,
    "lab, 64 GPU nodes (64 label patches)": LAB_FLEET,
}


def measure(config: Mapping[str, object], samples: int) -> dict[str, float]:
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", PROBE.format(config=config)],
                cwd=REPO,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(samples)
    ]
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def fork_source_seconds(samples: int) -> float:
    """What each run pays to confirm a fork's tree is at its pin (the warm path, no fetch), with
    real git against a local repository shaped like GitHub's pull request refs."""
    sys.path.insert(0, str(REPO))  # run as a script, the repository root is not on the path
    from components.config.model import ForkPin
    from components.forks.recipes import GPU_FRACTIONING
    from components.forks.source import prepare_fork_source

    with tempfile.TemporaryDirectory() as base:
        work, bare = Path(base) / "work", Path(base) / "fork.git"
        (work / GPU_FRACTIONING.chart_path).mkdir(parents=True)
        (work / GPU_FRACTIONING.chart_path / "Chart.yaml").write_text("apiVersion: v2\nname: x\nversion: 0.0.1\n")
        for command in (
            ["git", "init", "-q"],
            ["git", "add", "."],
            ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "-m", "x"],
            ["git", "init", "-q", "--bare", str(bare)],
            ["git", "push", "-q", str(bare), "HEAD:refs/pull/1/head"],
        ):
            subprocess.run(command, cwd=work, check=True, capture_output=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True, text=True)
        pin = ForkPin(repository=str(bare), pull_request=1, commit=commit.stdout.strip())
        workdir = str(Path(base) / "forks")
        prepare_fork_source(GPU_FRACTIONING, pin, workdir)  # the cold checkout, once
        timings = []
        for _ in range(samples):
            start = time.perf_counter()
            prepare_fork_source(GPU_FRACTIONING, pin, workdir)
            timings.append(time.perf_counter() - start)
        return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description="Program evaluation cost under Pulumi mocks.")
    parser.add_argument("--samples", type=int, default=5)
    samples = parser.parse_args().samples
    results = {name: measure(config, samples) for name, config in CASES.items()}
    print(f"median of {samples} fresh interpreters; seconds, and x the import floor in brackets")
    print(f"{'case':38} {'floor':>7} {'api groups':>16} {'evaluation':>16} {'again':>16}")
    for name, r in results.items():
        floor = r["floor"]
        cells = "".join(f" {r[k]:8.3f} ({r[k] / floor:4.2f}x)" for k in ("api groups", "evaluation", "again"))
        print(f"{name:38} {floor:7.3f}{cells}")
    a100, fleet = results["a100 stack (8 GPUs)"], results["a100 stack, 64-node / 512-GPU fleet"]
    lab, lab_fleet = results["lab, 1 GPU node"], results["lab, 64 GPU nodes (64 label patches)"]
    print(f"fleet / 8-GPU evaluation: {fleet['evaluation'] / a100['evaluation']:.2f}x (target <= 2)")
    print(f"lab 64 nodes / 1 node evaluation: {lab_fleet['evaluation'] / lab['evaluation']:.2f}x")
    # The mocks skip the fork checkouts; a real run of the a100 stack confirms two trees per run.
    source = fork_source_seconds(samples)
    print(f"fork tree already at its pin, per fork: {source:.3f}s ({source / a100['floor']:.2f}x the floor)")


if __name__ == "__main__":
    main()
