"""KAI and gpu-fractioning releases set no value that installs other than the fork, refused before creation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .fork_images import release_images
from .kai_fork_require_explicit_image_tags import FORBIDDEN_TAGS, is_forbidden
from .kai_release_disallow_nvfractions_subchart import KEY, release_violation
from .props import NotApplicable, Unknown, config_schema, resource_validation
from .releases import Component, release_from_inputs


def check_release_values(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """On a Helm v3 Release of KAI or gpu-fractioning: KAI's global.nvFractions.set, and every tag the
    release sets explicitly to a chart or Makefile default. The stack policies judge the rest (empty
    tags, pairing with the builds), which needs the whole stack and reports once the update ran."""
    release = release_from_inputs(resource_type, props, "", "")
    if release is None or release.component not in (Component.KAI_SCHEDULER, Component.GPU_FRACTIONING):
        return []
    messages: list[str] = []
    unknown: list[str] = []
    if release.component is Component.KAI_SCHEDULER:
        if isinstance(release.value(KEY), Unknown):
            unknown.append(KEY)
        elif message := release_violation(release):
            messages.append(message)
    forbidden = set(FORBIDDEN_TAGS.read(config))
    for image in release_images(release):
        if isinstance(image.tag, Unknown):
            unknown.append(image.tag_key)
        elif image.explicit and not image.digest_only and is_forbidden(image.pinned_tag, forbidden):
            messages.append(
                f"{image.describe_tag()} is {image.tag!r}, a chart or Makefile default rather than your fork build; "
                "set it to the tag you built and pushed."
            )
    if unknown and not messages:
        raise NotApplicable(
            f"Not checked during preview: {', '.join(sorted(set(unknown)))} can't be known yet; `pulumi up` checks "
            "them before the release is created."
        )
    return messages


policy = ResourceValidationPolicy(
    name="kai-release-disallow-unsafe-values",
    description=(
        "A KAI or gpu-fractioning Helm release never turns on the upstream gpu-fractioning subchart and never "
        "sets a tag to a chart or Makefile default, checked on the release itself before it is created."
    ),
    validate=resource_validation(check_release_values),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=config_schema(FORBIDDEN_TAGS),
    remediation_steps=(
        "Remove global.nvFractions.set from the KAI release (or set it to the boolean false, unquoted), and set "
        "global.tag, every <service>.image.tag and each gpu-fractioning images.<name>.tag to the tag you built "
        "and pushed, never 0.0.0, 0.1.0 or latest."
    ),
)
