"""KAI never turns on `global.nvFractions.set`, which swaps the fork for the upstream gpu-fractioning subchart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .props import NotApplicable, Unknown, Violation, stack_validation
from .releases import Component, Release, chart_of, releases, rendered_charts

KEY = "global.nvFractions.set"
FIX = "leave it at false and install the fork's chart as its own release."


def _release_violation(release: Release) -> str | None:
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
    kai = [release for release in releases(resources) if release.component is Component.KAI_SCHEDULER]
    violations = [Violation(message, release.urn) for release in kai if (message := _release_violation(release))]
    violations.extend(
        Violation(
            f"Chart {rendered.label!r} renders KAI together with the gpu-fractioning subchart ({KEY} is on), "
            f"which installs upstream gpu-fractioning from ghcr.io instead of your fork; {FIX}",
            rendered.chart.urn,
        )
        for rendered in rendered_charts(resources)
        if chart_of(rendered) is Component.KAI_SCHEDULER and Component.GPU_FRACTIONING in rendered.components
    )
    unknown = [release.describe(KEY) for release in kai if isinstance(release.value(KEY), Unknown)]
    if unknown and not violations:
        raise NotApplicable(f"Not checked during preview: {', '.join(unknown)} can't be known yet.")
    return violations


policy = StackValidationPolicy(
    name="kai-release-disallow-nvfractions-subchart",
    description=(
        "KAI leaves global.nvFractions.set off, as the boolean false, so the upstream subchart never replaces the fork."
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
