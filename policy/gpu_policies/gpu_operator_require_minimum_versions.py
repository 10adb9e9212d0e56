"""The GPU Operator chart and its pinned driver are new enough for MPS v3 namespaces and memory caps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import Component, identify_release, release_value
from .props import Knob, config_schema, dig, is_true, resource_validation
from .versions import VERSION_PATTERN, version_at_least

MINIMUM_CHART_VERSION: Knob[str] = Knob(
    key="minimumChartVersion",
    default="v26.7.1",
    description="The oldest GPU Operator chart accepted (v26.7.1 ships the memory-limit hook).",
    schema={"type": "string", "pattern": VERSION_PATTERN},
)
MINIMUM_DRIVER_VERSION: Knob[str] = Knob(
    key="minimumDriverVersion",
    default="615",
    description="The oldest NVIDIA driver accepted (r615 brings MPS v3 namespaces).",
    schema={"type": "string", "pattern": VERSION_PATTERN},
)


def _chart_violations(version: Any, minimum: str) -> list[str]:
    if version in (None, ""):
        return [
            f"version is not set, so the GPU Operator chart floats to whatever the repository serves; "
            f"pin version to {minimum} or newer."
        ]
    if version_at_least(str(version), minimum):
        return []
    return [
        f"version is {version!r}, older than the {minimum} that gpu-fractioning needs for driver-enforced "
        f"memory caps (or no version number); pin version to {minimum} or newer."
    ]


def _driver_violations(props: Mapping[str, Any], minimum: str) -> list[str]:
    enabled = release_value(props, "driver.enabled")
    if enabled is not None and not is_true(enabled):
        return []  # host-installed driver: the operator pins nothing
    version = release_value(props, "driver.version")
    if version in (None, ""):
        return [
            f"driver.version is not set, so the GPU Operator installs its default driver, which lacks MPS v3 "
            f"namespaces; pin driver.version to release {minimum} or newer."
        ]
    if version_at_least(str(version), minimum):
        return []
    return [
        f"driver.version is {version!r}, older than release {minimum} that MPS v3 namespaces need "
        f"(or no version number); pin driver.version to release {minimum} or newer."
    ]


def check_minimum_versions(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Host-driver mode (driver.enabled false) leaves nothing pinned to check; a missing version fails."""
    if identify_release(resource_type, props) is not Component.GPU_OPERATOR:
        return []
    return [
        *_chart_violations(dig(props, "version"), MINIMUM_CHART_VERSION.read(config)),
        *_driver_violations(props, MINIMUM_DRIVER_VERSION.read(config)),
    ]


policy = ResourceValidationPolicy(
    name="gpu-operator-require-minimum-versions",
    description=(
        "The GPU Operator chart and the driver it pins are new enough for MPS v3 namespaces "
        "and driver-enforced memory caps."
    ),
    validate=resource_validation(check_minimum_versions),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=config_schema(MINIMUM_CHART_VERSION, MINIMUM_DRIVER_VERSION),
    remediation_steps=(
        "Pin the gpu-operator release to version v26.7.1 or newer and set driver.version to an r615 driver "
        "such as 615.71.09, or set driver.enabled: false when the nodes carry a host-installed r615 driver. "
        "To accept v26.7.0, lower minimumChartVersion and set gpuOperator.minimumVersion on gpu-fractioning."
    ),
)
