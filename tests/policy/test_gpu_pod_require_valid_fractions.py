"""gpu-pod-require-valid-fractions: well-formed fraction requests that reach KAI with a queue."""

from __future__ import annotations

import pytest
from gpu_policies.gpu_pod_require_valid_fractions import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource


def with_annotation(key: str, value: str) -> golden.Props:
    pod = golden.smoke_pod()
    pod["metadata"]["annotations"] = {key: value}
    return pod


@pytest.mark.parametrize(
    "pod",
    [golden.smoke_pod(), golden.shared_lab_pod(), golden.whole_gpu_pod()],
    ids=["smoke", "shared", "whole"],
)
def test_golden_pods_pass(pod: golden.Props) -> None:
    assert run_resource(policy, golden.POD, pod).violations == [], "the guide's and the lab's pods are valid"


@pytest.mark.parametrize("fraction", ["1", "1.0", "0.25", "0.01"])
def test_fractions_in_the_half_open_unit_interval_pass(fraction: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-fraction", fraction)).violations == [], (
        f"{fraction} is in (0, 1]"
    )


@pytest.mark.parametrize("fraction", ["0", "1.5", "-0.5", "half", "50%", "", "nan", "inf"])
def test_a_fraction_outside_the_half_open_unit_interval_fails(fraction: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-fraction", fraction)).violations == [
        f"Annotation gpu-fraction is {fraction!r}; set it to a number greater than 0 and at most 1, such as '0.5'."
    ], "KAI reads the fraction as a portion of one GPU"


@pytest.mark.parametrize("memory", ["20Gi", "0", "-1", "1.5", "", "20480Mi"])
def test_gpu_memory_that_is_not_a_positive_whole_number_of_mib_fails(memory: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-memory", memory)).violations == [
        f"Annotation gpu-memory is {memory!r}; set it to a positive whole number of MiB without a unit, "
        "such as '20480'."
    ], "KAI reads gpu-memory as MiB with no suffix"


def test_a_fraction_combined_with_a_whole_gpu_resource_fails() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    assert run_resource(policy, golden.POD, pod).violations == [
        "The pod asks for a GPU fraction and for nvidia.com/gpu in container(s) 'main'; remove one of the "
        "two, because KAI rejects the combination."
    ], "admission rejects a fraction plus a whole-GPU resource"


@pytest.mark.parametrize(
    ("scheduler", "found"), [(None, "is not set"), ("default-scheduler", "is 'default-scheduler'")]
)
def test_a_fractional_pod_not_scheduled_by_kai_fails(scheduler: str | None, found: str) -> None:
    pod = golden.smoke_pod()
    del pod["spec"]["schedulerName"]
    if scheduler is not None:
        pod["spec"]["schedulerName"] = scheduler
    assert run_resource(policy, golden.POD, pod).violations == [
        f"spec.schedulerName {found} on a pod that asks for a GPU fraction; set it to 'kai-scheduler', "
        "the only scheduler that honours fractions."
    ], "the default scheduler ignores fraction annotations"


def test_a_fractional_pod_without_a_queue_label_fails() -> None:
    pod = golden.smoke_pod()
    del pod["metadata"]["labels"]["kai.scheduler/queue"]
    assert run_resource(policy, golden.POD, pod).violations == [
        "The pod that asks for a GPU fraction has no 'kai.scheduler/queue' label; add it to metadata.labels, "
        "naming a KAI queue such as 'default-queue'."
    ], "KAI schedules only pods that name a queue"


def test_a_queue_label_on_the_workload_itself_is_enough() -> None:
    pod = golden.smoke_pod()
    del pod["metadata"]["labels"]["kai.scheduler/queue"]
    props = golden.in_workload(golden.CRON_JOB, pod)
    assert len(run_resource(policy, golden.CRON_JOB, props).violations) == 1, "no label anywhere fails"
    props["metadata"]["labels"] = {"kai.scheduler/queue": "default-queue"}
    assert run_resource(policy, golden.CRON_JOB, props).violations == [], "KAI reads the top owner's label first"


def test_a_workload_template_is_checked_with_its_path() -> None:
    props = golden.in_workload(golden.DEPLOYMENT, golden.smoke_pod())
    golden.template_of(golden.DEPLOYMENT, props)["spec"]["schedulerName"] = "default-scheduler"
    assert run_resource(policy, golden.DEPLOYMENT, props).violations == [
        "spec.template.spec.schedulerName is 'default-scheduler' on a pod that asks for a GPU fraction; "
        "set it to 'kai-scheduler', the only scheduler that honours fractions."
    ], "messages name the template's field"


def test_scheduler_name_and_queue_label_are_configurable() -> None:
    pod = golden.smoke_pod()
    pod["spec"]["schedulerName"] = "kai-scheduler-b"
    pod["metadata"]["labels"] = {"runai/queue": "team-a"}
    config = {"schedulerName": "kai-scheduler-b", "queueLabel": "runai/queue"}
    assert run_resource(policy, golden.POD, pod, config).violations == [], (
        "a second KAI instance with its own label key"
    )


def test_a_fraction_unknown_during_preview_is_not_applicable() -> None:
    outcome = run_resource(policy, golden.POD, with_annotation("gpu-fraction", UNKNOWN_STRING_VALUE))
    assert outcome.violations == [] and outcome.not_applicable, "unknown means not applicable, not a crash"
