"""KAI's `global.gpuSharingMode`, in its release values or its kai-config Config, is an exact mode KAI knows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .facts import KAI_CONFIG
from .props import Knob, NotApplicable, Unknown, config_schema, peek, quoted, resource_validation
from .releases import Component, release_from_inputs

ALLOWED_MODES: Knob[tuple[str, ...]] = Knob(
    key="allowedModes",
    default=("NvFractions", "HamiCore", "NonMemoryEnforced", "Disabled"),
    description="The global.gpuSharingMode values this pack accepts, compared case-sensitively.",
    schema={"type": "array", "items": {"type": "string"}, "minItems": 1},
)


def _mode(resource_type: str, props: Mapping[str, Any]) -> tuple[str, Any] | None:
    if resource_type == KAI_CONFIG:
        return "spec.global.gpuSharingMode", peek(props, "spec", "global", "gpuSharingMode")
    release = release_from_inputs(resource_type, props, "", "")
    if release is None or release.component is not Component.KAI_SCHEDULER:
        return None
    return "global.gpuSharingMode", release.value("global.gpuSharingMode")


def check_sharing_mode(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """An absent or empty mode is valid: the chart then derives it (v0.17.0 uses global.gpuSharing)."""
    found = _mode(resource_type, props)
    if found is None:
        return []
    key, mode = found
    allowed = ALLOWED_MODES.read(config)
    if isinstance(mode, Unknown):
        raise NotApplicable(f"Not checked during preview: {key} can't be known yet.")
    if mode in (None, "") or mode in allowed:
        return []
    return [
        f"{key} is {mode!r}; set it to one of {quoted(allowed)}, spelled exactly, because the value is case-sensitive."
    ]


policy = ResourceValidationPolicy(
    name="kai-release-require-valid-sharing-mode",
    description=(
        "The KAI release and its kai-config Config set global.gpuSharingMode only to an exact, case-sensitive "
        "mode that KAI knows."
    ),
    validate=resource_validation(check_sharing_mode),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=config_schema(ALLOWED_MODES),
    remediation_steps=(
        "Set global.gpuSharingMode to NvFractions for the forks (or HamiCore, NonMemoryEnforced, Disabled), "
        "with exactly that capitalisation, or remove it to let the chart derive the mode."
    ),
)
