"""The dev stack (the laptop lab) under the real engine on the local control plane.

There is no kind here, so the lab uses the local control plane as an existing cluster, with
stand-in charts; fake GPUs come from the kwok node gpu-node-0, labelled and advertised by the stand-in
nvml-mock and device plugin (standins/operators). The lab proof runs against stand-ins for KAI's queue
accounting and the isolator's webhook (tests/integration/stand_ins.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.vocabulary.fractions import POLICY_NAME
from tests.integration.conftest import leftovers, webhooks_off_the_machine
from tests.integration.stand_ins import StandInQueueAccounting, isolator_webhook
from tests.integration.workspace import REPO, Workspace, helm, kubectl_json

pytestmark = pytest.mark.integration
NODE = "gpu-node-0"


def dev_config() -> dict[str, Any]:
    return {
        "profile": "lab",
        "cluster": {"kubeconfig": os.environ["KUBECONFIG"]},
        "kai": {"chart": {"chart": "charts/kai-scheduler"}},
        "lab": {
            "kind": None,
            "gpuNodes": [NODE],
            "nvmlMock": {"buildImage": False, "chart": {"chart": "charts/nvml-mock"}},
            "isolator": {"chart": {"chart": "charts/kai-resource-isolator"}},
        },
    }


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    base = tmp_path_factory.mktemp("dev")
    workspace = Workspace.create(base)
    workspace.new_stack("dev", dev_config())
    with isolator_webhook(base), StandInQueueAccounting("default-queue", gpu_memory_mib=40960):
        yield workspace
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="dev", check=False)


def test_preview_plans_the_lab_in_the_runbooks_order(dev: Workspace) -> None:
    preview = json.loads(dev.pulumi("preview", "--json", stack="dev").stdout)
    names = [step["urn"].rsplit("::", 1)[1] for step in preview["steps"] if step["op"] == "create"]
    for name in ("nvml-mock-release", "gpu-node-labels-gpu-node-0", "kai-scheduler-release", "queues-default-queue"):
        assert name in names, f"the preview must show {name}"


def test_up_runs_the_lab_and_reports_the_reservation_boundary(dev: Workspace) -> None:
    up = dev.pulumi("up", "--yes", "--skip-preview", stack="dev", timeout=1200)
    assert "KAI-Scheduler ready: all 4 checks hold" in up.output, "queues wait for KAI's webhooks to answer"
    assert "fractional-pod admission policy in force: all 2 checks hold" in up.output
    binding = kubectl_json("get", "validatingadmissionpolicybinding", POLICY_NAME)
    assert binding["spec"]["validationActions"] == ["Deny"], "the lab pods went in under the policy in deny mode"
    registered = {c["metadata"]["name"] for c in kubectl_json("get", "validatingwebhookconfigurations")["items"]}
    assert {"validating-kai-admission", "kai-queue-validation-v2"} <= registered, "the stand-in KAI registers them"
    assert webhooks_off_the_machine() == [], "every webhook the API server calls is on loopback"
    labels = kubectl_json("get", "node", NODE)["metadata"]["labels"]
    assert labels["nvidia.com/gpu.memory"] == "40960"
    assert labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    queue = kubectl_json("get", "queues.scheduling.run.ai", "default-queue")
    assert queue["spec"]["parentQueue"] == "default", "the lab's queue tree wins over the chart's default"
    runtime_class = kubectl_json("get", "runtimeclass", "nvidia")
    assert runtime_class["handler"] == "runc"
    config = kubectl_json("get", "configs.kai.scheduler", "kai-config")["spec"]
    assert config["binder"]["plugins"] == {"hamicore": {"enabled": True}}
    whole = kubectl_json("get", "pod", "kai-whole-gpu")
    assert whole["status"]["phase"] == "Running"
    shared = kubectl_json("get", "pod", "gpu-sharing-with-isolation")
    assert shared["metadata"]["annotations"]["gpu-memory"] == "20480"
    outputs = dev.outputs("dev")
    assert outputs["labPods"] == ["kai-whole-gpu", "gpu-sharing-with-isolation"]
    proof = {r["check"]: r for r in outputs["proof"]}
    assert list(proof) == ["allocatable-gpus", "queue-allocation", "isolator-injection", "reservation-boundary"]
    assert all(r["passed"] for r in proof.values()), proof
    assert "allocatable nvidia.com/gpu 8" in proof["allocatable-gpus"]["detail"]
    assert "1 whole + 0.50 shared" in proof["queue-allocation"]["detail"]
    assert "/etc/ld.so.preload and /usr/local/vgpu mounted" in proof["isolator-injection"]["detail"]
    # kwok runs the shared pod, so there is no reservation pod to stop it: the proof and the
    # boundary output say what was seen, not what the runbook expects.
    assert "the shared pod runs" in proof["reservation-boundary"]["detail"]
    assert outputs["sharedPodBoundary"] == proof["reservation-boundary"]["detail"]
    types = {resource["type"] for resource in dev.export("dev")["deployment"]["resources"]}
    assert {"kai-gpu-fractions:index:StepGate", "kai-gpu-fractions:index:LabProof"} <= types
    assert not [t for t in types if "pulumi-python" in t], "no Python dynamic resource: the plugin serves the checks"


def test_the_dev_stack_passes_the_policy_pack(dev: Workspace) -> None:
    result = dev.pulumi("preview", "--policy-pack", str(REPO / "policy"), stack="dev")
    assert "kai-gpu-fractions" in result.output and "mandatory" not in result.output, result.output


def test_a_release_removed_by_hand_comes_back_with_a_refreshed_up(dev: Workspace) -> None:
    helm("uninstall", "kai-resource-isolator", "--namespace", "kai-resource-isolator", "--wait")
    drift = dev.pulumi("preview", "--refresh", "--expect-no-changes", stack="dev", check=False)
    assert drift.returncode != 0, "a refreshed preview must see the missing release"
    dev.pulumi("up", "--yes", "--skip-preview", "--refresh", stack="dev", timeout=900)
    assert "kai-resource-isolator" in helm("list", "--namespace", "kai-resource-isolator", "--short").stdout
    dev.pulumi("preview", "--refresh", "--expect-no-changes", stack="dev")


def test_a_stack_the_previous_release_deployed_moves_to_the_plugin_and_no_check_runs_again(dev: Workspace) -> None:
    dev.as_previous_release("dev")
    preview = json.loads(dev.pulumi("preview", "--json", "--show-sames", stack="dev").stdout)
    steps = {step["urn"].split("::", 2)[2]: step["op"] for step in preview["steps"]}
    moved = [kind for kind, op in steps.items() if ":index:" in kind and op == "same"]
    assert len(moved) == 5, steps
    # What came after that release, and only that: the one wait for the namespaces at destroy, which
    # their own deletion now leaves to it.
    changed = {kind.rsplit("::", 1)[1]: op for kind, op in steps.items() if op != "same"}
    later = ["kai-scheduler-namespace", "kai-scheduler-reservation-namespace", "isolator-namespace"]
    assert changed == {"namespaces-gone": "create", **dict.fromkeys(later, "update")}, steps
    up = dev.pulumi("up", "--yes", "--skip-preview", stack="dev")
    assert "checks hold" not in up.output, "no gate runs again"
    types = {resource["type"] for resource in dev.export("dev")["deployment"]["resources"]}
    assert not any(t.startswith("pulumi-python") or t == "pulumi:providers:pulumi-python" for t in types), types
    assert "kai-gpu-fractions:index:LabProof" in types
    dev.pulumi("preview", "--expect-no-changes", stack="dev")


def verify_destroyed(export: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tools.verify_destroyed", str(export)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_destroy_removes_the_lab_and_only_the_labels_it_added_even_after_drift(dev: Workspace) -> None:
    export = dev.root / "before-destroy.json"
    dev.pulumi("stack", "export", "--file", str(export), stack="dev")
    deployed = verify_destroyed(export)
    assert deployed.returncode == 1 and "HelmRelease kai-scheduler/kai-scheduler" in deployed.stderr, (
        "the check must see a deployed stack as left behind"
    )
    helm("uninstall", "kai-scheduler", "--namespace", "kai-scheduler", "--wait")
    dev.pulumi("destroy", "--yes", "--skip-preview", "--refresh", stack="dev", timeout=900)
    labels = kubectl_json("get", "node", NODE)["metadata"]["labels"]
    assert "nvidia.com/gpu.memory" not in labels, "the stack's labels go with it"
    assert "nvidia.com/gpu.present" not in labels, "nvml-mock's cleanup removes the label its setup added"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true", "labels nobody here added stay"
    assert leftovers() == {}
    destroyed = verify_destroyed(export)
    assert destroyed.returncode == 0, destroyed.stderr
