"""The GPU Operator never upgrades drivers on its own: its upgrade controller drains no fractional pod."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .facts import CLUSTER_POLICY
from .props import NotApplicable, Unknown, is_true, peek, resource_validation
from .releases import Component, release_from_inputs

# With autoUpgrade on, the upstream controller rolls every driver change: KAI's reservation pods (no
# owner) send the first node to upgrade-failed and hold every other node; with gpuPodDeletion.force the
# driver restarts under running fractional pods, whose MPS clients hold the module, so its unload fails
# (../shared/reference/day2-upstream.md 1.2-1.6; gpu-operator issue 2570). The chart turns it on by
# default (deployments/gpu-operator/values.yaml:167-198 @ v26.7.0); in a ClusterPolicy an absent
# upgradePolicy is off (controllers/upgrade_controller.go:121-126 @ v26.7.0).
KEY = "driver.upgradePolicy.autoUpgrade"
WHY = (
    "the GPU Operator then rolls every driver change itself and does not drain fractional pods: KAI's "
    "reservation pods hold the first node in upgrade-failed, or, with gpuPodDeletion.force, the driver "
    "restarts under running fractional pods and its unload fails"
)
FIX = "set it to false (unquoted) and roll drivers node by node, as `pulumi up` of this project does"


def _violation(subject: str, enabled: Any, auto: Any, default_on: bool) -> list[str]:
    if isinstance(enabled, Unknown) or (enabled is not None and not is_true(enabled)):
        return []  # a host-installed driver: the operator upgrades nothing
    if isinstance(auto, Unknown) or auto is False or (auto is None and not default_on):
        return []
    if auto is None:
        return [f"{subject} is not set, and the chart's default is true: {WHY}; {FIX}."]
    return [f"{subject} is {auto!r}: {WHY}; {FIX}."]


def check_driver_auto_upgrade(resource_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> list[str]:
    if resource_type == CLUSTER_POLICY:
        driver = peek(props, "spec", "driver")
        return _violation(
            "spec.driver.upgradePolicy.autoUpgrade",
            peek(driver, "enabled"),
            peek(driver, "upgradePolicy", "autoUpgrade"),
            default_on=False,
        )
    release = release_from_inputs(resource_type, props, "", "")
    if release is None or release.component is not Component.GPU_OPERATOR:
        return []
    enabled, auto = release.value("driver.enabled"), release.value(KEY)
    found = _violation(KEY, enabled, auto, default_on=True)
    if not found and (isinstance(enabled, Unknown) or isinstance(auto, Unknown)):
        raise NotApplicable(
            f"Not checked during preview: {KEY} or driver.enabled can't be known yet; `pulumi up` checks them "
            "before the release is created."
        )
    return found


policy = ResourceValidationPolicy(
    name="gpu-operator-disallow-driver-auto-upgrade",
    description=(
        "A GPU Operator that manages the driver, as a release or as the ClusterPolicy a chart renders, never "
        "upgrades it on its own (driver.upgradePolicy.autoUpgrade: false): its upgrade controller does not "
        "drain fractional pods."
    ),
    validate=resource_validation(check_driver_auto_upgrade),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set driver.upgradePolicy.autoUpgrade: false on the gpu-operator release (the chart defaults it to "
        "true), or spec.driver.upgradePolicy.autoUpgrade: false in the ClusterPolicy, and roll driver changes "
        "node by node: cordon, drain the node's fractional and reservation pods, let the driver reinstall, wait "
        "for mpsd and fractiond, uncordon. `pulumi up` of kai-gpu-fractions does this for its own stacks."
    ),
)
