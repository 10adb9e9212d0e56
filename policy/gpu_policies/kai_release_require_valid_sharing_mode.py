"""The KAI release's `global.gpuSharingMode` is one of the exact, case-sensitive modes KAI knows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import Component, identify_release, release_value
from .props import Knob, config_schema, quoted, resource_validation

ALLOWED_MODES: Knob[tuple[str, ...]] = Knob(
    key="allowedModes",
    default=("NvFractions", "HamiCore", "NonMemoryEnforced", "Disabled"),
    description="The global.gpuSharingMode values this pack accepts, compared case-sensitively.",
    schema={"type": "array", "items": {"type": "string"}, "minItems": 1},
)


def check_sharing_mode(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """An absent or empty mode is valid: the chart then derives it (v0.17.0 uses global.gpuSharing)."""
    if identify_release(resource_type, props) is not Component.KAI_SCHEDULER:
        return []
    mode = release_value(props, "global.gpuSharingMode")
    allowed = ALLOWED_MODES.read(config)
    if mode in (None, "") or mode in allowed:
        return []
    return [
        f"global.gpuSharingMode is {mode!r}; set it to one of {quoted(allowed)}, spelled exactly, "
        "because the value is case-sensitive."
    ]


policy = ResourceValidationPolicy(
    name="kai-release-require-valid-sharing-mode",
    description=("The KAI release sets global.gpuSharingMode only to an exact, case-sensitive mode that KAI knows."),
    validate=resource_validation(check_sharing_mode),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=config_schema(ALLOWED_MODES),
    remediation_steps=(
        "Set global.gpuSharingMode to NvFractions for the forks (or HamiCore, NonMemoryEnforced, Disabled), "
        "with exactly that capitalisation, or remove it to let the chart derive the mode."
    ),
)
