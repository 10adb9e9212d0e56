"""The KAI release never turns on `global.nvFractions.set`, which swaps the fork for the upstream subchart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import Component, identify_release, release_value
from .props import is_true, resource_validation


def check_nvfractions_subchart(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    if identify_release(resource_type, props) is not Component.KAI_SCHEDULER:
        return []
    if not is_true(release_value(props, "global.nvFractions.set")):
        return []
    return [
        "global.nvFractions.set is true, which installs the upstream gpu-fractioning subchart from ghcr.io "
        "instead of your fork; leave it at its default, false, and install the fork's chart as its own "
        "release."
    ]


policy = ResourceValidationPolicy(
    name="kai-release-disallow-nvfractions-subchart",
    description=(
        "The KAI release leaves global.nvFractions.set off, so the upstream subchart never replaces the fork."
    ),
    validate=resource_validation(check_nvfractions_subchart),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Remove global.nvFractions.set from the KAI release values (or set it to false), keep "
        "global.gpuSharingMode: NvFractions, and install the gpu-fractioning fork chart (operator/charts) "
        "as its own release named gpu-fractioning."
    ),
)
