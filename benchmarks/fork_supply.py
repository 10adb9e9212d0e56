"""The fork supply chain under the real engine next to the same builds run by hand, in one run.

The a100 stack from the stand-in forks (tests/integration/stand_in_forks.py) against the control
plane's registry, each round on a stack and forks of its own:
  by hand        both forks' Makefiles as the build guide runs them, then `crane digest` of the
                 19 images: the floor any tool pays for the builds and the registry check
  cold up        `pulumi up` of the a100 stack: checkouts, 19 builds and pushes, 19 digests, then
                 the GPU Operator, KAI and gpu-fractioning with their gates, and the smoke pods
  no-op up       `pulumi up` with nothing changed (0 builds expected)
  pin bump up    `pulumi up` after the KAI pin moves to the fork's next commit (15 builds
                 expected; gpu-fractioning's 4 images are only retagged)
Each line gives the seconds and the number of image builds. Destroys its stacks afterwards.

Run it with scripts/benchmark.sh, which gives it a control plane and registry of its own:
`scripts/benchmark.sh fork_supply [--rounds N]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER
from tests.integration.conftest import reset_gpu_node
from tests.integration.stand_in_forks import Registry, StandInFork, make_stand_in_fork
from tests.integration.test_fork_supply import supply_config
from tests.integration.workspace import Workspace

CASES = ("by hand", "cold up", "no-op up", "pin bump up")


def builds(record: Path) -> int:
    return len(record.read_text().splitlines()) if record.exists() else 0


def measured(record: Path, action: Callable[[], object]) -> tuple[float, int]:
    """Seconds the action took, and how many image builds it ran."""
    before, start = builds(record), time.perf_counter()
    action()
    return time.perf_counter() - start, builds(record) - before


def by_hand(registry: Registry, work: Path, forks: dict[str, StandInFork], tag: str) -> None:
    """The guide's Step 1, scripted: each fork at its pin, its make with the guide's variables,
    then the digest of every image."""
    server = f"{registry.host}/team/kai-fork"
    for recipe in (KAI_SCHEDULER, GPU_FRACTIONING):
        fork, checkout = forks[recipe.key], work / f"by-hand-{recipe.key}"
        checkout.mkdir(parents=True)
        pin = fork.pin()
        for command in (
            ["git", "init", "-q"],
            ["git", "fetch", "-q", "--", pin["repository"], f"pull/{pin['pullRequest']}/head"],
            ["git", "checkout", "-q", "--detach", pin["commit"]],
            [
                *recipe.make_command.split(),
                *(f"{k}={v}" for k, v in recipe.build_variables(server, tag, "linux/amd64").items()),
            ],
        ):
            subprocess.run(command, cwd=checkout, check=True, capture_output=True)
    for recipe in (KAI_SCHEDULER, GPU_FRACTIONING):
        for reference in recipe.image_references(server, tag).values():
            registry.crane(Path(os.environ["DOCKER_CONFIG"]), "digest", reference)


def one_round(registry: Registry, base: Path, record: Path) -> dict[str, tuple[float, int]]:
    forks = {recipe.key: make_stand_in_fork(base / "forks", recipe) for recipe in (KAI_SCHEDULER, GPU_FRACTIONING)}
    # The same commits as the stack, under a tag of its own, so nothing is shared with it.
    results = {"by hand": measured(record, lambda: by_hand(registry, base, forks, f"by-hand-{base.name}"))}
    workspace = Workspace.create(base / "stack")
    workspace.new_stack("bench", supply_config(registry, forks), secrets={"registryPassword": registry.password})
    up = ("up", "--yes", "--skip-preview")
    try:
        results["cold up"] = measured(record, lambda: workspace.pulumi(*up, stack="bench", timeout=1800))
        results["no-op up"] = measured(record, lambda: workspace.pulumi(*up, stack="bench", timeout=1800))
        workspace.pulumi(
            "config", "set", "--path", "forks.kaiScheduler.commit", forks[KAI_SCHEDULER.key].commits["bumped"],
            stack="bench",
        )  # fmt: skip
        results["pin bump up"] = measured(record, lambda: workspace.pulumi(*up, stack="bench", timeout=1800))
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="bench", check=False, timeout=1800)
        reset_gpu_node()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description="The fork supply chain under Pulumi next to the builds by hand.")
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    registry = Registry.of_control_plane()
    samples: dict[str, list[tuple[float, int]]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory(prefix="kgf-fork-supply-") as scratch:
        base = Path(scratch)
        docker_config, record = base / "docker", base / "builds.log"
        registry.login(docker_config)
        os.environ.update(registry.environment(docker_config))
        os.environ["STAND_IN_BUILD_RECORD"] = str(record)
        for round_number in range(rounds):
            for case, sample in one_round(registry, base / f"round{round_number}", record).items():
                samples[case].append(sample)
    median = {case: statistics.median(seconds for seconds, _ in found) for case, found in samples.items()}
    print(f"fork supply chain, a100 stack on the local control plane, median of {rounds} rounds")
    print(f"  {'':14} {'seconds':>8} {'builds':>7} {'x by hand':>10}")
    for case in CASES:
        counts = sorted({count for _, count in samples[case]})
        shown = "/".join(str(count) for count in counts)
        print(f"  {case:14} {median[case]:8.2f} {shown:>7} {median[case] / median['by hand']:9.2f}x")


if __name__ == "__main__":
    main()
