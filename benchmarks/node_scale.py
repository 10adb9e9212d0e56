"""Both stacks against 1 and against 64 fake GPU nodes (8 GPUs each), side by side, in one run.

On the local control plane with the stand-in charts and operators, for each fleet size it measures:
  host check     preflight's read of the cluster with check-pod host access: one check pod per GPU
                 node, run side by side, each "printing" a prepared host's report (a kwok Logs object)
  dev preview    `pulumi preview` of the lab stack (lab proof off) labelling every GPU node
  dev cold up    its `pulumi up` on fresh nodes, then destroy
  dev helm script  engine_vs_helm's sequential helm script installing the same, with the first helm
                 client (the control plane's), for the cluster's own share of the growth
  a100 preview   `pulumi preview` of the a100 stack (prebuilt images, smoke proof off)
  a100 cold up   its `pulumi up` on fresh nodes: the GPU Operator's, KAI's and gpu-fractioning's gates
                 wait for their DaemonSets on every node, then destroy
Each cold up starts from nodes as a new machine has them (standins/nodes/gpu-node.yaml).
Run it with scripts/benchmark.sh, which gives it a control plane of its own:
`scripts/benchmark.sh node_scale [-- --rounds N --nodes 64 --stacks dev,a100]`. It removes the nodes
it added, even when it fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from benchmarks.engine_vs_helm import helm_cleanup, helm_clients, helm_script, timed
from components.check_specs import preflight_expectations
from components.config.load import parse_config
from components.preflight.decisions import PreflightSpec
from components.preflight.run import read_cluster_facts
from components.stack import cluster_access
from tests.integration.stand_ins import check_pods_print, check_pods_print_nothing
from tests.integration.test_dev_stack import dev_config
from tests.integration.test_fork_stack import PASSWORD, a100_config, inline_kubeconfig
from tests.integration.workspace import REPO, Workspace, kubectl

NODE_FIXTURE = REPO / "standins" / "nodes" / "gpu-node.yaml"
HOST_REPORT = REPO / "tests" / "fixtures" / "proof" / "host" / "host-report-hgx.txt"


def node_names(count: int) -> list[str]:
    return [f"gpu-node-{i}" for i in range(count)]


def fresh_nodes(count: int, largest: int) -> None:
    """gpu-node-0..count-1 as new machines, and none of the others up to `largest`."""
    kubectl("delete", "node", *node_names(largest), "--ignore-not-found", "--wait=true")
    fixture = yaml.safe_load(NODE_FIXTURE.read_text())
    nodes = []
    for name in node_names(count):
        node = json.loads(json.dumps(fixture))
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        nodes.append(node)
    # Documents in JSON: YAML would leave a label value such as "09" unquoted, read back as a number.
    kubectl("apply", "-f", "-", input_text="\n---\n".join(json.dumps(node) for node in nodes))


@contextmanager
def check_pods_print_a_prepared_host(work: Path) -> Iterator[None]:
    check_pods_print(HOST_REPORT, work)
    try:
        yield
    finally:
        check_pods_print_nothing()


def host_check(count: int) -> None:
    """Preflight's read of the cluster with a check pod on every GPU node; fails unless each reported."""
    config = parse_config({**a100_config(), "preflight": {"hostAccess": {"checkPod": {"timeoutSeconds": 120}}}})
    facts = read_cluster_facts(PreflightSpec(preflight_expectations(config), config.preflight), cluster_access(config))
    checked = [node.name for node in facts.gpu_nodes if node.host is not None and node.host.error is None]
    if len(checked) != count:
        errors = {node.name: node.host and node.host.error for node in facts.gpu_nodes}
        raise SystemExit(f"host check: {len(checked)} of {count} nodes reported: {errors}")


def stack_timings(workspace: Workspace, stack: str, count: int, largest: int) -> dict[str, float]:
    """Preview, then cold up on fresh nodes; destroy afterwards, even when the up fails."""
    fresh_nodes(count, largest)
    timings = {f"{stack} preview": timed(lambda: workspace.pulumi("preview", stack=stack))}
    try:
        timings[f"{stack} cold up"] = timed(
            lambda: workspace.pulumi("up", "--yes", "--skip-preview", stack=stack, timeout=1800)
        )
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack=stack, timeout=1800, check=False)
    return timings


def helm_script_timing(helm: str, work: Path, stack: dict[str, Any], count: int, largest: int) -> float:
    """engine_vs_helm's sequential helm script installing the same dev stack, on fresh nodes."""
    fresh_nodes(count, largest)
    work.mkdir()
    try:
        return timed(partial(helm_script, helm, work, False, stack))
    finally:
        helm_cleanup(helm)


def one_size(base: Path, count: int, largest: int, helm: str, stacks: set[str]) -> dict[str, float]:
    fresh_nodes(count, largest)
    with check_pods_print_a_prepared_host(base):
        timings = {"host check": statistics.median(timed(lambda: host_check(count)) for _ in range(3))}
    if "dev" in stacks:
        dev = Workspace.create(base / f"dev-{count}")
        dev_stack = {**dev_config(), "lab": {**dev_config()["lab"], "prove": False, "gpuNodes": node_names(count)}}
        dev.new_stack("dev", dev_stack)
        timings |= stack_timings(dev, "dev", count, largest)
        timings["dev helm script"] = helm_script_timing(helm, base / f"helm-{count}", dev_stack, count, largest)
    if "a100" in stacks:
        a100 = Workspace.create(base / f"a100-{count}")
        a100.new_stack("a100", a100_config(), secrets={"registryPassword": PASSWORD, **inline_kubeconfig()})
        timings |= stack_timings(a100, "a100", count, largest)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description="Both stacks against 1 and against many fake GPU nodes.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--stacks", default="dev,a100", help="which stacks: dev (with the helm script), a100")
    args = parser.parse_args()
    stacks = set(args.stacks.split(","))
    if not stacks <= {"dev", "a100"}:
        parser.error(f"--stacks takes dev, a100 or both, comma-separated, not {args.stacks!r}")
    sizes = (1, args.nodes)
    helm = next(iter(helm_clients().values()))
    results: dict[int, dict[str, list[float]]] = {size: defaultdict(list) for size in sizes}
    try:
        with tempfile.TemporaryDirectory() as base:
            for round_number in range(args.rounds):
                for size in sizes:
                    work = Path(base) / f"round-{round_number}"
                    work.mkdir(exist_ok=True)
                    for name, seconds in one_size(work, size, args.nodes, helm, stacks).items():
                        results[size][name].append(seconds)
                    print(f"round {round_number + 1}, {size} node(s): done", flush=True)
    finally:
        fresh_nodes(1, args.nodes)  # the control plane as it was: gpu-node-0, a new machine
    one, many = ({k: statistics.median(v) for k, v in results[size].items()} for size in sizes)
    print(f"both stacks against 1 and {args.nodes} GPU nodes, median of {args.rounds} rounds (seconds)")
    print(f"  {'':16} {'1 node':>8} {f'{args.nodes} nodes':>9} {'ratio':>7}")
    for name in one:
        print(f"  {name:16} {one[name]:8.2f} {many[name]:9.2f} {many[name] / one[name]:6.2f}x")


if __name__ == "__main__":
    main()
