"""The gates between the guide's steps: what each verification decides, and how the wait reports."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

import pytest
import yaml

from components.check_specs import gate_spec
from components.cluster.waiting import Clock, poll_delays
from components.config.load import parse_config
from components.gates import fractioning as decide
from components.gates.gpu_operator import decide_driver_upgrade
from components.gates.spec import GateSpec, Step
from components.gates.steps import STEPS, GateTimedOut, wait_for_gate
from components.vocabulary import fractioning, kai
from components.vocabulary.nvidia import CLUSTER_POLICY_GROUP, CLUSTER_POLICY_PLURAL
from standins.operators.cluster import Cluster, name_of
from standins.operators.gpu_fractioning import driver_upgrade, mpsd_log
from standins.operators.gpu_fractioning import readiness as standin_readiness
from standins.operators.kai_webhooks import recorded_configurations
from tests.unit.fake_cluster import FakeCluster, labels_of, resource
from tests.unit.test_preflight import fixture_node

RECORDED_CONFIG_CONDITIONS: dict[str, str] = yaml.safe_load(
    (Path(__file__).parents[2] / "standins/upstream/gpu-fractioning/config-conditions.yaml").read_text()
)["healthy"]

Json = dict[str, Any]

OPERATOR_GATE = GateSpec("gpu-operator", "gpu-operator", 1800)
KAI_GATE = GateSpec("kai-scheduler", "kai-scheduler", 600, sharing_mode="NvFractions")
AGENTS_GATE = GateSpec("gpu-fractioning", "gpu-fractioning", 900)
MPSD_LOG = (
    "Adding server 'shared' [multiuser enabled]\n"
    'time=2026-11-30T00:00:01Z level=INFO msg="capped the default MPS namespace as defence in depth" '
    "server=shared namespace=default activeThreadPercent=10\n"
)


def condition(kind: str, status: str = "True", message: str = "") -> Json:
    return {"type": kind, "status": status, "reason": "r", "message": message}


def named(name: str, **fields: Any) -> Json:
    return {"metadata": {"name": name}, **fields}


def deployment(name: str, available: bool = True) -> Json:
    status = {"updatedReplicas": 1, "conditions": [condition("Available", "True" if available else "False")]}
    return named(name, spec={"replicas": 1}, status=status)


def daemonset(name: str, desired: int = 1, ready: int = 1, generation: int = 1, updated: int | None = None) -> Json:
    status = {
        "observedGeneration": 1,
        "desiredNumberScheduled": desired,
        "numberReady": ready,
        "updatedNumberScheduled": desired if updated is None else updated,
        "numberAvailable": ready,
    }
    metadata = {"name": name, "labels": labels_of(fractioning.DAEMONSET_SELECTOR), "generation": generation}
    return {"metadata": metadata, "status": status}


def operand(name: str, generation: int = 2, seen: int = 2, updated: int = 4, available: int = 4) -> Json:
    """A GPU Operator operand DaemonSet on four GPU nodes: the latest template `generation`, the one its
    controller has `seen`, and how many of its pods run that template and are available."""
    status = {
        "observedGeneration": seen,
        "desiredNumberScheduled": 4,
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
    }
    return {"metadata": {"name": name, "generation": generation}, "spec": {}, "status": status}


MPSD_POD = ("gpu-fractioning", "gpu-fractioning-mpsd-x1")
CLUSTER_POLICIES = resource(CLUSTER_POLICY_GROUP, CLUSTER_POLICY_PLURAL)
KAI_CONFIGS = resource(kai.CONFIG_GROUP, kai.CONFIG_PLURAL)
FRACTIONING_CONFIGS = resource(fractioning.CONFIG_GROUP, fractioning.CONFIG_PLURAL)
DEPLOYMENTS, DAEMONSETS = "deployments.apps", "daemonsets.apps"
ENDPOINT_SLICES = "endpointslices.discovery.k8s.io"
MUTATING_WEBHOOKS = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING_WEBHOOKS = "validatingwebhookconfigurations.admissionregistration.k8s.io"


def endpoint_slice(service: str, address: str = "10.0.0.1", ready: bool = True) -> Json:
    labels = {"kubernetes.io/service-name": service}
    endpoints = [{"addresses": [address], "conditions": {"ready": ready}}]
    return {"metadata": {"name": f"{service}-x1", "labels": labels}, "endpoints": endpoints}


def webhook_resource(configuration: Json) -> str:
    return MUTATING_WEBHOOKS if configuration["kind"] == "MutatingWebhookConfiguration" else VALIDATING_WEBHOOKS


def ready(cluster: FakeCluster | None = None) -> FakeCluster:
    """A cluster as the GPU Operator, KAI and gpu-fractioning leave it when all went well."""
    cluster = cluster if cluster is not None else FakeCluster()
    node = fixture_node()
    node["status"]["conditions"] = [condition("gpu-fractioning.nvidia.com/Ready")]
    cluster.put("nodes", node)
    cluster.put("runtimeclasses.node.k8s.io", named("nvidia", handler="nvidia"))
    cluster.put(CLUSTER_POLICIES, named("cluster-policy", status={"state": "ready"}))
    cluster.put(DAEMONSETS, operand("nvidia-device-plugin-daemonset"), namespace="gpu-operator")
    cluster.put(
        KAI_CONFIGS,
        named(
            "kai-config",
            spec={"global": {"gpuSharingMode": "NvFractions"}},
            status={"conditions": [condition("Available"), condition("DependenciesFulfilled")]},
        ),
    )
    cluster.put(
        FRACTIONING_CONFIGS,
        named("default", status={"conditions": [condition(t, s) for t, s in RECORDED_CONFIG_CONDITIONS.items()]}),
    )
    kai_deployments = (
        "kai-operator",
        "admission",
        "binder",
        "pod-grouper",
        "podgroup-controller",
        "queue-controller",
        "kai-scheduler-default",
    )
    cluster.put(DEPLOYMENTS, *[deployment(n) for n in kai_deployments], namespace="kai-scheduler")
    cluster.put(DEPLOYMENTS, deployment("gpu-fractioning"), namespace="gpu-fractioning")
    cluster.put(
        DAEMONSETS,
        daemonset("gpu-fractioning-mpsd"),
        daemonset("gpu-fractioning-fractiond"),
        namespace="gpu-fractioning",
    )
    namespace, mpsd = MPSD_POD
    cluster.put(
        "pods", {"metadata": {"name": mpsd, "labels": labels_of(fractioning.MPSD_SELECTOR)}}, namespace=namespace
    )
    cluster.logs[MPSD_POD] = MPSD_LOG
    for configuration in recorded_configurations():
        cluster.put(webhook_resource(configuration), configuration)
    for service in ("admission", "queue-controller", "podgroup-controller"):
        cluster.put(ENDPOINT_SLICES, endpoint_slice(service), namespace="kai-scheduler")
    return cluster


def failing(cluster: FakeCluster, spec: GateSpec) -> dict[str, str]:
    return {r.check: r.detail for r in STEPS[spec.step].checks(cluster, spec) if not r.passed}


@pytest.mark.parametrize("spec", [OPERATOR_GATE, KAI_GATE, AGENTS_GATE], ids=lambda s: s.step)
def test_a_cluster_where_the_step_went_well_passes_its_gate(spec: GateSpec) -> None:
    assert failing(ready(), spec) == {}


def test_the_gpu_operator_gate_names_the_missing_runtime_class_and_where_to_look() -> None:
    cluster = ready()
    cluster.remove("runtimeclasses.node.k8s.io", "nvidia")
    detail = failing(cluster, OPERATOR_GATE)["runtime-class"]
    assert "RuntimeClass nvidia not found" in detail
    assert "kubectl -n gpu-operator logs deploy/gpu-operator" in detail


@pytest.mark.parametrize(
    ("rolling", "gap"),
    [
        (operand("nvidia-device-plugin-daemonset", generation=3), "its new template not picked up yet"),
        (operand("nvidia-device-plugin-daemonset", updated=2, available=3), "2 of 4 pods on its new template"),
        (operand("nvidia-device-plugin-daemonset", available=3), "3 of 4 pods available"),
    ],
    ids=["template-not-seen", "half-rolled", "last-pod-starting"],
)
def test_operands_still_rolling_after_a_chart_bump_hold_the_gate_while_the_cluster_policy_reads_ready(
    rolling: Json, gap: str
) -> None:
    """The ClusterPolicy's status has no observedGeneration: after a chart upgrade it can read `ready`
    from before while the operands restart (the a100 chart bump in the integration tier met it with two
    of four nodes' device plugins still on the old chart)."""
    cluster = ready()
    cluster.put(DAEMONSETS, rolling, namespace="gpu-operator")
    detail = failing(cluster, OPERATOR_GATE)
    assert list(detail) == ["operands"], detail
    assert detail["operands"].startswith(f"nvidia-device-plugin-daemonset: {gap} (kubectl -n gpu-operator get")


@pytest.mark.parametrize(
    ("mpsd", "gap"),
    [
        (daemonset("gpu-fractioning-mpsd", 4, 4, generation=2), "its new template not picked up yet"),
        (daemonset("gpu-fractioning-mpsd", 4, 4, updated=3), "3 of 4 pods on its new template"),
    ],
    ids=["template-not-seen", "rolling"],
)
def test_mpsd_still_rolling_after_a_pin_bump_holds_the_gpu_fractioning_gate(mpsd: Json, gap: str) -> None:
    """desired == ready also holds between two nodes of a pin bump's rolling restart."""
    cluster = ready()
    cluster.put(DAEMONSETS, mpsd, namespace="gpu-fractioning")
    detail = failing(cluster, AGENTS_GATE)
    assert list(detail) == ["daemonsets"], detail
    assert detail["daemonsets"].startswith(f"gpu-fractioning-mpsd: {gap} (kubectl -n gpu-fractioning get ds")


def test_the_driver_daemonset_rolls_only_through_the_driver_rollout_and_does_not_hold_the_operands_check() -> None:
    cluster = ready()
    driver = operand("nvidia-driver-daemonset", updated=0)
    driver["spec"] = {"updateStrategy": {"type": "OnDelete"}}
    cluster.put(DAEMONSETS, driver, namespace="gpu-operator")
    assert failing(cluster, OPERATOR_GATE) == {}


def test_a_not_ready_cluster_policy_reports_the_states_the_operator_names() -> None:
    cluster = ready()
    message = "ClusterPolicy is not ready; states not ready: [state-driver]"
    policy = named("cluster-policy", status={"state": "notReady", "conditions": [condition("Error", "True", message)]})
    cluster.put(CLUSTER_POLICIES, policy)
    assert message in failing(cluster, OPERATOR_GATE)["cluster-policy"]


@pytest.mark.parametrize(
    ("label", "value", "named_gap"),
    [
        ("nvidia.com/gpu.present", None, "no nvidia.com/gpu.present=true"),
        ("nvidia.com/gpu.memory", None, "no nvidia.com/gpu.memory"),
        ("nvidia.com/cuda.driver-version.major", "595", "driver 615.71.09 is older than r615"),
    ],
)
def test_every_gpu_node_needs_gfds_labels_and_the_pinned_driver(label: str, value: str | None, named_gap: str) -> None:
    cluster = ready()
    labels = cluster.stored("nodes", "gpu-node-0")["metadata"]["labels"]
    for key in [label, "nvidia.com/cuda.driver.major"] if "driver" in label else [label]:
        labels.pop(key)
        if value is not None:
            labels[key] = value
    detail = failing(cluster, OPERATOR_GATE)["gpu-nodes"]
    assert detail.startswith("gpu-node-0: ") and named_gap in detail


def test_a_gpu_node_that_advertises_no_gpus_holds_the_gate() -> None:
    cluster = ready()
    cluster.stored("nodes", "gpu-node-0")["status"]["allocatable"]["nvidia.com/gpu"] = "0"
    assert "advertises no nvidia.com/gpu" in failing(cluster, OPERATOR_GATE)["gpu-nodes"]


def test_no_gpu_node_at_all_is_reported_as_such() -> None:
    cluster = ready()
    for key in list(cluster.stored("nodes", "gpu-node-0")["metadata"]["labels"]):
        if "nvidia" in key or "pci-10de" in key:
            del cluster.stored("nodes", "gpu-node-0")["metadata"]["labels"][key]
    del cluster.stored("nodes", "gpu-node-0")["status"]["allocatable"]["nvidia.com/gpu"]
    assert failing(cluster, OPERATOR_GATE)["gpu-nodes"].startswith("no node shows an NVIDIA GPU")


def test_kai_waits_for_the_deployments_its_operator_creates_not_just_the_charts() -> None:
    cluster = ready()
    cluster.clear(DEPLOYMENTS, "kai-scheduler")
    cluster.put(
        DEPLOYMENTS, deployment("kai-operator"), deployment("binder", available=False), namespace="kai-scheduler"
    )
    detail = failing(cluster, KAI_GATE)["deployments"]
    assert (
        "not created yet: admission, pod-grouper, podgroup-controller, queue-controller, kai-scheduler-default"
        in detail
    )
    assert "not Available: binder" in detail


def test_a_deployment_whose_new_template_its_controller_has_not_seen_is_not_available_yet() -> None:
    """Right after a pin bump's new image, the status is the old template's: Available, every replica
    counted as updated."""
    cluster = ready()
    binder = deployment("binder")
    binder["metadata"]["generation"], binder["status"]["observedGeneration"] = 3, 2
    cluster.put(DEPLOYMENTS, binder, namespace="kai-scheduler")
    assert "not Available: binder" in failing(cluster, KAI_GATE)["deployments"]
    binder["status"]["observedGeneration"] = 3
    assert failing(cluster, KAI_GATE) == {}


def test_kai_in_the_wrong_sharing_mode_fails_and_missing_fractioning_is_only_reported() -> None:
    cluster = ready()
    config = cluster.stored(KAI_CONFIGS, "kai-config")
    config["spec"]["global"]["gpuSharingMode"] = "NonMemoryEnforced"
    message = "Gpu Fractioning is not ready. GpuFractioningConfig not found"
    config["status"]["conditions"][1] = condition("DependenciesFulfilled", "False", message)
    results = {r.check: r for r in STEPS["kai-scheduler"].checks(cluster, KAI_GATE)}
    assert not results["gpu-sharing-mode"].passed and "NonMemoryEnforced" in results["gpu-sharing-mode"].detail
    assert results["kai-dependencies"].passed, "the guide expects it at this point"
    assert message in results["kai-dependencies"].detail


# The API server's refusal when the queue webhook's Service has no pod behind it (observed with the
# real operator at v0.17.0 and nothing serving: ../shared/reference/upstream-observed.md).
QUEUE_WEBHOOK_DOWN = (
    'Internal error occurred: failed calling webhook "queue-validation.kai.scheduler": failed to call webhook: '
    'Post "https://queue-controller.kai-scheduler.svc:443/validate-scheduling-run-ai-v2-queue?timeout=10s": '
    'no endpoints available for service "queue-controller"'
)


def test_the_recorded_webhook_configurations_are_the_ones_the_gate_expects_and_all_fail_closed() -> None:
    recorded = {(w["kind"], name_of(w)) for w in recorded_configurations()}
    assert recorded == {(w.kind, w.name) for w in kai.webhook_configurations(None)}
    assert {h["failurePolicy"] for w in recorded_configurations() for h in w["webhooks"]} == {"Fail"}


def test_kai_waits_until_its_operator_has_registered_every_webhook() -> None:
    cluster = ready()
    cluster.remove(VALIDATING_WEBHOOKS, "kai-queue-validation-v2")
    cluster.remove(MUTATING_WEBHOOKS, "mutating-kai-admission")
    detail = failing(cluster, KAI_GATE)["webhooks"]
    assert detail.startswith("not registered yet: mutating-kai-admission, kai-queue-validation-v2")
    assert cluster.dry_runs == [], "nothing is sent to webhooks that are not all there"


def test_kai_waits_for_a_ready_endpoint_behind_each_webhooks_service() -> None:
    cluster = ready()
    cluster.put(ENDPOINT_SLICES, endpoint_slice("queue-controller", "10.0.0.2", ready=False), namespace="kai-scheduler")
    detail = failing(cluster, KAI_GATE)["webhooks"]
    assert "kai-queue-validation-v2: Service kai-scheduler/queue-controller has no ready endpoint" in detail
    assert "admission" not in detail.replace("queue-validation", "")


def test_a_webhook_the_api_server_cannot_call_holds_the_gate_naming_it() -> None:
    cluster = ready()
    cluster.refusals["queues"] = QUEUE_WEBHOOK_DOWN
    detail = failing(cluster, KAI_GATE)["webhooks"]
    assert detail.startswith("kai-queue-validation-v2 does not answer: a dry-run create of queues was refused")
    assert 'failed calling webhook "queue-validation.kai.scheduler"' in detail
    assert sorted(plural for _, plural, _, _ in cluster.dry_runs) == ["podgroups", "pods", "queues"]


def test_a_webhook_that_answers_with_a_denial_answers() -> None:
    cluster = ready()
    cluster.refusals["pods"] = 'admission webhook "admission.kai-scheduler.svc" denied the request: no queue'
    assert "webhooks" not in failing(cluster, KAI_GATE)


def test_kai_webhooks_reached_by_url_need_no_service() -> None:
    cluster = ready()
    for configuration in cluster.listed(MUTATING_WEBHOOKS) + cluster.listed(VALIDATING_WEBHOOKS):
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"] = {"url": "https://127.0.0.1:9443/validate"}
    cluster.clear(ENDPOINT_SLICES)
    assert "webhooks" not in failing(cluster, KAI_GATE)


def test_the_gate_expects_the_configurations_kai_config_names_and_skips_disabled_validation() -> None:
    cluster = ready()
    spec = cluster.stored(KAI_CONFIGS, "kai-config")["spec"]
    spec["queueController"] = {"webhooks": {"enableValidation": False}}
    spec["podGroupController"] = {"webhooks": {"webhookConfigurationNamePrefix": "pg-"}}
    cluster.remove(VALIDATING_WEBHOOKS, "kai-queue-validation-v2")
    assert failing(cluster, KAI_GATE)["webhooks"] == (
        "not registered yet: pg-v2alpha2 (kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations)"
    )


RECORDED_KAI_STATUS = yaml.safe_load(
    (Path(__file__).parents[2] / "standins/upstream/kai-scheduler/kai-config-status.yaml").read_text()
)


def test_the_kai_gate_decides_on_kai_configs_status_as_recorded() -> None:
    cluster = ready()
    config = cluster.stored(KAI_CONFIGS, "kai-config")
    config["status"]["conditions"] = RECORDED_KAI_STATUS["ready"]
    assert failing(cluster, KAI_GATE) == {}
    config["status"]["conditions"] = RECORDED_KAI_STATUS["not_available"]
    found = failing(cluster, KAI_GATE)
    assert list(found) == ["kai-config"], "a missing GpuFractioningConfig is expected at this step"
    assert (
        "not Available: PodGrouper: Deployment [pod-grouper] is not available; PodGrouper: not available ("
        in (found["kai-config"])
    ), "one line of progress"
    assert "DependenciesFulfilled=False" in failing(cluster, AGENTS_GATE)["kai-dependencies-fulfilled"]


def test_the_lab_checks_no_sharing_mode() -> None:
    cluster = ready()
    del cluster.stored(KAI_CONFIGS, "kai-config")["spec"]["global"]["gpuSharingMode"]
    assert failing(cluster, GateSpec("kai-scheduler", "kai-scheduler", 600)) == {}


def test_gpu_fractioning_needs_both_daemonsets_with_desired_equal_to_ready() -> None:
    cluster = ready()
    cluster.clear(DAEMONSETS)
    cluster.put(DAEMONSETS, daemonset("gpu-fractioning-mpsd", desired=1, ready=0), namespace="gpu-fractioning")
    detail = failing(cluster, AGENTS_GATE)["daemonsets"]
    assert "gpu-fractioning-mpsd 0 of 1 ready" in detail
    assert "gpu-fractioning-fractiond not created yet" in detail


def test_daemonsets_that_match_no_node_are_not_ready() -> None:
    cluster = ready()
    cluster.put(
        DAEMONSETS,
        daemonset("gpu-fractioning-mpsd", 0, 0),
        daemonset("gpu-fractioning-fractiond", 0, 0),
        namespace="gpu-fractioning",
    )
    assert "matches no node" in failing(cluster, AGENTS_GATE)["daemonsets"]


def set_config_condition(cluster: FakeCluster, kind: str, status: str, message: str = "") -> None:
    found = cluster.stored(FRACTIONING_CONFIGS, "default")["status"]["conditions"]
    found[:] = [c for c in found if c["type"] != kind] + [condition(kind, status, message)]


def test_the_operators_steady_conditions_as_recorded_pass_driver_upgrade_in_progress_false_among_them() -> None:
    assert RECORDED_CONFIG_CONDITIONS["DriverUpgradeInProgress"] == "False", "the fork writes it False when idle"
    assert RECORDED_CONFIG_CONDITIONS == fractioning.CONFIG_CONDITIONS_WHEN_HEALTHY, "one polarity, as recorded"
    config = named("default", status={"conditions": [condition(t, s) for t, s in RECORDED_CONFIG_CONDITIONS.items()]})
    result = decide.decide_fractioning_config(config)
    assert result.passed, result.detail
    assert "DriverUpgradeInProgress=False" in result.detail


class NodesOnly:
    """Just the node list the stand-in's DriverUpgradeInProgress reads."""

    def __init__(self, *node_labels: dict[str, str]) -> None:
        self.nodes = [{"metadata": {"name": f"gpu-node-{i}", "labels": ls}} for i, ls in enumerate(node_labels)]

    def list(self, url: str, selector: str = "") -> list[dict[str, Any]]:
        assert url == "/api/v1/nodes"
        return [n for n in self.nodes if not selector or selector in n["metadata"]["labels"]]


def test_the_stand_in_writes_every_recorded_condition_with_its_steady_status_and_the_gate_passes() -> None:
    ready_ds = {"metadata": {"generation": 1}, "status": {"observedGeneration": 1, "desiredNumberScheduled": 1}}
    ready_ds["status"]["numberReady"] = 1
    written = [
        *standin_readiness({"mpsd": ready_ds, "fractiond": ready_ds}, None),
        driver_upgrade(cast(Cluster, NodesOnly({}))),
    ]
    assert {c.type: c.status for c in written} == RECORDED_CONFIG_CONDITIONS
    config = named("default", status={"conditions": [condition(c.type, c.status, c.message) for c in written]})
    assert decide.decide_fractioning_config(config).passed


@pytest.mark.parametrize(("state", "upgrading"), [("upgrade-required", True), ("upgrade-done", False), ("", False)])
def test_the_stand_in_says_a_driver_upgrade_is_in_progress_while_a_node_is_in_the_state_machine(
    state: str, upgrading: bool
) -> None:
    found = driver_upgrade(cast(Cluster, NodesOnly({"nvidia.com/gpu-driver-upgrade-state": state}, {})))
    assert found.status == ("True" if upgrading else "False")
    assert ("gpu-node-0" in found.message) == upgrading


def test_a_driver_upgrade_in_progress_holds_the_gate_naming_it() -> None:
    cluster = ready()
    set_config_condition(cluster, "DriverUpgradeInProgress", "True", "node gpu-node-0 is upgrading its driver")
    found = failing(cluster, AGENTS_GATE)
    assert "DriverUpgradeInProgress=True" in found["gpu-fractioning-config"]
    assert "gpu-node-0 is upgrading" in found["gpu-fractioning-config"]


@pytest.mark.parametrize("kind", ["MpsdReady", "FractiondReady"])
def test_a_daemon_not_ready_holds_the_gate_even_with_ready_true(kind: str) -> None:
    cluster = ready()
    set_config_condition(cluster, kind, "False", "1 of 2 pods ready")
    assert f"{kind}=False" in failing(cluster, AGENTS_GATE)["gpu-fractioning-config"]


@pytest.mark.parametrize("status", ["False", "True", "Unknown"])
def test_a_condition_type_the_program_does_not_know_is_reported_not_failed_on(status: str) -> None:
    cluster = ready()
    set_config_condition(cluster, "NodeAgentsDegraded", status, "a condition a newer fork may write")
    result = decide.decide_fractioning_config(cluster.stored(FRACTIONING_CONFIGS, "default"))
    assert result.passed, result.detail
    assert f"not read (unknown to this program): NodeAgentsDegraded={status}" in result.detail


def test_gpu_fractioning_reports_the_operators_conditions_and_each_nodes_readiness() -> None:
    cluster = ready()
    set_config_condition(cluster, "Ready", "False", "GPU Operator version v26.7.0 is older than the minimum v26.7.1")
    cluster.stored("nodes", "gpu-node-0")["status"]["conditions"] = [
        condition("gpu-fractioning.nvidia.com/Ready", "False", "mpsd pod is not ready")
    ]
    found = failing(cluster, AGENTS_GATE)
    assert "older than the minimum v26.7.1" in found["gpu-fractioning-config"]
    assert "gpu-node-0: False" in found["node-ready"] and "mpsd pod is not ready" in found["node-ready"]


def test_gpu_fractioning_waits_until_kai_sees_its_config() -> None:
    cluster = ready()
    kai_config = cluster.stored(KAI_CONFIGS, "kai-config")
    kai_config["status"]["conditions"][1] = condition(
        "DependenciesFulfilled", "False", "GpuFractioningConfig not found"
    )
    detail = failing(cluster, AGENTS_GATE)["kai-dependencies-fulfilled"]
    assert "DependenciesFulfilled=False (GpuFractioningConfig not found)" in detail
    assert "kubectl get config.kai.scheduler kai-config" in detail
    kai_config["status"]["conditions"].pop(1)
    assert "kai-dependencies-fulfilled" not in failing(cluster, AGENTS_GATE), "a KAI without the condition passes"


@pytest.mark.parametrize(
    ("log", "gap"),
    [
        ("capped default namespace=default activeThreadPercent=10\n", "no multi-user server"),
        ("Adding server 'shared' [multiuser enabled]\n", "no cap of the default namespace at 10%"),
        ("Adding server 'shared' [multiuser enabled]\nnamespace=default activeThreadPercent=100\n", "at 10%"),
    ],
)
def test_mpsd_must_log_the_multi_user_server_and_the_default_cap(log: str, gap: str) -> None:
    cluster = ready()
    cluster.logs[MPSD_POD] = log
    assert gap in failing(cluster, AGENTS_GATE)["mpsd-log"]


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_mpsd_passes_in_either_slog_format_as_recorded(log_format: str) -> None:
    cluster = ready()
    cluster.logs[MPSD_POD] = mpsd_log(fixture_node(), log_format)
    assert "mpsd-log" not in failing(cluster, AGENTS_GATE)


@pytest.mark.parametrize(
    ("change", "into"),
    [
        ('"activeThreadPercent":10', '"activeThreadPercent":100'),
        ('"namespace":"default"', '"namespace":"team-a"'),
        ("activeThreadPercent=10", "activeThreadPercent=1"),
        ("namespace=default", "namespace=defaults"),
    ],
)
def test_a_recorded_cap_line_of_another_namespace_or_percentage_fails(change: str, into: str) -> None:
    cluster = ready()
    for log_format in ("json", "text"):
        log = mpsd_log(fixture_node(), log_format)
        if change in log:
            cluster.logs[MPSD_POD] = log.replace(change, into)
            assert "no cap of the default namespace at 10%" in failing(cluster, AGENTS_GATE)["mpsd-log"]
            return
    raise AssertionError(f"{change!r} is in neither recorded format")


def test_the_control_daemons_own_wording_of_the_cap_is_accepted() -> None:
    cluster = ready()
    cluster.logs[MPSD_POD] = (
        "Adding server 'shared' [multiuser enabled]\nnamespace default: active thread percentage 10.00\n"
    )
    assert "mpsd-log" not in failing(cluster, AGENTS_GATE)


@dataclass
class FakeClock:
    time: float = 0.0

    def clock(self) -> Clock:
        return Clock(now=lambda: self.time, sleep=self.advance)

    def advance(self, seconds: float) -> None:
        self.time += seconds


@dataclass
class BecomesReady(FakeCluster):
    """No RuntimeClass until `after` seconds have passed on the clock."""

    clock: FakeClock = field(default_factory=FakeClock)
    after: float = 0.0

    def list_runtime_classes(self) -> list[Json]:
        return super().list_runtime_classes() if self.clock.time >= self.after else []


def test_the_wait_returns_once_the_step_holds_and_says_what_it_waited_for() -> None:
    clock, said = FakeClock(), list[str]()
    results = wait_for_gate(ready(BecomesReady(clock=clock, after=100)), OPERATOR_GATE, clock.clock(), said.append)
    assert all(r.passed for r in results)
    assert said[0].startswith("GPU Operator ready: waiting, 0s of 30 min: runtime-class: RuntimeClass nvidia not found")
    assert said[-1].startswith("GPU Operator ready: all 5 checks hold after 1 min 4")
    assert 100 <= clock.time <= 105, "a wait of minutes looks every 5 s"
    assert len(said) == 3, "one line when the wait starts, one a minute while nothing changes, one at the end"


@pytest.mark.parametrize("ready_at", [2.0, 2.6, 9.7])
def test_a_step_ready_within_seconds_is_noticed_within_half_a_second(ready_at: float) -> None:
    clock = FakeClock()
    wait_for_gate(ready(BecomesReady(clock=clock, after=ready_at)), OPERATOR_GATE, clock.clock(), lambda _: None)
    assert ready_at <= clock.time <= ready_at + 0.5, f"ready at {ready_at} s, noticed at {clock.time:.2f} s"


def test_long_waits_back_off_to_a_look_every_5s() -> None:
    delays = list(itertools.islice(poll_delays(), 40))
    assert delays[:20] == [0.5] * 20, "every half second for the first 10 s"
    assert delays[20] > 0.5 and delays[-1] == max(delays) == 5.0, delays
    assert sorted(delays) == delays


def test_a_gate_that_never_holds_fails_naming_what_is_missing_the_key_and_the_wait() -> None:
    clock = FakeClock()
    spec = GateSpec("gpu-operator", "gpu-operator", 120)
    with pytest.raises(GateTimedOut) as failed:
        wait_for_gate(ready(BecomesReady(clock=clock, after=10**6)), spec, clock.clock(), lambda _: None)
    message = str(failed.value)
    assert message.startswith("GPU Operator ready: not after 2 min (gpuOperator.readyTimeoutSeconds is 120)")
    assert "the next step was not started" in message
    assert "runtime-class: RuntimeClass nvidia not found" in message
    assert "GPU Operator ready: 4 of 5 checks passed" in message
    assert "FAIL runtime-class" in message and "PASS cluster-policy" in message


def test_gate_specs_follow_the_config() -> None:
    registry = {"registry": {"server": "registry.example.com/team/kai-fork"}}
    driver_620 = {"gpuOperator": {"driver": {"version": "620.10.01"}, "readyTimeoutSeconds": 2400}}
    operator = gate_spec(parse_config({**registry, **driver_620}), "gpu-operator")
    assert operator.minimum_driver_major == 620, "the operator installs the pinned driver"
    assert operator.timeout_seconds == 2400
    host = {"gpuOperator": {"driver": {"source": "host", "version": "620.10.01"}}}
    assert gate_spec(parse_config({**registry, **host}), "gpu-operator").minimum_driver_major == 615
    moved = parse_config(
        {**registry, "kai": {"namespace": "kai-system"}, "gpuFractioning": {"namespace": "gpu-agents"}}
    )
    agents = gate_spec(moved, "gpu-fractioning")
    assert (agents.namespace, agents.kai_namespace) == ("gpu-agents", "kai-system"), "every namespace it names"
    assert gate_spec(moved, "kai-scheduler").sharing_mode == "NvFractions"
    admission = gate_spec(parse_config({**registry, "admission": {"mode": "warn"}}), "fraction-admission")
    assert (admission.namespace, admission.admission_mode) == ("default", "warn")


def test_every_step_has_one_record_and_a_spec() -> None:
    config = parse_config({"registry": {"server": "registry.example.com/team/kai-fork"}})
    assert list(STEPS) == list(get_args(Step))
    for step, record in STEPS.items():
        assert gate_spec(config, step).step == step
        assert record.timeout_key.endswith(".readyTimeoutSeconds")


def test_the_agents_gate_names_kais_namespace_when_kai_does_not_see_them() -> None:
    config = {
        "apiVersion": "kai.scheduler/v1",
        "status": {
            "conditions": [
                {"type": "DependenciesFulfilled", "status": "False", "message": "GpuFractioningConfig not found"}
            ]
        },
    }
    result = decide.decide_kai_sees_fractioning(config, "kai-system")
    assert not result.passed and "kubectl -n kai-system logs deploy/kai-operator" in result.detail


def upgrade_node(node: str, state: str | None, cordoned: bool = False) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", **({"nvidia.com/gpu-driver-upgrade-state": state} if state else {})}
    return {"metadata": {"name": node, "labels": labels}, "spec": {"unschedulable": True} if cordoned else {}}


def node_pod(
    name: str, namespace: str, *, gpu: bool = False, fraction: bool = False, owned: bool = False
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if fraction:
        metadata["annotations"] = {"gpu-fraction": "0.5"}
    if owned:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "r", "uid": "u", "controller": True}]
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.37"}
    if gpu:
        container["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    return {"metadata": metadata, "spec": {"containers": [container]}, "status": {"phase": "Running"}}


def test_the_gpu_operator_gate_names_the_node_stuck_in_a_driver_upgrade_and_the_pods_that_block_it() -> None:
    """As the real upgrade controller left the a100 cluster: one node upgrade-failed and cordoned because
    KAI's reservation pod has no owner, the others waiting in upgrade-required; the ClusterPolicy may
    already say ready while a node is still cordoned."""
    nodes = [
        upgrade_node("gpu-node-0", "upgrade-failed", cordoned=True),
        upgrade_node("gpu-node-1", "upgrade-required"),
        upgrade_node("gpu-node-2", "upgrade-done"),
        upgrade_node("gpu-node-3", None),
    ]
    pods = {
        "gpu-node-0": [
            node_pod("gpu-reservation-abc", "kai-resource-reservation", gpu=True),
            node_pod("train-0", "team", fraction=True, owned=True),
            node_pod("whole-gpu", "team", gpu=True, owned=True),
        ]
    }
    result = decide_driver_upgrade(nodes, pods, "gpu-operator")
    assert not result.passed
    node_0, node_1 = result.detail.split(" (kubectl")[0].split(" | ")
    assert node_0 == (
        "gpu-node-0: upgrade-failed, cordoned; GPU pods with no owner, which it does not delete: "
        "kai-resource-reservation/gpu-reservation-abc; fractional pods, which it does not drain: team/train-0"
    )
    assert node_1 == "gpu-node-1: upgrade-required"
    assert "kubectl get nodes -L nvidia.com/gpu-driver-upgrade-state" in result.detail


def test_the_gpu_operator_gate_holds_once_every_node_is_done_or_never_upgraded() -> None:
    nodes = [upgrade_node("gpu-node-0", "upgrade-done"), upgrade_node("gpu-node-1", None)]
    assert decide_driver_upgrade(nodes, {}, "gpu-operator").passed
