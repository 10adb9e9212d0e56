"""Every fork image is deployed with an explicit tag that is a build, not a chart or Makefile default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .fork_images import DeployedImage, fork_images
from .props import Knob, Violation, config_schema, stack_validation

FORBIDDEN_TAGS: Knob[tuple[str, ...]] = Knob(
    key="forbiddenTags",
    default=("0.0.0", "0.1.0", "latest"),
    description="Chart appVersion and Makefile default tags, never fork builds (a leading v is ignored).",
    schema={"type": "array", "items": {"type": "string"}},
)


def _tag_violations(images: list[DeployedImage], forbidden: set[str]) -> list[Violation]:
    violations = []
    for image in images:
        if image.tag in (None, ""):
            violations.append(
                Violation(
                    f"{image.describe_tag()} is empty, so the chart falls back to its appVersion instead of "
                    "your fork build; set it to the tag you built and pushed.",
                    image.urn,
                )
            )
        elif _is_forbidden(image.tag, forbidden):
            violations.append(
                Violation(
                    f"{image.describe_tag()} is {image.tag!r}, a chart or Makefile default rather than your "
                    "fork build; set it to the tag you built and pushed.",
                    image.urn,
                )
            )
    return violations


def _is_forbidden(tag: Any, forbidden: set[str]) -> bool:
    return isinstance(tag, str) and (tag in forbidden or tag.removeprefix("v") in forbidden)


def check_explicit_image_tags(resources: Sequence[PolicyResource], config: Mapping[str, Any]) -> list[Violation]:
    """A violation per empty or default tag; a tag unknown during preview is not checked."""
    return _tag_violations(fork_images(resources), set(FORBIDDEN_TAGS.read(config)))


policy = StackValidationPolicy(
    name="kai-fork-require-explicit-image-tags",
    description=(
        "Every KAI-Scheduler fork and gpu-fractioning fork image is deployed with an explicit tag that is "
        "not a chart appVersion or Makefile default."
    ),
    validate=stack_validation(check_explicit_image_tags),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=config_schema(FORBIDDEN_TAGS),
    remediation_steps=(
        "Set global.tag on the KAI release and images.<name>.tag for operator, mpsd, fractiond and metricsd "
        "on the gpu-fractioning release to the tag you built and pushed (such as smshare-44d1d0a-af0544e): an "
        "empty tag falls back to the chart's appVersion, and 0.0.0, 0.1.0 or latest are never the fork build."
    ),
)
