"""A driver rollout on 1, 4 and 16 stand-in GPU nodes, side by side, in one run: the program's own time
per node beside the time the stand-ins take at best, and their ratio.

For each size, on nodes as new machines have them (standins/nodes/gpu-node.yaml): the a100 stack's
`up` (prebuilt images, smoke proof off, gpuOperator.rollout.drainGraceSeconds 0), a fractional pod on
every node, then a driver bump's `up`, whose rollout proves each node with a deviceQuery pod (its
output a guide-shaped fixture). The DriverRollout's results give each node's time from cordon to
its proof. The stand-ins' simulated delays on each node are mpsd's stop (knob `mpsd-stop`) and the
new driver's build and load (knob `driver-install`): a node cannot take less than their sum, and the
ratio is the node's time over that sum. The goal: at most 1.10, and no growth with the cluster.

Run it with scripts/benchmark.sh, which gives it a control plane of its own:
`scripts/benchmark.sh driver_rollout [-- --rounds N --sizes 1,4,16 --install 12 --mpsd-stop 8]`.
It removes the stack and the nodes it added, even when it fails.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

import yaml

from benchmarks.engine_vs_helm import timed
from benchmarks.node_scale import fresh_nodes, node_names
from tests.integration.conftest import stand_in_operators
from tests.integration.gpu_nodes import TEAM, fractional_pod
from tests.integration.stand_ins import device_query_on_nodes_prints
from tests.integration.test_fork_stack import PASSWORD, a100_config, inline_kubeconfig
from tests.integration.workspace import Workspace, kubectl

NODE_TIME = re.compile(r"uncordoned after ([0-9.]+)s")
BUMPED_DRIVER = "615.99.01"


def node_times(workspace: Workspace) -> list[float]:
    """Each rolled node's time from cordon to uncordon, from the DriverRollout's results in the state."""
    state = json.loads(workspace.pulumi("stack", "export", stack="a100").stdout)
    for resource in state["deployment"]["resources"]:
        if resource["urn"].endswith("::gpu-operator-driver-rollout"):
            details = [r["detail"] for r in resource.get("outputs", {}).get("results") or []]
            return [float(match[1]) for detail in details if (match := NODE_TIME.search(detail))]
    raise SystemExit("no DriverRollout in the stack's state")


def one_size(base: Path, count: int, largest: int) -> tuple[float, list[float]]:
    """The bump's `up` and each node's time, on `count` fresh nodes; destroys the stack afterwards."""
    fresh_nodes(count, largest)
    workspace = Workspace.create(base / f"a100-{count}")
    config = a100_config()
    config["gpuOperator"] = {**config["gpuOperator"], "rollout": {"drainGraceSeconds": 0}}
    workspace.new_stack("a100", config, secrets={"registryPassword": PASSWORD, **inline_kubeconfig()})
    try:
        workspace.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=1800)
        kubectl("create", "namespace", TEAM)
        pods = [fractional_pod(f"job-{node}", node) for node in node_names(count)]
        kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(pods))
        workspace.pulumi("config", "set", "--path", "gpuOperator.driver.version", BUMPED_DRIVER, stack="a100")
        with device_query_on_nodes_prints(node_names(count), workspace.root):
            bump = timed(lambda: workspace.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=3600))
        times = node_times(workspace)
        if len(times) != count:
            raise SystemExit(f"{count} nodes: the rollout reported {len(times)} nodes")
        return bump, times
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="a100", timeout=1800, check=False)
        kubectl("delete", "namespace", TEAM, "--ignore-not-found", "--wait=true")


def main() -> None:
    parser = argparse.ArgumentParser(description="A driver rollout on 1, 4 and 16 stand-in GPU nodes.")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--install", type=float, default=12.0, help="the stand-in driver's build and load (s)")
    parser.add_argument("--mpsd-stop", type=float, default=8.0, help="the stand-in mpsd's stop (s)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    floor = args.install + args.mpsd_stop
    ups: dict[int, list[float]] = defaultdict(list)
    per_node: dict[int, list[float]] = defaultdict(list)
    try:
        delays = stand_in_operators(driver_install=args.install, mpsd_stop=args.mpsd_stop)
        with tempfile.TemporaryDirectory() as base, delays:
            for round_number in range(args.rounds):
                for size in sizes:
                    work = Path(base) / f"round-{round_number}"
                    work.mkdir(exist_ok=True)
                    bump, times = one_size(work, size, max(sizes))
                    ups[size].append(bump)
                    per_node[size] += times
                    print(f"round {round_number + 1}, {size} node(s): done", flush=True)
    finally:
        fresh_nodes(1, max(sizes))  # the control plane as it was: gpu-node-0, a new machine
    print(
        f"driver rollout, one node at a time; the stand-ins take {floor:g}s a node at best "
        f"(driver install {args.install:g}s + mpsd stop {args.mpsd_stop:g}s); {args.rounds} round(s)"
    )
    print(f"  {'nodes':>5} {'bump up (s)':>11} {'per node (s)':>12} {'ratio':>6} {'up per node (s)':>15}")
    for size in sizes:
        node = statistics.median(per_node[size])
        up = statistics.median(ups[size])
        print(f"  {size:5d} {up:11.1f} {node:12.1f} {node / floor:5.2f}x {up / size:15.1f}")


if __name__ == "__main__":
    main()
