"""The a100 stack under the real engine on the local control plane, with stand-in charts.

Image builds are skipped here (`forks.images: prebuilt`); tests/integration/test_fork_supply.py
builds, pushes and verifies them against the control plane's registry.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cluster.objects import is_fractional
from components.vocabulary.fractions import POLICY_NAME
from components.vocabulary.nvidia import DRIVER_FULL_LABEL as DRIVER_LABEL
from standins.operators.cluster import path
from tests.integration.conftest import (
    NODE,
    RECORD,
    leftovers,
    mpsd_stops,
    stand_in_operators,
    webhooks_off_the_machine,
)
from tests.integration.gpu_nodes import (
    TEAM,
    fractional_pod,
    more_gpu_nodes,
    reservation_pod,
    stuck_in_a_driver_upgrade,
    watched,
)
from tests.integration.stand_ins import device_query_on_nodes_prints
from tests.integration.workspace import (
    REPO,
    Workspace,
    api,
    kubectl,
    kubectl_json,
    wait_until,
)
from tools.preview_summary import parse, summarize

pytestmark = pytest.mark.integration

PASSWORD = "registry-password-7f3a9c"
TAG = "smshare-44d1d0a-af0544e"
REGISTRY = "registry.example.com/team/kai-fork"


def a100_config() -> dict[str, Any]:
    """Pulumi.a100.yaml as shipped, pointed at the local control plane and the stand-in charts."""
    shipped = yaml.safe_load((REPO / "Pulumi.a100.yaml").read_text())["config"]
    config = {key.split(":", 1)[1]: value for key, value in shipped.items()}
    # The kubeconfig's contents, credentials included, as a secret (see the a100 fixture).
    config.pop("cluster", None)
    config["registry"] = {**config["registry"], "username": "robot"}
    config["forks"] = {**config["forks"], "images": "prebuilt"}
    config["gpuOperator"] = {**config["gpuOperator"], "chart": {"chart": "charts/gpu-operator"}}
    config["kai"] = {"chart": {"chart": "charts/kai-scheduler"}}
    config["gpuFractioning"] = {"chart": {"chart": "charts/gpu-fractioning"}}
    # kwok's pods are not real containers: nothing can exec into them to prove the caps.
    config["smokeTest"] = {"prove": False}
    return config


@pytest.fixture(scope="module")
def a100(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = Workspace.create(tmp_path_factory.mktemp("a100"))
    workspace.new_stack("a100", a100_config(), secrets={"registryPassword": PASSWORD, **inline_kubeconfig()})
    yield workspace
    workspace.pulumi("destroy", "--yes", "--skip-preview", stack="a100", check=False)


def test_preview_shows_the_whole_graph_before_anything_exists(a100: Workspace) -> None:
    preview = json.loads(a100.pulumi("preview", "--json", stack="a100").stdout)
    creates = {step["urn"].rsplit("::", 1)[1] for step in preview["steps"] if step["op"] == "create"}
    for name in (
        "gpu-operator-release",
        "gpu-operator-ready",
        "kai-scheduler-release",
        "kai-scheduler-ready",
        "gpu-fractioning-release",
        "gpu-fractioning-ready",
        "smoke-test-a",
    ):
        assert name in creates, f"the preview must show {name}"
    assert kubectl("get", "namespace", "kai-scheduler", check=False).returncode != 0, "preview changes nothing"


def test_up_installs_the_guides_stack_in_order(a100: Workspace) -> None:
    up = a100.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=1200)
    gates = (
        "GPU Operator ready: all 5",
        "KAI-Scheduler ready: all 5",
        "gpu-fractioning node agents ready: all 6",
        "fractional-pod admission policy in force: all 2",
    )
    for gate in gates:
        assert gate in up.output, f"the update must report the gate '{gate} checks hold'"
    assert "rollout plan: first install: no GPU software of this stack is running yet" in up.output
    binding = kubectl_json("get", "validatingadmissionpolicybinding", POLICY_NAME)
    assert binding["spec"]["validationActions"] == ["Deny"], "the smoke pods went in under the policy in deny mode"
    outputs = a100.outputs("a100")
    assert outputs["imageTag"] == TAG
    assert outputs["releases"] == {
        "gpu-operator": "deployed",
        "kai-scheduler": "deployed",
        "gpu-fractioning": "deployed",
    }
    assert outputs["smokePods"] == ["fraction-smoke-a", "fraction-smoke-b"]

    config = kubectl_json("get", "configs.kai.scheduler", "kai-config")
    assert config["spec"]["global"]["gpuSharingMode"] == "NvFractions"
    assert config["spec"]["binder"]["service"]["image"] == {
        "name": "binder",
        "repository": f"{REGISTRY}/kai-scheduler",
        "tag": TAG,
    }
    assert config["spec"]["binder"]["resourceReservation"]["runtimeClassName"] == "nvidia"
    dependencies = {c["type"]: c for c in config["status"]["conditions"]}["DependenciesFulfilled"]
    assert dependencies["status"] == "True", "KAI sees gpu-fractioning's config Ready once Step 4 is done"
    images = {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"]
        for d in kubectl_json("-n", "kai-scheduler", "get", "deployments")["items"]
    }
    assert images["kai-operator"] == f"{REGISTRY}/kai-scheduler/operator:{TAG}"
    assert images["binder"] == f"{REGISTRY}/kai-scheduler/binder:{TAG}", "KAI's operator runs the fork's images"
    runtime_class = kubectl_json("get", "runtimeclass", "nvidia")
    assert runtime_class["metadata"]["ownerReferences"][0]["kind"] == "ClusterPolicy", "the operator's, not a chart's"
    node = kubectl_json("get", "node", NODE)
    assert node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] == "615.71.09"
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    operator = kubectl_json("-n", "gpu-fractioning", "get", "deployment", "gpu-fractioning")
    assert (
        operator["spec"]["template"]["spec"]["containers"][0]["image"]
        == f"{REGISTRY}/kai-gpu-fractioning/operator:{TAG}"
    )
    gfc = kubectl_json("get", "gpufractioningconfig", "default")
    assert gfc["spec"]["mpsDaemon"] == {"resources": {"limits": {"memory": "1Gi"}}}
    policy = kubectl_json("get", "clusterpolicies.nvidia.com", "cluster-policy")
    assert policy["spec"]["driver"]["version"] == "615.71.09"
    assert policy["spec"]["driver"]["upgradePolicy"]["autoUpgrade"] is False, "this program rolls a new driver out"
    for pod in ("fraction-smoke-a", "fraction-smoke-b"):
        live = kubectl_json("get", "pod", pod)
        assert live["status"]["phase"] == "Running"
        assert live["spec"]["runtimeClassName"] == "nvidia"
    secret = kubectl_json("-n", "kai-scheduler", "get", "secret", "kai-fork-registry")
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    registered = kubectl("get", "validatingwebhookconfigurations", "-o", "name").stdout.split()
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/kai-queue-validation-v2" in registered
    assert webhooks_off_the_machine() == [], "KAI's webhooks are registered, each called on loopback"


def is_default_provider(resource: dict[str, Any]) -> bool:
    return resource["type"].startswith("pulumi:providers:") and resource["urn"].rsplit("::", 1)[1].startswith("default")


def test_a_second_up_changes_nothing(a100: Workspace) -> None:
    result = a100.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", "--json", stack="a100")
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    (summary,) = [e["summaryEvent"] for e in events if "summaryEvent" in e]
    changes = {op: n for op, n in summary["resourceChanges"].items() if op != "same"}
    assert changes == {}, f"a re-run must converge to no changes, got {changes}"
    state = json.loads(a100.pulumi("stack", "export", stack="a100").stdout)
    # Default providers (the one the dynamic resources use) are in the state but not in the count.
    resources = [r for r in state["deployment"]["resources"] if not is_default_provider(r)]
    assert summary["resourceChanges"]["same"] == len(resources), "every resource was compared"
    assert a100.outputs("a100")["rolloutPlan"] == ["no GPU-side change: nothing rolls"]


def test_a_preview_of_a_driver_bump_names_the_rollout_it_would_start(a100: Workspace) -> None:
    """The plan is read from the running cluster (the ClusterPolicy, the operators' images, each GPU
    node's fractional and reservation pods) before anything registers."""
    installed = kubectl_json("get", "clusterpolicy", "cluster-policy")["spec"]["driver"]["version"]
    a100.pulumi("config", "set", "--path", "gpuOperator.driver.version", "615.99.01", stack="a100")
    events = a100.root / "driver-bump.events.json"
    try:
        # --event-log is one of the CLI's debug flags, as CI's preview job uses it.
        preview = a100.pulumi(
            "preview", "--event-log", str(events), stack="a100", env={"PULUMI_DEBUG_COMMANDS": "true"}
        )
    finally:
        a100.pulumi("config", "set", "--path", "gpuOperator.driver.version", installed, stack="a100")
    nodes = kubectl_json("get", "nodes", "-l", "nvidia.com/gpu.present=true")["items"]
    planned = f"driver {installed} -> 615.99.01: full driver reinstall on each of {len(nodes)} GPU node"
    assert f"rollout plan: {planned}" in preview.output, preview.output[-3000:]
    assert "fractional jobs get 300s to finish" in preview.output
    # The pull request's summary, from the engine's own event log.
    summary = summarize(parse(events.read_text()))
    assert "#### Rollout plan" in summary and f"- {planned}" in summary, summary


def test_the_gpu_operator_gate_names_a_node_stuck_in_a_driver_upgrade_and_its_pods(a100: Workspace) -> None:
    """The GPU Operator's own upgrade controller, switched on by hand, meets KAI's reservation pod: the
    real state machine leaves the node cordoned in upgrade-failed. A shorter wait re-runs the gate,
    which fails naming the node, its state and the pods that block it; once the node is back, the next
    up passes."""
    node = kubectl_json("get", "pod", "fraction-smoke-a")["spec"]["nodeName"]
    with stuck_in_a_driver_upgrade(node):
        a100.pulumi("config", "set", "--path", "gpuOperator.readyTimeoutSeconds", "10", stack="a100")
        failed = a100.pulumi("up", "--yes", "--skip-preview", stack="a100", check=False)
        assert failed.returncode != 0, "a node in a driver upgrade holds the GPU Operator's gate"
        assert (
            f"FAIL driver-upgrade: {node}: upgrade-failed, cordoned; GPU pods with no owner, which it does not "
            f"delete: kai-resource-reservation/gpu-reservation-{node}; fractional pods, which it does not drain:"
        ) in failed.output, failed.output[-3000:]
        assert "default/fraction-smoke-a" in failed.output
    # The failed update kept the gate's last inputs: with the shorter wait still asked for, it runs again.
    passed = a100.pulumi("up", "--yes", "--skip-preview", stack="a100")
    assert "GPU Operator ready: all 5 checks hold" in passed.output
    a100.pulumi("config", "rm", "--path", "gpuOperator.readyTimeoutSeconds", stack="a100")
    # mpsd left the node under its upgrade affinity; once it is back, forget that stop for destroy's check.
    wait_until(lambda: mpsd_on(node), timeout=120, what=f"mpsd back on {node}")
    kubectl("-n", "kube-system", "delete", "configmap", RECORD, "--ignore-not-found")


def mpsd_pods() -> list[dict[str, Any]]:
    return api().list(path("v1", "pods", "gpu-fractioning"), "app.kubernetes.io/component=mpsd")


def mpsd_nodes() -> list[str]:
    """The nodes of every mpsd pod, those being deleted included."""
    return sorted(p["spec"].get("nodeName", "") for p in mpsd_pods())


def mpsd_on(node: str) -> bool:
    on_node = [p for p in mpsd_pods() if p["spec"].get("nodeName") == node]
    # The stopped one gone too: its stop is recorded when it goes.
    return bool(on_node) and not any(p["metadata"].get("deletionTimestamp") for p in on_node)


ROLLOUT = {"maxNodesAtOnce": 1, "drainGraceSeconds": 2, "nodeTimeoutSeconds": 180}


def set_driver(a100: Workspace, version: str) -> None:
    a100.pulumi("config", "set", "--path", "gpuOperator.driver.version", version, stack="a100")


def node_state(name: str) -> tuple[str, bool, list[str]]:
    """The driver GFD reports on the node, whether it is cordoned, and its taints' keys."""
    node = api().get(path("v1", "nodes", name=name))
    assert node is not None, f"node {name} is gone"
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    return node["metadata"]["labels"].get(DRIVER_LABEL, ""), bool(node["spec"].get("unschedulable")), taints


def driver_pods() -> dict[str, dict[str, Any]]:
    pods = api().list(path("v1", "pods", "gpu-operator"), "app=nvidia-driver-daemonset")
    return {p["spec"]["nodeName"]: p for p in pods if not p["metadata"].get("deletionTimestamp")}


def test_a_driver_bump_takes_each_of_four_gpu_nodes_in_turn_and_stops_at_one_that_cannot_unload(
    a100: Workspace,
) -> None:
    """Four GPU nodes with fractional and reservation pods: a driver bump cordons one node at a time and
    drains only that node's pods; the gates and the smoke pods follow on the new driver. A second bump
    meets a pod on gpu-node-2 that holds the driver and tolerates the rollout's taint: the rollout stops
    there naming it, the other nodes serve, and the rerun after the fix takes up where it stopped."""
    for key, value in ROLLOUT.items():
        a100.pulumi("config", "set", "--path", f"gpuOperator.rollout.{key}", str(value), stack="a100")
    installed = kubectl_json("get", "clusterpolicy", "cluster-policy")["spec"]["driver"]["version"]
    names = [NODE, "gpu-node-1", "gpu-node-2", "gpu-node-3"]
    proofs = device_query_on_nodes_prints(names, a100.root)
    with stand_in_operators(mpsd_stop=1), more_gpu_nodes(names[1:]), proofs:
        wait_until(lambda: all(node_state(n)[0] == installed and mpsd_on(n) for n in names), 180, "four GPU nodes")
        pods = [fractional_pod(f"job-{n}", n) for n in names] + [reservation_pod(n) for n in names]
        kubectl("create", "namespace", TEAM)
        kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(pods))
        set_driver(a100, "615.99.01")
        with watched() as timeline:
            up = a100.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=900)
        assert "driver rollout: 615.99.01 to 4 of 4 GPU nodes, 1 at a time" in up.output, up.output[-3000:]
        proved = [line for line in up.output.splitlines() if ": fractions proved (" in line]
        # Each progress line shows twice: as it happens and in the update's diagnostics.
        assert list(dict.fromkeys(line.split("driver rollout: ")[1].split(":")[0] for line in proved)) == names
        assert timeline.most_cordoned == 1, "never more nodes cordoned than gpuOperator.rollout.maxNodesAtOnce"
        ours = {f"{TEAM}/job-{n}": n for n in names} | {
            f"kai-resource-reservation/gpu-reservation-{n}": n for n in names
        }
        drained = {pod: (node, cordoned) for pod, node, cordoned in timeline.gone if pod in ours}
        assert set(drained) == set(ours), "every fractional and reservation pod was drained"
        for pod, (node, cordoned) in drained.items():
            assert cordoned == {node}, f"{pod} went while {sorted(cordoned)} were cordoned, not its node alone"
        assert all(node_state(n) == ("615.99.01", False, []) for n in names), [node_state(n) for n in names]
        for gate in ("GPU Operator ready: all 5", "gpu-fractioning node agents ready: all 6"):
            assert gate in up.output, f"{gate} checks hold again on the new driver"
        smoke = kubectl_json("get", "pod", "fraction-smoke-a")
        assert smoke["metadata"]["annotations"]["kai-gpu-fractions/started-on-driver"] == "615.99.01"

        # A whole-GPU pod that tolerates every taint keeps the driver busy on gpu-node-2.
        holder = fractional_pod("gpu-holder", "gpu-node-2")
        holder["metadata"]["annotations"] = {}
        holder["spec"]["tolerations"] = [{"operator": "Exists"}]
        kubectl("apply", "-f", "-", input_text=yaml.safe_dump(holder))
        set_driver(a100, "615.99.02")
        failed = a100.pulumi("up", "--yes", "--skip-preview", stack="a100", check=False, timeout=900)
        assert failed.returncode != 0
        assert "driver rollout stopped at gpu-node-2: its new driver pod gpu-operator/" in failed.output, failed.output[
            -3000:
        ]
        assert "Init:CrashLoopBackOff (k8s-driver-manager" in failed.output
        assert f"still using the GPU on gpu-node-2: {TEAM}/gpu-holder" in failed.output
        assert [node_state(n)[:2] for n in names] == [
            ("615.99.02", False),
            ("615.99.02", False),
            ("615.99.01", True),
            ("615.99.01", False),
        ], "the failed node stays cordoned, the ones before it are done, the one after it untouched"
        finished = {n: driver_pods()[n]["metadata"]["uid"] for n in names[:2]}
        kubectl("-n", TEAM, "delete", "pod", "gpu-holder", "--wait=true")
        resume = a100.pulumi("preview", stack="a100")
        assert (
            "rollout plan: driver 615.99.02: an unfinished rollout, 2 of 4 GPU nodes do not report it yet; up takes "
            "them, one node at a time, in this order: gpu-node-2 (0 fractional, 0 reservation), gpu-node-3"
        ) in resume.output, "the preview names the rollout the rerun performs"
        rerun = a100.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=900)
        assert "driver rollout: 615.99.02 to 2 of 4 GPU nodes, 1 at a time: gpu-node-2, gpu-node-3" in rerun.output
        assert {n: driver_pods()[n]["metadata"]["uid"] for n in names[:2]} == finished, "finished nodes not redone"
        assert all(node_state(n) == ("615.99.02", False, []) for n in names)
        kubectl("delete", "namespace", TEAM, "--wait=true")
    # mpsd left each node during the rollout and with the nodes: once those pods are gone, forget their
    # stops for destroy's check.
    wait_until(lambda: mpsd_nodes() == [NODE], 120, "mpsd gone with the removed nodes")
    kubectl("-n", "kube-system", "delete", "configmap", RECORD, "--ignore-not-found")


