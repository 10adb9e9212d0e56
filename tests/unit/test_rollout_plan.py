"""The rollout plan a preview shows: what the cluster runs, read from the objects upstream writes, and
what a driver, chart or pin change will do to its GPU nodes and fractional pods."""

from __future__ import annotations

from typing import Any

import pytest

from components.config.model import RolloutConfig
from components.rollout.plan import NodeLoad, Versions, plan_rollout, read_installed, read_loads
from tests.unit.fake_cluster import FakeCluster
from tests.unit.harness import ProgramRunner

RUNNING = Versions("615.71.09", "v26.7.1", "smshare-44d1d0a-af0544e", "smshare-44d1d0a-af0544e")
LOADS = [NodeLoad("gpu-node-0", 2, 1), NodeLoad("gpu-node-1", 3, 0)]


def wanted(**changes: Any) -> Versions:
    return Versions(**{**RUNNING.__dict__, **changes})


def test_nothing_changed_rolls_nothing() -> None:
    assert plan_rollout(RUNNING, RUNNING, LOADS) == ["no GPU-side change: nothing rolls"]


def test_a_first_install_has_nothing_to_roll() -> None:
    assert plan_rollout(Versions(None, None, None, None), RUNNING, []) == [
        "first install: no GPU software of this stack is running yet"
    ]


def test_a_driver_bump_reinstalls_node_by_node_and_drains_each_nodes_fractional_pods_first() -> None:
    plan = plan_rollout(RUNNING, wanted(driver="615.80.01"), LOADS)
    assert plan[0].startswith(
        "driver 615.71.09 -> 615.80.01: full driver reinstall on each of 2 GPU nodes, one node at a time"
    )
    assert "gpu-node-0 (2 fractional, 1 reservation), gpu-node-1 (3 fractional, 0 reservation)" in plan[0]
    assert "fractional jobs get 300s to finish" in plan[1]
    assert "(5 fractional pods in all)" in plan[1]


def test_a_stopped_rollout_is_planned_from_the_node_it_stopped_at() -> None:
    loads = [
        NodeLoad("gpu-node-0", 0, 0, "615.80.01"),
        NodeLoad("gpu-node-1", 0, 0, "615.71.09"),
        NodeLoad("gpu-node-2", 1, 0, "615.71.09", stopped=True),
        NodeLoad("gpu-node-3", 0, 0, None),
    ]
    (line,) = plan_rollout(wanted(driver="615.80.01"), wanted(driver="615.80.01"), loads)
    assert line == (
        "driver 615.80.01: an unfinished rollout, 2 of 4 GPU nodes do not report it yet; up takes them, one node "
        "at a time, in this order: gpu-node-2 (1 fractional, 0 reservation), gpu-node-1 (0 fractional, 0 reservation)"
    ), "the stopped node first; a node reporting no driver yet is installing, not behind"
    done = [NodeLoad("gpu-node-0", 0, 0, "615.80.01"), NodeLoad("gpu-node-3", 0, 0, None)]
    assert plan_rollout(wanted(driver="615.80.01"), wanted(driver="615.80.01"), done) == [
        "no GPU-side change: nothing rolls"
    ]


def test_a_driver_bump_names_the_configured_pace() -> None:
    pace = RolloutConfig(max_nodes_at_once=3, drain_grace_seconds=60)
    plan = plan_rollout(RUNNING, wanted(driver="615.80.01"), LOADS, pace)
    assert "3 nodes at a time (gpuOperator.rollout.maxNodesAtOnce)" in plan[0]
    assert "fractional jobs get 60s to finish" in plan[1]


def test_a_chart_bump_with_the_same_driver_restarts_operands_and_warns_of_a_new_driver_manager() -> None:
    (line,) = plan_rollout(RUNNING, wanted(gpu_operator="v26.7.2"), LOADS)
    assert line.startswith("GPU Operator chart v26.7.1 -> v26.7.2: operator roll and operand restart")
    assert "reinstalls the driver on every node" in line


