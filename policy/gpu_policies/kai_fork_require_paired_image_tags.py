"""The KAI-Scheduler fork and the gpu-fractioning fork deploy as one pair: one tag, one registry, as built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .fork_images import DeployedImage, built_tags, fork_images
from .props import Violation, quoted, stack_validation


def _pairing_violations(tagged: list[DeployedImage]) -> list[Violation]:
    if not tagged:
        return []
    reference = tagged[0]
    return [
        Violation(
            f"{image.describe_tag()} is {image.tag!r} but {reference.describe_tag()} is {reference.tag!r}; "
            "deploy both forks with one tag, because they only work as a matched pair.",
            image.urn,
        )
        for image in tagged[1:]
        if image.tag != reference.tag
    ]


def _build_violations(tagged: list[DeployedImage], built: set[str] | None) -> list[Violation]:
    if not built:
        return []  # nothing built here, or a built tag is unknown during preview
    return [
        Violation(
            f"{image.describe_tag()} is {image.tag!r} but this stack builds {quoted(sorted(built))}; "
            "deploy the tag you built.",
            image.urn,
        )
        for image in tagged
        if image.tag not in built
    ]


def _registry_violations(images: list[DeployedImage]) -> list[Violation]:
    violations = [
        Violation(
            f"{image.describe_repository()} is not set, so the chart pulls its default upstream image "
            "instead of your fork build; set it under the registry you pushed the forks to.",
            image.urn,
        )
        for image in images
        if image.base is None
    ]
    placed = [image for image in images if isinstance(image.base, str)]
    violations.extend(
        Violation(
            f"{image.describe_repository()} is under {image.base!r} but {placed[0].describe_repository()} "
            f"is under {placed[0].base!r}; push and deploy both forks under one registry base.",
            image.urn,
        )
        for image in placed[1:]
        if image.base != placed[0].base
    )
    return violations


def check_paired_image_tags(resources: Sequence[PolicyResource], _config: Mapping[str, Any]) -> list[Violation]:
    """Violations of the fork pairing; a value unknown during preview skips only the checks that need it.

    Empty and default tags are kai-fork-require-explicit-image-tags's to report.
    """
    images = fork_images(resources)
    tagged = [image for image in images if isinstance(image.tag, str) and image.tag]
    bases = {image.base for image in images if isinstance(image.base, str) and image.base}
    return [
        *_pairing_violations(tagged),
        *_build_violations(tagged, built_tags(resources, bases)),
        *_registry_violations(images),
    ]


policy = StackValidationPolicy(
    name="kai-fork-require-paired-image-tags",
    description=(
        "The KAI-Scheduler fork and the gpu-fractioning fork are deployed with one image tag from one "
        "registry base, and with the tag the stack builds."
    ),
    validate=stack_validation(check_paired_image_tags),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "Choose one TAG that names both fork commits (such as smshare-44d1d0a-af0544e) and build and push "
        "both forks with it; set global.tag on the KAI release and images.<name>.tag for operator, mpsd, "
        "fractiond and metricsd on the gpu-fractioning release to that tag; point global.registry at "
        "<registry>/kai-scheduler and every images.<name>.repository at "
        "<registry>/kai-gpu-fractioning/<name>."
    ),
)
