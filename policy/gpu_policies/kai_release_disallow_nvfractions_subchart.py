"""KAI never turns on `global.nvFractions.set`, which swaps the fork for the upstream gpu-fractioning subchart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .props import Unknown, Violation, stack_validation
from .releases import Component, Release, chart_of, rendered_charts, unrendered_charts

KEY = "global.nvFractions.set"
FIX = "leave it at false and install the fork's chart as its own release."


def release_violation(release: Release) -> str | None:
    """What is wrong with a KAI release's global.nvFractions.set, as Helm reads it (kai-release-disallow-
    unsafe-values reports it, on the release itself)."""
    value = release.value(KEY)
    if isinstance(value, Unknown) or value is None or value is False:
        return None
    subject = release.describe(KEY)
    if release.is_default(KEY):
        subject += " (the default in the chart's values.yaml)"
    if value is True:
        return (
            f"{subject} is true, which installs the upstream gpu-fractioning subchart from ghcr.io instead of your "
            f"fork; {FIX}"
        )
    return (
        f"{subject} is {value!r}, not a boolean: Helm keeps a subchart on for any condition value that is not "
        f"false, so this installs the upstream gpu-fractioning subchart from ghcr.io; write false unquoted, or {FIX}"
    )


def check_nvfractions_subchart(resources: Sequence[PolicyResource], _config: Mapping[str, Any]) -> list[Violation]:
    """A chart resource (a v4 Chart, or the SDK-side v3 Chart) that renders KAI with the gpu-fractioning
    subchart; a v3 Release's values are judged on the release itself by kai-release-disallow-unsafe-values."""
    found = [
        Violation(
            f"Chart {rendered.label!r} renders KAI together with the gpu-fractioning subchart ({KEY} is on), "
            f"which installs upstream gpu-fractioning from ghcr.io instead of your fork; {FIX}",
            rendered.chart.urn,
        )
        for rendered in rendered_charts(resources)
        if chart_of(rendered) is Component.KAI_SCHEDULER and Component.GPU_FRACTIONING in rendered.components
    ]
    if not found and (unrendered := unrendered_charts(resources)) is not None:
        raise unrendered
    return found


policy = StackValidationPolicy(
    name="kai-release-disallow-nvfractions-subchart",
    description=(
        "A chart resource never renders KAI with the gpu-fractioning subchart (global.nvFractions.set on), so the "
        "upstream subchart never replaces the fork."
    ),
    validate=stack_validation(check_nvfractions_subchart),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Remove global.nvFractions.set from the KAI release values (or set it to the boolean false, also where "
        "a vendored chart's values.yaml defaults it to true), keep global.gpuSharingMode: NvFractions, and "
        "install the gpu-fractioning fork chart (operator/charts) as its own release."
    ),
)