def test_one_tag_for_both_forks_rolls_kai_and_the_node_agents_together() -> None:
    tag = "smshare-1111111-af0544e"
    plan = plan_rollout(RUNNING, wanted(kai_tag=tag, agents_tag=tag), LOADS)
    assert [line.split(":")[0] for line in plan] == [
        f"KAI-Scheduler images {RUNNING.kai_tag} -> {tag}",
        f"gpu-fractioning images {RUNNING.agents_tag} -> {tag}",
    ]
    assert "not a rollback" in plan[0], "KAI's chart does not support helm rollback"
    assert "under 5 running fractional pods" in plan[1]


def test_a_host_driver_or_an_unmanaged_operator_plans_no_driver_change() -> None:
    assert plan_rollout(RUNNING, wanted(driver=None, gpu_operator=None), LOADS) == ["no GPU-side change: nothing rolls"]


def pod(name: str, namespace: str, node: str, annotations: dict[str, str], phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
        "spec": {"nodeName": node},
        "status": {"phase": phase},
    }


def test_the_readers_take_what_upstream_writes() -> None:
    cluster = FakeCluster()
    policy = {
        "metadata": {"name": "cluster-policy", "labels": {"app.kubernetes.io/version": "v26.7.1"}},
        "spec": {"driver": {"enabled": True, "version": "615.71.09"}},
    }
    cluster.put("clusterpolicies.nvidia.com", policy)
    operator = {
        "metadata": {"name": "kai-operator"},
        "spec": {"template": {"spec": {"containers": [{"image": "registry:5000/team/kai/operator:smshare-a"}]}}},
    }
    cluster.put("deployments.apps", operator, namespace="kai-scheduler")
    assert read_installed(cluster, "kai-scheduler", "gpu-fractioning") == Versions(
        "615.71.09", "v26.7.1", "smshare-a", None
    ), "a registry port is not a tag; a namespace with no operator has none"
    cluster.put("nodes", {"metadata": {"name": "gpu-node-0", "labels": {"nvidia.com/gpu.present": "true"}}})
    stopped = {
        "name": "gpu-node-1",
        "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/cuda.driver-version.full": "615.71.09"},
        "annotations": {"kai-gpu-fractions/driver-rollout": "5c764d6979"},
    }
    cluster.put("nodes", {"metadata": stopped})
    cluster.put("nodes", {"metadata": {"name": "cpu-node", "labels": {}}})
    cluster.put(
        "pods",
        pod("half", "team", "gpu-node-0", {"gpu-fraction": "0.5"}),
        pod("capped", "team", "gpu-node-0", {"nvidia.com/container.main.gpu-memory.limit": "10240"}),
        pod("done", "team", "gpu-node-1", {"gpu-fraction": "0.5"}, phase="Succeeded"),
        pod("whole", "team", "gpu-node-1", {}),
        namespace="team",
    )
    cluster.put(
        "pods", pod("reservation", "kai-resource-reservation", "gpu-node-1", {}), namespace="kai-resource-reservation"
    )
    assert read_loads(cluster) == [
        NodeLoad("gpu-node-0", 2, 0),
        NodeLoad("gpu-node-1", 0, 1, "615.71.09", stopped=True),
    ]


@pytest.mark.parametrize("preview", [True, False])
def test_the_fork_stack_outputs_the_plan_it_read_before_registering(run_program: ProgramRunner, preview: bool) -> None:
    running = (RUNNING, LOADS)
    config = {
        "registry": {"server": "registry.example.com/team/kai-fork"},
        "gpuOperator": {"driver": {"version": "615.80.01"}},
    }
    _, outputs = run_program(config, preview=preview, running=running)
    assert outputs["rolloutPlan"][0].startswith("driver 615.71.09 -> 615.80.01: full driver reinstall")
