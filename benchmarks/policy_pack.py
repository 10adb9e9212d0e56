"""The policy pack's cost, side by side in one run.

1. Evaluation cost per resource: every policy of the pack over this project's two stacks, called
   directly the way the analyzer server calls them (no engine).
2. With the real engine: `pulumi preview` of the dev stack on the benchmarks' control plane,
   alternating with and without `--policy-pack policy`, and the overhead of the pack.
Usage: scripts/benchmark.sh policy_pack [-- --rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.policy.golden import fork_stack, lab_stack
from tests.policy.harness import pack_violations

REPO = Path(__file__).resolve().parents[1]


def per_resource_microseconds(rounds: int) -> dict[str, float]:
    results = {}
    for name, stack in (("a100 stack", fork_stack()), ("dev stack", lab_stack())):
        timings = []
        for _ in range(rounds):
            start = time.perf_counter()
            pack_violations(stack)
            timings.append(time.perf_counter() - start)
        results[f"{name} ({len(stack)} resources)"] = statistics.median(timings) / len(stack) * 1e6
    return results


def preview_overhead(rounds: int) -> tuple[float, float] | None:
    if not (shutil.which("pulumi") and os.environ.get("KGF_ENGINE_VENV") and os.environ.get("KUBECONFIG")):
        return None
    from tests.integration.test_dev_stack import dev_config
    from tests.integration.workspace import Workspace

    with tempfile.TemporaryDirectory() as base:
        workspace = Workspace.create(Path(base))
        workspace.new_stack("bench", {**dev_config(), "lab": {**dev_config()["lab"], "prove": False}})
        workspace.pulumi("preview", stack="bench")  # warm the plugin and chart caches
        plain: list[float] = []
        with_pack: list[float] = []
        for _ in range(rounds):
            for timings, extra in ((plain, ()), (with_pack, ("--policy-pack", str(REPO / "policy")))):
                start = time.perf_counter()
                workspace.pulumi("preview", *extra, stack="bench")
                timings.append(time.perf_counter() - start)
        return statistics.median(plain), statistics.median(with_pack)


STARTUP_PROBE = """
import time
t0 = time.perf_counter()
import pulumi_policy
t1 = time.perf_counter()
import gpu_policies
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def pack_startup(rounds: int) -> dict[str, float]:
    """What the pack's process pays before it serves the engine, each in a fresh interpreter of the
    environment the engine runs it with: the interpreter, pulumi_policy (and pulumi through it), the
    pack's own modules."""
    python = str(Path(os.environ.get("KGF_ENGINE_VENV") or sys.prefix) / "bin" / "python")
    samples: dict[str, list[float]] = {"interpreter": [], "pulumi_policy and pulumi": [], "the pack's policies": []}
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([python, "-c", "pass"], check=True)
        samples["interpreter"].append(time.perf_counter() - start)
        done = subprocess.run(
            [python, "-c", STARTUP_PROBE], cwd=REPO / "policy", check=True, capture_output=True, text=True
        )
        sdk, own = map(float, done.stdout.split())
        samples["pulumi_policy and pulumi"].append(sdk)
        samples["the pack's policies"].append(own)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description="The policy pack's cost.")
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(f"pack evaluation, all policies, median of {rounds * 20} rounds")
    for name, micros in per_resource_microseconds(rounds * 20).items():
        print(f"  {name:32} {micros:8.1f} us per resource")
    print(f"pack process start-up, median of {rounds} fresh interpreters")
    for name, seconds in pack_startup(rounds).items():
        print(f"  {name:32} {seconds:8.3f} s")
    overhead = preview_overhead(rounds)
    if overhead is None:
        print("preview overhead: not measured (no pulumi, KGF_ENGINE_VENV or KUBECONFIG in this environment)")
        return
    plain, with_pack = overhead
    print(f"dev stack preview, median of {rounds}: without pack {plain:.2f}s, with pack {with_pack:.2f}s")
    print(f"  overhead of the pack: {(with_pack / plain - 1) * 100:+.1f}% (target <= 10%)")


if __name__ == "__main__":
    main()
