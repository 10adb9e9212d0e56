"""GPU fraction requests are well formed and reach KAI-Scheduler with a queue."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import FRACTION_ANNOTATION, GPU_RESOURCE, MEMORY_ANNOTATION, PodView, pod_view
from .props import Knob, config_schema, described, dig, quoted, resource_validation

SCHEDULER_NAME: Knob[str] = Knob(
    key="schedulerName",
    default="kai-scheduler",
    description="The scheduler that honours GPU fractions.",
    schema={"type": "string", "minLength": 1},
)
QUEUE_LABEL: Knob[str] = Knob(
    key="queueLabel",
    default="kai.scheduler/queue",
    description="The label naming the KAI queue (the KAI chart's podgrouper.queueLabelKey).",
    schema={"type": "string", "minLength": 1},
)

_MEBIBYTES = re.compile(r"[0-9]+")


def _is_fraction(value: Any) -> bool:
    try:
        fraction = float(value)
    except (TypeError, ValueError):
        return False
    return math.isfinite(fraction) and 0 < fraction <= 1


def _is_mebibytes(value: Any) -> bool:
    text = str(value).strip()
    return _MEBIBYTES.fullmatch(text) is not None and int(text) > 0


def _annotation_violations(pod: PodView) -> list[str]:
    violations = []
    fraction, memory = pod.annotations.get(FRACTION_ANNOTATION), pod.annotations.get(MEMORY_ANNOTATION)
    if FRACTION_ANNOTATION in pod.annotations and not _is_fraction(fraction):
        violations.append(
            f"Annotation {FRACTION_ANNOTATION} is {fraction!r}; set it to a number greater than 0 and at "
            "most 1, such as '0.5'."
        )
    if MEMORY_ANNOTATION in pod.annotations and not _is_mebibytes(memory):
        violations.append(
            f"Annotation {MEMORY_ANNOTATION} is {memory!r}; set it to a positive whole number of MiB without "
            "a unit, such as '20480'."
        )
    if pod.gpu_containers:
        violations.append(
            f"The pod asks for a GPU fraction and for {GPU_RESOURCE} in container(s) "
            f"{quoted(pod.gpu_containers)}; remove one of the two, because KAI rejects the combination."
        )
    return violations


def _scheduling_violations(pod: PodView, config: Mapping[str, Any]) -> list[str]:
    scheduler, queue_label = SCHEDULER_NAME.read(config), QUEUE_LABEL.read(config)
    violations = []
    actual = dig(pod.spec, "schedulerName")
    if actual != scheduler:
        violations.append(
            f"{pod.field('schedulerName')} {described(actual)} on a pod that asks for a GPU fraction; "
            f"set it to {scheduler!r}, the only scheduler that honours fractions."
        )
    if queue_label not in pod.label_keys:
        violations.append(
            f"The pod that asks for a GPU fraction has no {queue_label!r} label; add it to "
            f"{pod.metadata_field('labels')}, naming a KAI queue such as 'default-queue'."
        )
    return violations


def check_valid_fractions(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    pod = pod_view(resource_type, props)
    if pod is None or not pod.asks_for_fraction:
        return []
    return [*_annotation_violations(pod), *_scheduling_violations(pod, config)]


policy = ResourceValidationPolicy(
    name="gpu-pod-require-valid-fractions",
    description=(
        "Pods that ask for a GPU fraction give a valid gpu-fraction or gpu-memory value without "
        "nvidia.com/gpu, and reach KAI-Scheduler through its scheduler name and a queue label."
    ),
    validate=resource_validation(check_valid_fractions),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    config_schema=config_schema(SCHEDULER_NAME, QUEUE_LABEL),
    remediation_steps=(
        "Write gpu-fraction as a decimal in (0, 1] such as '0.5', or gpu-memory as whole MiB such as "
        "'20480'; drop the nvidia.com/gpu resource from fractional pods; set spec.schedulerName: "
        "kai-scheduler and a kai.scheduler/queue label (on the pod template or the workload) naming the "
        "queue."
    ),
)
