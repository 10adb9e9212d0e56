"""The GPU Operator chart and its pinned driver are new enough for MPS v3 namespaces and memory caps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .facts import CLUSTER_POLICY
from .props import Knob, NotApplicable, Unknown, config_schema, is_true, peek, resource_validation
from .releases import Component, Release, release_from_inputs
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
# The ClusterPolicy label gpu-fractioning reads the operator's version from (dependency_checker.go @ 1a42d991).
VERSION_LABEL = "app.kubernetes.io/version"


def _chart_violations(subject: str, version: Any, minimum: str, fix: str) -> list[str]:
    if isinstance(version, Unknown):
        return []
    if version in (None, ""):
        return [f"{subject} is not set, so the GPU Operator chart floats to whatever the repository serves; {fix}."]
    if version_at_least(str(version), minimum):
        return []
    return [
        f"{subject} is {version!r}, older than the {minimum} that gpu-fractioning needs for driver-enforced "
        f"memory caps (or no version number); {fix}."
    ]


def _driver_violations(key: str, enabled: Any, version: Any, minimum: str) -> list[str]:
    if isinstance(enabled, Unknown) or (enabled is not None and not is_true(enabled)):
        return []  # host-installed driver: the operator pins nothing
    if isinstance(version, Unknown):
        return []
    if version in (None, ""):
        return [
            f"{key} is not set, so the GPU Operator installs its default driver, which lacks MPS v3 "
            f"namespaces; pin {key} to release {minimum} or newer."
        ]
    if version_at_least(str(version), minimum):
        return []
    return [
        f"{key} is {version!r}, older than release {minimum} that MPS v3 namespaces need "
        f"(or no version number); pin {key} to release {minimum} or newer."
    ]


def _release_versions(release: Release) -> list[tuple[str, Any]]:
    # A local chart is whatever its Chart.yaml says; a remote one is the version the Release pins.
    return [
        ("version", release.chart_version or peek(release.props, "version")),
        ("driver.enabled", release.value("driver.enabled")),
        ("driver.version", release.value("driver.version")),
    ]


def _release_violations(release: Release, chart_minimum: str, driver_minimum: str) -> list[str]:
    (_, version), (_, enabled), (_, driver) = _release_versions(release)
    return [
        *_chart_violations("version", version, chart_minimum, f"pin version to {chart_minimum} or newer"),
        *_driver_violations("driver.version", enabled, driver, driver_minimum),
    ]


def _cluster_policy_violations(props: Mapping[str, Any], chart_minimum: str, driver_minimum: str) -> list[str]:
    return [
        *_chart_violations(
            f"ClusterPolicy label {VERSION_LABEL}",
            peek(props, "metadata", "labels", VERSION_LABEL),
            chart_minimum,
            f"install GPU Operator {chart_minimum} or newer",
        ),
        *_driver_violations(
            "spec.driver.version",
            peek(props, "spec", "driver", "enabled"),
            peek(props, "spec", "driver", "version"),
            driver_minimum,
        ),
    ]


def check_minimum_versions(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Host-driver mode (driver.enabled false) leaves nothing pinned to check; a missing version fails."""
    chart_minimum, driver_minimum = MINIMUM_CHART_VERSION.read(config), MINIMUM_DRIVER_VERSION.read(config)
    if resource_type == CLUSTER_POLICY:
        return _cluster_policy_violations(props, chart_minimum, driver_minimum)
    release = release_from_inputs(resource_type, props, "", "")
    if release is None or release.component is not Component.GPU_OPERATOR:
        return []
    violations = _release_violations(release, chart_minimum, driver_minimum)
    unknown = [key for key, value in _release_versions(release) if isinstance(value, Unknown)]
    if unknown and not violations:
        raise NotApplicable(f"Not checked during preview: {', '.join(unknown)} can't be known yet.")
    return violations


policy = ResourceValidationPolicy(
    name="gpu-operator-require-minimum-versions",
    description=(
        "The GPU Operator chart and the driver it pins, as a release or as the ClusterPolicy a chart renders, "
        "are new enough for MPS v3 namespaces and driver-enforced memory caps."
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
