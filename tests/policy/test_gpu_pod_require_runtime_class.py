"""gpu-pod-require-runtime-class: GPU pods, pod templates and KAI's reservation pods use the NVIDIA class."""

from __future__ import annotations

import pytest
from gpu_policies.facts import KAI_CONFIG, SYSTEM_NAMESPACE_LABEL
from gpu_policies.gpu_pod_require_runtime_class import policy
from gpu_policies.kube import NAMESPACE
from gpu_policies.releases import CRD
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.golden import Resource
from tests.policy.harness import run_resource, run_stack

TEMPLATE_PREFIXES = {
    golden.DEPLOYMENT: "spec.template.",
    golden.STATEFUL_SET: "spec.template.",
    golden.DAEMON_SET: "spec.template.",
    golden.REPLICA_SET: "spec.template.",
    golden.JOB: "spec.template.",
    golden.CRON_JOB: "spec.jobTemplate.spec.template.",
}


def pod_missing(field: str, request: str) -> str:
    return (
        f"{field} is not set on a pod that asks for {request}; set it to 'nvidia' so its containers get the "
        "NVIDIA driver libraries."
    )


def without_runtime_class(pod: golden.Props) -> golden.Props:
    del pod["spec"]["runtimeClassName"]
    return pod


@pytest.mark.parametrize(
    "pod",
    [golden.smoke_pod(), golden.whole_gpu_pod(), golden.shared_lab_pod()],
    ids=["smoke", "whole", "shared"],
)
def test_golden_gpu_pods_pass(pod: golden.Props) -> None:
    assert run_resource(policy, golden.POD, pod).violations == [], "every golden GPU pod sets nvidia"


def test_a_fractional_pod_without_a_runtime_class_fails() -> None:
    assert run_resource(policy, golden.POD, without_runtime_class(golden.smoke_pod())).violations == [
        pod_missing("spec.runtimeClassName", "a GPU fraction")
    ], "without the class the container has no driver libraries"


def test_a_whole_gpu_pod_without_a_runtime_class_fails() -> None:
    assert run_resource(policy, golden.POD, without_runtime_class(golden.whole_gpu_pod())).violations == [
        pod_missing("spec.runtimeClassName", "nvidia.com/gpu")
    ], "nvidia.com/gpu pods need the class too"


def test_a_gpu_request_in_an_init_container_counts() -> None:
    pod = without_runtime_class(golden.whole_gpu_pod())
    pod["spec"]["initContainers"] = pod["spec"].pop("containers")
    pod["spec"]["containers"] = [{"name": "app", "image": "busybox"}]
    assert run_resource(policy, golden.POD, pod).violations == [
        pod_missing("spec.runtimeClassName", "nvidia.com/gpu")
    ], "an init container that uses the GPU needs the driver libraries as well"


def test_another_runtime_class_fails() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["runtimeClassName"] = "runc"
    assert run_resource(policy, golden.POD, pod).violations == [
        "spec.runtimeClassName is 'runc' on a pod that asks for a GPU fraction; set it to 'nvidia' so its "
        "containers get the NVIDIA driver libraries."
    ], "only the configured class carries the driver"


@pytest.mark.parametrize("workload", golden.WORKLOADS)
def test_a_workload_template_without_a_runtime_class_fails(workload: str) -> None:
    props = golden.in_workload(workload, without_runtime_class(golden.smoke_pod()))
    assert run_resource(policy, workload, props).violations == [
        pod_missing(f"{TEMPLATE_PREFIXES[workload]}spec.runtimeClassName", "a GPU fraction")
    ], f"the pods a {workload} creates are GPU pods"


def test_a_pod_without_a_gpu_request_is_ignored() -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    assert run_resource(policy, golden.POD, pod).violations == [], "CPU pods keep the default runtime"


def labelled(name: str, value: str = "true") -> Resource:
    return Resource(NAMESPACE, name, {"metadata": {"name": name, "labels": {SYSTEM_NAMESPACE_LABEL: value}}})


def test_gpu_daemons_in_a_system_namespace_of_this_stack_are_exempt_and_a_name_is_not_enough() -> None:
    pod = without_runtime_class(golden.whole_gpu_pod())
    pod["metadata"]["namespace"] = "gpu-operator"
    assert len(run_resource(policy, golden.POD, pod).violations) == 1, "a namespace name exempts nothing"
    stack = [labelled("gpu-operator"), Resource(golden.POD, "daemon", pod)]
    assert run_stack(policy, stack).violations == [], "GPU Operator validators live in the stack's system namespace"


def test_a_fractional_pod_is_never_exempt_from_the_runtime_class() -> None:
    pod = without_runtime_class(golden.smoke_pod())
    pod["metadata"]["namespace"] = "kai-resource-reservation"
    stack = [labelled("kai-resource-reservation"), Resource(golden.POD, "fraction", pod)]
    assert run_stack(policy, stack).violations == [pod_missing("spec.runtimeClassName", "a GPU fraction")], (
        "the system namespace's label exempts daemons that ask for no fraction, and nothing else"
    )


