"""Pods that ask for a GPU or a GPU fraction, and KAI's GPU reservation pods, run with the NVIDIA RuntimeClass."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .facts import (
    DEFAULT_RUNTIME_CLASS,
    GPU_RESOURCE_PATTERN,
    KAI_CONFIG,
    SYSTEM_NAMESPACE_LABEL,
    SYSTEM_NAMESPACE_VALUE,
)
from .kube import PodView
from .pods import Findings, PodSweep
from .props import Knob, Unknown, Violation, config_schema, described, peek
from .releases import Component, chart_of, releases, rendered_charts

RUNTIME_CLASS_NAME: Knob[str] = Knob(
    key="runtimeClassName",
    default=DEFAULT_RUNTIME_CLASS,
    description="The RuntimeClass that gives containers the NVIDIA driver libraries and NVML.",
    schema={"type": "string", "minLength": 1},
)


def _gpu_resources(pod: PodView) -> list[str] | Unknown:
    """The NVIDIA GPU resources (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*) any container asks for."""
    if isinstance(pod.containers, Unknown):
        return pod.containers
    found: set[str] = set()
    for container in pod.containers:
        if isinstance(container.resource_names, Unknown):
            return container.resource_names
        found.update(name for name in container.resource_names if GPU_RESOURCE_PATTERN.fullmatch(name))
    return sorted(found)


def check_pod_runtime_class(pod: PodView, config: Mapping[str, Any], found: Findings) -> None:
    fractional, gpus = pod.is_fractional, _gpu_resources(pod)
    if fractional is True:
        request = "a GPU fraction"
    elif isinstance(gpus, list) and gpus:
        request = gpus[0]
    elif isinstance(fractional, Unknown) or isinstance(gpus, Unknown):
        found.cannot_check("whether the pod asks for a GPU")
        return
    else:
        return
    expected = RUNTIME_CLASS_NAME.read(config)
    actual = pod.value("runtimeClassName")
    if not found.known(actual, pod.field("runtimeClassName")) or actual == expected:
        return
    if actual is None and pod.partial:
        found.cannot_check(f"{pod.field('runtimeClassName')}, which the patch leaves as the cluster has it")
        return
    found.fail(
        f"{pod.field('runtimeClassName')} {described(actual)} on a pod that asks for {request}; set it to "
        f"{expected!r} so its containers get the NVIDIA driver libraries."
    )


def _reservation_message(subject: str, actual: Any, expected: str) -> str:
    return (
        f"{subject} {described(actual)}, so KAI's GPU reservation pods cannot load NVML and fractional pods stay "
        f"Pending; set it to {expected!r}."
    )


def check_kai_binders(
    resources: Sequence[PolicyResource], config: Mapping[str, Any], found: Findings
) -> list[Violation]:
    """binder.runtimeClassName of every KAI release, and what every kai-config Config renders from it."""
    expected = RUNTIME_CLASS_NAME.read(config)
    violations = []
    for release in releases(resources):
        if release.component is not Component.KAI_SCHEDULER:
            continue
        actual = release.value("binder.runtimeClassName")
        if not found.known(actual, release.describe("binder.runtimeClassName")) or actual == expected:
            continue
        message = _reservation_message("binder.runtimeClassName", actual, expected)
        if release.value("binder.resourceReservation.runtimeClassName") is not None:
            message += " The chart does not read binder.resourceReservation.runtimeClassName."
        violations.append(Violation(message, release.urn))
    for resource in resources:
        if resource.resource_type != KAI_CONFIG:
            continue
        actual = peek(resource.props, "spec", "binder", "resourceReservation", "runtimeClassName")
        subject = f"spec.binder.resourceReservation.runtimeClassName of Config {resource.name!r}"
        if found.known(actual, subject) and actual != expected:
            violations.append(Violation(_reservation_message(subject, actual, expected), resource.urn))
    for rendered in rendered_charts(resources):
        if chart_of(rendered) is Component.KAI_SCHEDULER and not rendered.of_type(KAI_CONFIG):
            violations.append(
                Violation(
                    f"Chart {rendered.label!r} installs KAI but renders no kai-config Config: a Chart resource runs "
                    "no Helm hooks, so KAI's kai-config-deployer hook never creates it, KAI never starts, and "
                    "binder.runtimeClassName cannot be checked; set kaiConfig.render: true and "
                    "kaiConfigDeployer.enabled: false.",
                    rendered.chart.urn,
                )
            )
    return violations


SWEEP = PodSweep(check_pod_runtime_class, exemptable=True, fractional_only=False, extra=check_kai_binders)

policy = StackValidationPolicy(
    name="gpu-pod-require-runtime-class",
    description=(
        "Every pod that asks for a GPU or a GPU fraction, and every GPU reservation pod of KAI, runs with the "
        "NVIDIA RuntimeClass."
    ),
    validate=SWEEP.validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=config_schema(RUNTIME_CLASS_NAME),
    remediation_steps=(
        "Set spec.runtimeClassName: nvidia on every pod, or pod template, that carries a fraction annotation "
        "(gpu-fraction, gpu-memory, gpu-fraction-num-devices or nvidia.com/container.<name>.gpu-memory.*) or "
        "asks for an nvidia.com/gpu, nvidia.com/gpu.* or nvidia.com/mig-* resource; set binder.runtimeClassName: "
        "nvidia on the KAI release (not binder.resourceReservation.runtimeClassName, which the chart ignores), "
        "and with a Chart resource render kai-config inline (kaiConfig.render: true, kaiConfigDeployer.enabled: "
        "false). A system daemon's pod that asks for a GPU but no fraction (KAI's GPU reservation pods, the GPU "
        f"Operator's validators) may go without it in a Namespace of this stack labelled {SYSTEM_NAMESPACE_LABEL}: "
        f'"{SYSTEM_NAMESPACE_VALUE}"; a fractional pod never.'
    ),
)