def pod_images(namespace: str, selector: str) -> dict[str, tuple[str, str]]:
    """Each live pod's node, with its uid and its first container's image."""
    pods = kubectl_json("-n", namespace, "get", "pods", "-l", selector)["items"]
    return {
        p["spec"]["nodeName"]: (p["metadata"]["uid"], p["spec"]["containers"][0]["image"])
        for p in pods
        if not p["metadata"].get("deletionTimestamp") and p["spec"].get("nodeName")
    }


def running_fractional_pods() -> int:
    pods = kubectl_json("get", "pods", "-A", "--field-selector=status.phase=Running")["items"]
    return sum(1 for p in pods if is_fractional(p))


def deployment_tags(namespace: str) -> set[str]:
    deployments = kubectl_json("-n", namespace, "get", "deployments")["items"]
    images = [c["image"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"]]
    return {image.rsplit(":", 1)[1] for image in images if ":" in image.rsplit("/", 1)[-1]}


def bump(a100: Workspace, key: str, value: str) -> tuple[str, str]:
    """The preview's rollout plan for one config change, then the `up` of it, watched: (plan, up output)."""
    a100.pulumi("config", "set", "--path", key, value, stack="a100")
    preview = a100.pulumi("preview", stack="a100")
    plan = "\n".join(line for line in preview.output.splitlines() if "rollout plan: " in line)
    return plan, a100.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=900).output


CHART_BUMP = "v26.7.2"
PIN_BUMPS = (
    ("forks.kaiScheduler.commit", "5f0e2a7c1b9d4e6f8a0b2c4d6e8f0a1b3c5d7e9f"),
    ("forks.gpuFractioning.commit", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"),
)


def a_chart_bump_restarts_the_operands_and_reinstalls_no_driver(a100: Workspace, names: list[str]) -> set[str]:
    """The pods the bump took away (the caller checks none of them is its own)."""
    chart = a100.root / f"charts-{CHART_BUMP}" / "gpu-operator"
    shutil.copytree(REPO / "standins/charts/gpu-operator", chart)
    (chart / "Chart.yaml").write_text((chart / "Chart.yaml").read_text().replace("v26.7.1", CHART_BUMP))
    drivers, plugins = driver_pods(), pod_images("gpu-operator", "app=nvidia-device-plugin-daemonset")
    a100.pulumi("config", "set", "--path", "gpuOperator.chart.chart", str(chart.relative_to(a100.root)), stack="a100")
    with watched() as timeline:
        plan, up = bump(a100, "gpuOperator.chart.version", CHART_BUMP)
    planned = f"GPU Operator chart v26.7.1 -> {CHART_BUMP}: operator roll and operand restart on each of 4 GPU nodes"
    assert f"rollout plan: {planned}" in plan, plan
    assert "driver rollout: " not in up, "the same driver: no node is reinstalled"
    assert {n: p["metadata"]["uid"] for n, p in driver_pods().items()} == {
        n: p["metadata"]["uid"] for n, p in drivers.items()
    }
    restarted = pod_images("gpu-operator", "app=nvidia-device-plugin-daemonset")
    assert sorted(restarted) == sorted(names) and all(
        restarted[n][0] != plugins[n][0] and restarted[n][1].endswith(f":{CHART_BUMP}") for n in names
    ), f"every node's operands restarted on the new chart's versions: {restarted}"
    assert CHART_BUMP in deployment_tags("gpu-operator"), "the operator rolled"
    assert "GPU Operator ready: all 5 checks hold" in up
    assert timeline.most_cordoned == 0, "a chart bump with the same driver cordons no node"
    return {pod for pod, _, _ in timeline.gone}


def a_pin_bump_rolls_kai_and_the_node_agents(a100: Workspace, names: list[str], key: str, commit: str) -> set[str]:
    """One fork's pin bumped: both forks' images carry one tag, so KAI's Deployments and mpsd roll."""
    config = json.loads(a100.pulumi("config", "get", "forks", stack="a100").stdout)
    kai, fractioning = (config[fork]["commit"][:7] for fork in ("kaiScheduler", "gpuFractioning"))
    was = f"smshare-{kai}-{fractioning}"
    tag = f"smshare-{commit[:7]}-{fractioning}" if "kai" in key else f"smshare-{kai}-{commit[:7]}"
    agents, fractional = pod_images("gpu-fractioning", "app.kubernetes.io/component=mpsd"), running_fractional_pods()
    with watched() as timeline:
        plan, up = bump(a100, key, commit)
    assert f"rollout plan: KAI-Scheduler images {was} -> {tag}: control-plane roll" in plan, plan
    agents_plan = f"gpu-fractioning images {was} -> {tag}: node-agent roll, mpsd and fractiond restart on each of 4"
    assert f"rollout plan: {agents_plan} GPU nodes under {fractional} running fractional pods" in plan, plan
    tags = deployment_tags("kai-scheduler")
    assert tag in tags and was not in tags, f"KAI's Deployments rolled to {tag}: {tags}"
    restarted = pod_images("gpu-fractioning", "app.kubernetes.io/component=mpsd")
    assert sorted(restarted) == sorted(names) and all(
        restarted[n][0] != agents[n][0] and restarted[n][1].endswith(f":{tag}") for n in names
    ), f"mpsd restarted on every node on the new tag: {restarted}"
    for gate in ("KAI-Scheduler ready: all", "gpu-fractioning node agents ready: all 6"):
        assert gate in up, f"{gate} checks hold again after {key}"
    assert "driver rollout: " not in up
    assert timeline.most_cordoned == 0, "a pin bump cordons no node"
    return {pod for pod, _, _ in timeline.gone}


def test_a_chart_bump_and_each_fork_pin_bump_do_what_their_preview_planned(a100: Workspace) -> None:
    """Four GPU nodes serving fractional pods. A GPU Operator chart bump with the same driver rolls the
    operator and restarts the operands on every node, and reinstalls no driver; a KAI pin bump and a
    gpu-fractioning pin bump (one image tag names both forks) roll KAI's control plane and restart mpsd
    under the running fractional pods. None cordons a node or drains a fractional pod, and each reruns
    the gates after the step it changed, as its preview said."""
    names = [NODE, "gpu-node-1", "gpu-node-2", "gpu-node-3"]
    installed = kubectl_json("get", "clusterpolicy", "cluster-policy")["spec"]["driver"]["version"]
    ours = {f"{TEAM}/job-{n}" for n in names} | {f"kai-resource-reservation/gpu-reservation-{n}" for n in names}
    try:
        with stand_in_operators(mpsd_stop=1), more_gpu_nodes(names[1:]):
            wait_until(lambda: all(node_state(n)[0] == installed and mpsd_on(n) for n in names), 180, "4 GPU nodes")
            kubectl("create", "namespace", TEAM)
            try:
                pods = [fractional_pod(f"job-{n}", n) for n in names] + [reservation_pod(n) for n in names]
                kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(pods))
                gone = a_chart_bump_restarts_the_operands_and_reinstalls_no_driver(a100, names)
                assert not ours & gone, f"a chart bump drained {sorted(ours & gone)}"
                for key, commit in PIN_BUMPS:
                    gone = a_pin_bump_rolls_kai_and_the_node_agents(a100, names, key, commit)
                    assert not ours & gone, f"{key} drained {sorted(ours & gone)}"
            finally:
                kubectl("delete", "namespace", TEAM, "--wait=true", "--ignore-not-found")
        wait_until(lambda: mpsd_nodes() == [NODE], 120, "mpsd gone with the removed nodes")
    finally:
        # mpsd restarted under the bumps: forget those stops for destroy's check, whatever happened.
        kubectl("-n", "kube-system", "delete", "configmap", RECORD, "--ignore-not-found")


def test_the_stack_passes_the_policy_pack(a100: Workspace) -> None:
    result = a100.pulumi("preview", "--policy-pack", str(REPO / "policy"), stack="a100")
    assert "kai-gpu-fractions" in result.output, "the pack must have run"
    assert "mandatory" not in result.output, f"this project's stack must pass every policy:\n{result.output}"


def inline_kubeconfig() -> dict[str, str]:
    """The control plane's kubeconfig by its contents, set with `pulumi config set --secret --path`."""
    return {"cluster.kubeconfig": Path(os.environ["KUBECONFIG"]).read_text()}


def client_key() -> str:
    """The part of the kubeconfig that must never be stored in plaintext."""
    return str(yaml.safe_load(inline_kubeconfig()["cluster.kubeconfig"])["users"][0]["user"]["client-key-data"])


def test_the_registry_password_and_kubeconfig_are_never_in_plaintext_in_state_or_outputs(a100: Workspace) -> None:
    exported = a100.pulumi("stack", "export", stack="a100").stdout
    assert "pulumi:providers:kubernetes" in exported, "the stack is deployed, its provider's inputs are in the state"
    key = client_key()
    for state_file in a100.state_files():
        assert key not in state_file.read_text(errors="replace"), f"plaintext kubeconfig credentials in {state_file}"
    assert key not in exported
    for state_file in a100.state_files():
        assert PASSWORD not in state_file.read_text(errors="replace"), f"plaintext password in {state_file}"
    assert PASSWORD not in exported
    assert PASSWORD not in a100.pulumi("stack", "output", "--json", stack="a100").stdout


def test_destroy_leaves_nothing_behind_and_no_stuck_finalizer(a100: Workspace) -> None:
    assert kubectl(
        "-n", "gpu-fractioning", "get", "pods", "-l", "app.kubernetes.io/component=mpsd", "-o", "name"
    ).stdout
    a100.pulumi("destroy", "--yes", "--skip-preview", stack="a100", timeout=900)
    # Read at once, not polled: an install right after destroy must not meet a terminating namespace.
    namespaces = {n["metadata"]["name"] for n in kubectl_json("get", "namespaces")["items"]}
    stack_namespaces = {"gpu-operator", "kai-scheduler", "kai-resource-reservation", "gpu-fractioning"}
    assert not namespaces & stack_namespaces, "destroy returns only once its namespaces are gone"
    # The operator clears its finalizer only while it runs: a config deleted too late stays stuck.
    assert mpsd_stops() == ["operator-running"], "the chart goes only after the mpsd pods are gone"
    condition = [c["type"] for c in kubectl_json("get", "node", NODE)["status"]["conditions"]]
    assert "gpu-fractioning.nvidia.com/Ready" not in condition, "the operator cleared its node condition"
    assert leftovers() == {}, "destroy must remove every object the stack created or adopted"
