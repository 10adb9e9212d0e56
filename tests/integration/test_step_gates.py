"""The gates between the guide's steps under the real engine, with the stand-in operators slow or absent.

The stand-in operators (standins/operators) do at run time what the real ones do: the GPU Operator's
RuntimeClass and GFD labels, KAI's Deployments, gpu-fractioning's DaemonSets and node conditions.
Here they are made slow, so `up` must wait for them, or never do their work, so the gate after
their step must fail the update before the next step creates anything
(test_step_gates_time_out.py, a module of its own so that another worker can run it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from standins.operators.gpu_fractioning import RECORD
from tests.integration.conftest import leftovers, mpsd_stops, stand_in_operators
from tests.integration.gpu_nodes import stuck_in_a_driver_upgrade
from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import Workspace, kubectl, kubectl_json, wait_until

pytestmark = pytest.mark.integration


def exists(*args: str) -> bool:
    return kubectl("get", *args, check=False).returncode == 0


def patched_by_the_stack(*queues: str) -> list[str]:
    """The chart's Queues that the stack's server-side apply has written to."""
    patched = []
    for queue in queues:
        found = kubectl_json("get", "queues.scheduling.run.ai", queue, "--show-managed-fields")
        # The kubernetes provider's server-side apply; the release it installs writes as an Update.
        managers = found["metadata"].get("managedFields") or []
        if any(m.get("manager", "").startswith("pulumi") and m.get("operation") == "Apply" for m in managers):
            patched.append(queue)
    return patched


def new_a100(tmp_path: Path, name: str, **sections: dict[str, Any]) -> Workspace:
    workspace = Workspace.create(tmp_path)
    config = a100_config()
    for key, values in sections.items():
        config[key] = {**config.get(key, {}), **values}
    workspace.new_stack(name, config, secrets={"registryPassword": PASSWORD})
    return workspace


def test_up_waits_for_each_slow_operator_and_then_succeeds(tmp_path: Path) -> None:
    workspace = new_a100(tmp_path, "slow")
    try:
        # Long enough for each gate to be seen waiting, and for the look below while the driver loads.
        with stand_in_operators(gpu_operator=6, kai_operator=3, kai_webhooks=3, gpu_fractioning=3):
            run = workspace.start("up", "--yes", "--skip-preview", stack="slow")
            wait_until(lambda: exists("runtimeclass", "nvidia"), timeout=300, what="the operator's RuntimeClass")
            # The driver is still loading: no GFD labels, no GPUs advertised, and KAI not started.
            labels = kubectl_json("get", "node", "gpu-node-0")["metadata"]["labels"]
            assert "nvidia.com/gpu.memory" not in labels
            assert not exists("namespace", "kai-scheduler"), "KAI must wait for the GPU Operator's gate"
            output, _ = run.communicate(timeout=900)
        assert run.returncode == 0, output[-4000:]
        assert "GPU Operator ready: waiting" in output and "gpu-nodes: gpu-node-0: " in output
        assert "GPU Operator ready: all 5 checks hold after" in output
        assert "KAI-Scheduler ready: waiting" in output and "not created yet: admission" in output
        # The operator registers its webhooks with its Deployments; their pods answer 3 s later.
        assert "kai-queue-validation-v2 does not answer: a dry-run create of queues was refused" in output
        assert "KAI-Scheduler ready: all 5 checks hold after" in output
        refused = [line for line in output.splitlines() if "failed calling webhook" in line]
        assert all("KAI-Scheduler ready: waiting" in line for line in refused), "only the gate met a refusal"
        assert "gpu-fractioning node agents ready: waiting" in output
        assert "gpu-fractioning node agents ready: all 6 checks hold after" in output
        assert kubectl_json("get", "pod", "fraction-smoke-a")["status"]["phase"] == "Running"
        the_daemons_leave_a_node_in_a_driver_upgrade_and_come_back("gpu-node-0")
        kubectl("-n", "kube-system", "delete", "configmap", RECORD, "--ignore-not-found")
        # Destroyed as the release before the provider plugin left it, before any `up` moved it: the
        # destroy-time waits run from their pickled dynamic providers.
        workspace.as_previous_release("slow")
        assert "pulumi-python:dynamic/kai-gpu-fractions:PodsGoneBeforeUninstall" in json.dumps(workspace.export("slow"))
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="slow", timeout=900)
        assert mpsd_stops() == ["operator-running"], "the chart goes only after the mpsd pods are gone"
    finally:
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="slow", check=False, timeout=900)
    assert leftovers() == {}


def daemons_on(node: str) -> list[str]:
    pods = kubectl_json("get", "pods", "-A", "-l", "app.kubernetes.io/managed-by=gpu-fractioning")["items"]
    return sorted(
        p["metadata"]["labels"]["app.kubernetes.io/component"] for p in pods if p["spec"].get("nodeName") == node
    )


def driver_upgrade_in_progress() -> str | None:
    config = kubectl_json("get", "gpufractioningconfigs.gpu-fractioning.kai.scheduler", "default")
    found = [c for c in config.get("status", {}).get("conditions", []) if c["type"] == "DriverUpgradeInProgress"]
    return found[0]["status"] if found else None


def the_daemons_leave_a_node_in_a_driver_upgrade_and_come_back(node: str) -> None:
    """As the fork's daemons do under their upgrade node affinity: the DaemonSet controller removes them
    when the GPU Operator's upgrade controller labels the node, and brings them back once the label is
    gone."""
    assert daemons_on(node) == ["fractiond", "mpsd"] and driver_upgrade_in_progress() == "False"
    with stuck_in_a_driver_upgrade(node):
        wait_until(lambda: daemons_on(node) == [], timeout=120, what=f"mpsd and fractiond to leave {node}")
        wait_until(lambda: driver_upgrade_in_progress() == "True", timeout=60, what="DriverUpgradeInProgress=True")
    wait_until(lambda: daemons_on(node) == ["fractiond", "mpsd"], timeout=120, what=f"the daemons back on {node}")
    wait_until(lambda: driver_upgrade_in_progress() == "False", timeout=60, what="DriverUpgradeInProgress=False")
