"""Pods that ask for a GPU, and KAI's GPU reservation pods, run with the NVIDIA RuntimeClass."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import EXEMPT_NAMESPACES, Component, PodView, identify_release, pod_view, release_value
from .props import Knob, config_schema, described, dig, resource_validation

RUNTIME_CLASS_NAME: Knob[str] = Knob(
    key="runtimeClassName",
    default="nvidia",
    description="The RuntimeClass that gives containers the NVIDIA driver libraries and NVML.",
    schema={"type": "string", "minLength": 1},
)


def _check_pod(pod: PodView, expected: str) -> list[str]:
    request = pod.gpu_request
    if request is None:
        return []
    field = pod.field("runtimeClassName")
    actual = dig(pod.spec, "runtimeClassName")
    if actual == expected:
        return []
    return [
        f"{field} {described(actual)} on a pod that asks for {request}; set it to {expected!r} so its "
        "containers get the NVIDIA driver libraries."
    ]


def _check_kai_binder(props: Mapping[str, Any], expected: str) -> list[str]:
    actual = release_value(props, "binder.runtimeClassName")
    if actual == expected:
        return []
    message = (
        f"binder.runtimeClassName {described(actual)}, so KAI's GPU reservation pods cannot load NVML and "
        f"fractional pods stay Pending; set it to {expected!r}."
    )
    if release_value(props, "binder.resourceReservation.runtimeClassName") is not None:
        message += " The chart does not read binder.resourceReservation.runtimeClassName."
    return [message]


def check_runtime_class(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    expected = RUNTIME_CLASS_NAME.read(config)
    pod = pod_view(resource_type, props)
    if pod is not None:
        return [] if pod.is_exempt(config) else _check_pod(pod, expected)
    if identify_release(resource_type, props) is Component.KAI_SCHEDULER:
        return _check_kai_binder(props, expected)
    return []


policy = ResourceValidationPolicy(
    name="gpu-pod-require-runtime-class",
    description=(
        "Every pod that asks for a GPU, and every GPU reservation pod of KAI, runs with the NVIDIA RuntimeClass."
    ),
    validate=resource_validation(check_runtime_class),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=config_schema(RUNTIME_CLASS_NAME, EXEMPT_NAMESPACES),
    remediation_steps=(
        "Set spec.runtimeClassName: nvidia on every pod, or pod template, that carries a gpu-fraction or "
        "gpu-memory annotation or requests nvidia.com/gpu, and set binder.runtimeClassName: nvidia on the "
        "KAI release (not binder.resourceReservation.runtimeClassName, which the chart ignores)."
    ),
)
