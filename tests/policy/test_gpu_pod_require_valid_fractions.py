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


FRACTION_FORM = (
    "set it to a decimal strictly between 0 and 1, such as '0.5', written as KAI parses it: digits with one point "
    "and an optional exponent, and no spaces, underscores, hexadecimal or NaN."
)
MEMORY_FORM = "set it to a positive whole number of MiB with no unit, sign or spaces, such as '20480'."


@pytest.mark.parametrize("fraction", ["0.25", "0.01", ".5", "5e-1", "+0.5", "0.999"])
def test_fractions_strictly_between_zero_and_one_pass(fraction: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-fraction", fraction)).violations == [], (
        f"{fraction} is in (0, 1) as Go's strconv.ParseFloat reads it"
    )


@pytest.mark.parametrize(
    "fraction",
    [
        "1",
        "1.0",
        "1e0",
        "0",
        "1.5",
        "-0.5",
        "half",
        "50%",
        "",
        "nan",
        "NaN",
        "inf",
        "0.5 ",
        " 0.5",
        "0.2_5",
        "0x1p-1",
        "0,5",
        "５e-1",
    ],
)
def test_a_fraction_kai_refuses_fails(fraction: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-fraction", fraction)).violations == [
        f"Annotation gpu-fraction is {fraction!r}; {FRACTION_FORM}"
    ], "KAI reads the fraction as a portion of one GPU, strictly below a whole one"


@pytest.mark.parametrize("memory", ["20480", "020480", "1"])
def test_gpu_memory_as_whole_mib_passes(memory: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-memory", memory)).violations == [], (
        "strconv.ParseUint reads leading zeros"
    )


@pytest.mark.parametrize("memory", ["20Gi", "0", "-1", "+5", "1.5", "", "20480Mi", "20480 ", "2_048"])
def test_gpu_memory_that_is_not_a_positive_whole_number_of_mib_fails(memory: str) -> None:
    assert run_resource(policy, golden.POD, with_annotation("gpu-memory", memory)).violations == [
        f"Annotation gpu-memory is {memory!r}; {MEMORY_FORM}"
    ], "KAI reads gpu-memory as MiB with no suffix"


def test_a_device_count_needs_a_fraction_and_a_positive_count() -> None:
    pod = with_annotation("gpu-fraction-num-devices", "2")
    assert run_resource(policy, golden.POD, pod).violations == [
        "Annotation gpu-fraction-num-devices is set without gpu-fraction or gpu-memory; KAI reads the device "
        "count only with a fraction: add one of them, or remove gpu-fraction-num-devices."
    ], "the count multiplies a fraction"
    pod["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    assert run_resource(policy, golden.POD, pod).violations == [], "two halves of two GPUs"
    pod["metadata"]["annotations"]["gpu-fraction-num-devices"] = "0"
    assert run_resource(policy, golden.POD, pod).violations == [
        "Annotation gpu-fraction-num-devices is '0'; set it to a positive whole number of GPUs, such as '2'."
    ], "zero devices is no request"


def test_a_fraction_and_a_memory_request_together_fail() -> None:
    pod = with_annotation("gpu-fraction", "0.5")
    pod["metadata"]["annotations"]["gpu-memory"] = "20480"
    assert run_resource(policy, golden.POD, pod).violations == [
        "Annotations gpu-fraction and gpu-memory are both set and KAI refuses the pair; keep one of them."
    ], "KAI takes one or the other"


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
