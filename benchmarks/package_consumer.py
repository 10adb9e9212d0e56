"""The lab through the component package next to the top-level program, in one run.

On the local control plane with the stand-in charts, each round measures, for the top-level program
(the dev stack) and three programs of other teams that use the package (examples/python and
examples/typescript with their generated SDKs, examples/yaml with none; tests/integration/consumers.py
sets them up), all with the same lab settings on the same cluster, whose kubeconfig each is given:
  preview   `pulumi preview` of a new stack (preflight reads the cluster in each)
  cold up   `pulumi up` on an empty cluster
then destroys it. The Python consumer differs from the top-level program only by the package: the
plugin constructs the components (beside the plugin process every run already starts for the gates
and proofs), which should cost no more than 10 % of either figure; the other two add their language.
Run it with scripts/benchmark.sh, which gives it a control plane of its own:
`scripts/benchmark.sh package_consumer [-- --rounds N]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks.engine_vs_helm import bench_config, timed
from tests.integration.consumers import python_program, typescript_program, yaml_program
from tests.integration.test_dev_stack import NODE
from tests.integration.workspace import Workspace, kubectl

# examples/python with the cluster given rather than made, so that all programs do the same work.
SDK_PROGRAM = """import os

import pulumi
import pulumi_kai_gpu_fractions as gpu

lab = gpu.Lab(
    "lab",
    kubeconfig=os.environ["KUBECONFIG"],
    kai=gpu.KaiConfigArgs(chart=gpu.ChartSourceArgs(chart="charts/kai-scheduler")),
    lab=gpu.LabConfigArgs(
        gpu_nodes=["gpu-node-0"],
        nvml_mock=gpu.NvmlMockConfigArgs(build_image=False, chart=gpu.ChartSourceArgs(chart="charts/nvml-mock")),
        isolator=gpu.IsolatorConfigArgs(chart=gpu.ChartSourceArgs(chart="charts/kai-resource-isolator")),
        prove=False,
    ),
)
pulumi.export("labPods", lab.lab_pods)
"""


def top_level(base: Path) -> Workspace:
    program = Workspace.create(base)
    program.new_stack("dev", bench_config())
    return program


def python_sdk(base: Path) -> Workspace:
    example = base / "example"
    example.mkdir()
    (example / "Pulumi.yaml").write_text("name: gpu-team\nruntime: python\n")
    (example / "__main__.py").write_text(SDK_PROGRAM)
    return python_program(base, example)


PROGRAMS: dict[str, Callable[[Path], Workspace]] = {
    "top-level program": top_level,
    "Python + SDK": python_sdk,
    "TypeScript + SDK": typescript_program,
    "YAML": yaml_program,
}


def one_round(base: Path, round_number: int) -> dict[tuple[str, str], float]:
    timings: dict[tuple[str, str], float] = {}
    for name, make in PROGRAMS.items():
        work = base / f"{name.split()[0].lower()}-{round_number}"
        work.mkdir()
        program = make(work)
        try:
            timings[name, "preview"] = timed(partial(program.pulumi, "preview", stack="dev"))
            timings[name, "cold up"] = timed(partial(program.pulumi, "up", "--yes", "--skip-preview", stack="dev"))
        finally:
            program.pulumi("destroy", "--yes", "--skip-preview", stack="dev", check=False)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description="The lab through the package next to the top-level program.")
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    results: dict[tuple[str, str], list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as base:
        # As engine_vs_helm: the lab adds these labels itself.
        kubectl("label", "node", NODE, "nvidia.com/gpu.memory-", "nvidia.com/gpu.product-", "nvidia.com/gpu.count-")
        for round_number in range(rounds):
            for key, seconds in one_round(Path(base), round_number).items():
                results[key].append(seconds)
    median = {key: statistics.median(values) for key, values in results.items()}
    print(f"the lab on the local control plane, median of {rounds} rounds (seconds)")
    print(f"  {'':20} {'preview':>8} {'cold up':>8}")
    for name in PROGRAMS:
        print(f"  {name:20} {median[name, 'preview']:8.2f} {median[name, 'cold up']:8.2f}")
    base_name, like_for_like, *others = PROGRAMS
    for name in (like_for_like, *others):
        ratios = [median[name, op] / median[base_name, op] for op in ("preview", "cold up")]
        bar = "the package's cost: at most 1.10x" if name == like_for_like else "with its language host"
        print(f"{name} / {base_name}: preview {ratios[0]:.2f}x, cold up {ratios[1]:.2f}x ({bar})")


if __name__ == "__main__":
    main()