def test_a_label_unknown_during_preview_is_not_applicable_for_a_gpu_daemon_and_a_known_one_decides() -> None:
    pod = without_runtime_class(golden.whole_gpu_pod())
    pod["metadata"]["namespace"] = "team-a"
    outcome = run_stack(policy, [labelled("team-a", UNKNOWN_STRING_VALUE), Resource(golden.POD, "gpu", pod)])
    assert outcome.violations == [] and outcome.not_applicable, "the pod may be in a system namespace"
    outcome = run_stack(policy, [labelled("team-b"), Resource(golden.POD, "gpu", pod)])
    assert len(outcome.violations) == 1, "another namespace's label exempts nothing"
    outcome = run_stack(policy, [labelled("team-a", "false"), Resource(golden.POD, "gpu", pod)])
    assert len(outcome.violations) == 1, 'only "true" exempts'


def test_a_namespace_unknown_during_preview_is_refused_when_no_namespace_of_the_stack_is_exempt() -> None:
    pod = without_runtime_class(golden.whole_gpu_pod())
    pod["metadata"]["namespace"] = UNKNOWN_STRING_VALUE
    assert len(run_resource(policy, golden.POD, pod).violations) == 1, "the stack exempts no namespace"
    outcome = run_stack(policy, [labelled("gpu-operator"), Resource(golden.POD, "gpu", pod)])
    assert outcome.violations == [] and outcome.not_applicable, "the pod may land in the system namespace"


@pytest.mark.parametrize("resource", ["nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "nvidia.com/gpumem"])
def test_every_nvidia_gpu_resource_needs_the_runtime_class(resource: str) -> None:
    pod = without_runtime_class(golden.whole_gpu_pod())
    pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "1"}}
    assert run_resource(policy, golden.POD, pod).violations == [pod_missing("spec.runtimeClassName", resource)], (
        f"{resource} is a GPU too"
    )


def test_the_runtime_class_name_is_configurable() -> None:
    config = {"runtimeClassName": "nvidia-cdi"}
    assert run_resource(policy, golden.POD, golden.smoke_pod(), config).violations == [
        "spec.runtimeClassName is 'nvidia' on a pod that asks for a GPU fraction; set it to 'nvidia-cdi' so "
        "its containers get the NVIDIA driver libraries."
    ], "the configured class is the one required"


@pytest.mark.parametrize("kai", [golden.kai_release(), golden.lab_kai_release()], ids=["fork", "lab"])
def test_kai_releases_with_a_binder_runtime_class_pass(kai: golden.Props) -> None:
    assert run_resource(policy, golden.RELEASE, kai).violations == [], "both KAI installs set the binder class"


def test_a_kai_release_without_a_binder_runtime_class_fails() -> None:
    kai = golden.kai_release()
    del kai["values"]["binder"]
    assert run_resource(policy, golden.RELEASE, kai).violations == [
        "binder.runtimeClassName is not set, so KAI's GPU reservation pods cannot load NVML and fractional "
        "pods stay Pending; set it to 'nvidia'."
    ], "reservation pods call NVML"


def test_the_reservation_key_the_chart_ignores_gets_a_hint() -> None:
    kai = golden.kai_release()
    kai["values"]["binder"] = {"resourceReservation": {"runtimeClassName": "nvidia"}}
    assert run_resource(policy, golden.RELEASE, kai).violations == [
        "binder.runtimeClassName is not set, so KAI's GPU reservation pods cannot load NVML and fractional "
        "pods stay Pending; set it to 'nvidia'. The chart does not read "
        "binder.resourceReservation.runtimeClassName."
    ], "KAI's HAMi README uses a key the chart never reads"


def test_a_runtime_class_unknown_during_preview_is_not_applicable() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["runtimeClassName"] = UNKNOWN_STRING_VALUE
    outcome = run_resource(policy, golden.POD, pod)
    assert outcome.violations == [] and outcome.not_applicable, "no verdict on a value not known yet"


def test_a_rendered_kai_config_carries_the_reservation_runtime_class() -> None:
    config = {"metadata": {"name": "kai-config"}, "spec": {"binder": {"resourceReservation": {"runtimeClassName": ""}}}}
    assert run_resource(policy, KAI_CONFIG, config).violations == [
        "spec.binder.resourceReservation.runtimeClassName of Config 'under-test' is not set, so KAI's GPU reservation "
        "pods cannot load NVML and fractional pods stay Pending; set it to 'nvidia'."
    ], "a Chart resource hands the pack the Config it renders from binder.runtimeClassName"


def test_a_kai_chart_that_renders_no_kai_config_fails() -> None:
    stack = [
        Resource(golden.CHART_V4, "kai", {}),
        Resource(CRD, "kai:configs.kai.scheduler", {"metadata": {"name": "configs.kai.scheduler"}}),
    ]
    outcome = run_stack(policy, stack, parents={"kai:configs.kai.scheduler": "kai"})
    assert outcome.violations == [
        "Chart 'kai' installs KAI but renders no kai-config Config: a Chart resource runs no Helm hooks, so KAI's "
        "kai-config-deployer hook never creates it, KAI never starts, and binder.runtimeClassName cannot be "
        "checked; set kaiConfig.render: true and kaiConfigDeployer.enabled: false."
    ], "without hooks the Config only exists when the chart renders it inline"


def test_an_image_unknown_during_preview_does_not_stop_the_check() -> None:
    pod = without_runtime_class(golden.smoke_pod())
    pod["spec"]["containers"][0]["image"] = UNKNOWN_STRING_VALUE
    assert len(run_resource(policy, golden.POD, pod).violations) == 1, "the policy never reads the image"
