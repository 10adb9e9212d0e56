"""GPU fraction requests are written as KAI parses them and reach KAI-Scheduler with a queue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from .facts import (
    DEFAULT_QUEUE_LABEL,
    DEFAULT_SCHEDULER_NAME,
    FRACTION_ANNOTATION,
    FRACTION_PATTERN,
    GPU_RESOURCE,
    MEMORY_ANNOTATION,
    NUM_DEVICES_ANNOTATION,
    POSITIVE_WHOLE_NUMBER_PATTERN,
)
from .kube import PodView
from .pods import Findings, PodSweep
from .props import Knob, Unknown, config_schema, described, quoted

SCHEDULER_NAME: Knob[str] = Knob(
    key="schedulerName",
    default=DEFAULT_SCHEDULER_NAME,
    description="The scheduler that honours GPU fractions.",
    schema={"type": "string", "minLength": 1},
)
QUEUE_LABEL: Knob[str] = Knob(
    key="queueLabel",
    default=DEFAULT_QUEUE_LABEL,
    description="The label naming the KAI queue (the KAI chart's podgrouper.queueLabelKey).",
    schema={"type": "string", "minLength": 1},
)


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    return value if isinstance(value, str) else str(value)


def is_fraction(value: Any) -> bool:
    """What Go's strconv.ParseFloat reads from the plain decimal forms, strictly between 0 and 1."""
    text = _text(value)
    return text is not None and FRACTION_PATTERN.fullmatch(text) is not None and 0 < float(text) < 1


def is_positive_whole_number(value: Any) -> bool:
    """What strconv.ParseUint(v, 10, 64) reads, without 0."""
    text = _text(value)
    return text is not None and POSITIVE_WHOLE_NUMBER_PATTERN.fullmatch(text) is not None


def _value_violations(pod: PodView, markers: frozenset[str], found: Findings) -> None:
    checks = (
        (
            FRACTION_ANNOTATION,
            is_fraction,
            "a decimal strictly between 0 and 1, such as '0.5', written as KAI "
            "parses it: digits with one point and an optional exponent, and no spaces, underscores, hexadecimal or NaN",
        ),
        (
            MEMORY_ANNOTATION,
            is_positive_whole_number,
            "a positive whole number of MiB with no unit, sign or spaces, such as '20480'",
        ),
        (NUM_DEVICES_ANNOTATION, is_positive_whole_number, "a positive whole number of GPUs, such as '2'"),
    )
    for key, valid, form in checks:
        if key not in markers:
            continue
        value = pod.annotation(key)
        if found.known(value, f"annotation {key}") and not valid(value):
            found.fail(f"Annotation {key} is {value!r}; set it to {form}.")
    if NUM_DEVICES_ANNOTATION in markers and not {FRACTION_ANNOTATION, MEMORY_ANNOTATION} & markers:
        found.fail(
            f"Annotation {NUM_DEVICES_ANNOTATION} is set without {FRACTION_ANNOTATION} or {MEMORY_ANNOTATION}; "
            f"KAI reads the device count only with a fraction: add one of them, or remove {NUM_DEVICES_ANNOTATION}."
        )
    if {FRACTION_ANNOTATION, MEMORY_ANNOTATION} <= markers:
        found.fail(
            f"Annotations {FRACTION_ANNOTATION} and {MEMORY_ANNOTATION} are both set and KAI refuses the pair; "
            "keep one of them."
        )


def _whole_gpu_violations(pod: PodView, found: Findings) -> None:
    if isinstance(pod.containers, Unknown):
        found.cannot_check("the containers' resources")
        return
    with_gpu = []
    for container in pod.containers:
        if isinstance(container.resource_names, Unknown):
            found.cannot_check(f"the resources of container {container.name!r}")
        elif GPU_RESOURCE in container.resource_names:
            with_gpu.append(container.name)
    if with_gpu:
        found.fail(
            f"The pod asks for a GPU fraction and for {GPU_RESOURCE} in container(s) {quoted(with_gpu)}; remove "
            "one of the two, because KAI rejects the combination."
        )


def _scheduling_violations(pod: PodView, config: Mapping[str, Any], found: Findings) -> None:
    scheduler, queue_label = SCHEDULER_NAME.read(config), QUEUE_LABEL.read(config)
    actual = pod.value("schedulerName")
    if found.known(actual, pod.field("schedulerName")) and actual != scheduler and not (actual is None and pod.partial):
        found.fail(
            f"{pod.field('schedulerName')} {described(actual)} on a pod that asks for a GPU fraction; "
            f"set it to {scheduler!r}, the only scheduler that honours fractions."
        )
    if queue_label not in pod.label_keys and not pod.partial:
        found.fail(
            f"The pod that asks for a GPU fraction has no {queue_label!r} label; add it to "
            f"{pod.metadata_field('labels')}, naming a KAI queue such as 'default-queue'."
        )


def check_valid_fractions(pod: PodView, config: Mapping[str, Any], found: Findings) -> None:
    markers = pod.fraction_markers
    if isinstance(markers, Unknown):
        return
    _value_violations(pod, markers, found)
    _whole_gpu_violations(pod, found)
    _scheduling_violations(pod, config, found)


policy = StackValidationPolicy(
    name="gpu-pod-require-valid-fractions",
    description=(
        "Pods that ask for a GPU fraction write gpu-fraction, gpu-memory and gpu-fraction-num-devices as KAI "
        "parses them, one fraction at a time without nvidia.com/gpu, and reach KAI-Scheduler through its "
        "scheduler name and a queue label."
    ),
    validate=PodSweep(check_valid_fractions).validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    config_schema=config_schema(SCHEDULER_NAME, QUEUE_LABEL),
    remediation_steps=(
        "Write gpu-fraction as a plain decimal strictly between 0 and 1 such as '0.5', or gpu-memory as whole "
        "MiB such as '20480' (not both), and gpu-fraction-num-devices as a positive whole number only beside "
        "one of them; drop the nvidia.com/gpu resource from fractional pods; set spec.schedulerName: "
        "kai-scheduler and a kai.scheduler/queue label (on the pod template or the workload) naming the queue."
    ),
)
