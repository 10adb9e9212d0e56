"""The KAI-Scheduler fork and the gpu-fractioning fork deploy as one pair: one tag, one registry, as built."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .facts import FIPS_OFF
from .fork_builds import Builds, builds
from .fork_images import DeployedImage, ForkInstall, stack_runs_forks
from .fork_installs import NOT_APPLICABLE, fork_installs
from .props import NotApplicable, Unknown, Violation, quoted, stack_validation
from .releases import Component


def _compared(images: list[DeployedImage]) -> list[DeployedImage]:
    """The images whose deployed tag is known: a bare digest pins the image and has no tag to compare."""
    return [image for image in images if isinstance(image.deployed_tag, str) and image.deployed_tag]


def _shown(image: DeployedImage) -> str:
    shown = repr(image.tag)
    return f"{shown}, deployed as {image.deployed_tag!r}" if image.deployed_tag != image.pinned_tag else shown


def _reference(images: list[DeployedImage], value: Callable[[DeployedImage], Any]) -> DeployedImage:
    """The image the others are compared with: the first (KAI first, then in stack order) of those that
    share the most common value, so one wrong image is the one reported, whatever order the engine
    hands the resources in."""
    counts = Counter(value(image) for image in images)
    most = max(counts.values())
    return next(image for image in images if counts[value(image)] == most)


def _pairing_violations(tagged: list[DeployedImage]) -> list[Violation]:
    if not tagged:
        return []
    reference = _reference(tagged, lambda image: image.deployed_tag)
    return [
        Violation(
            f"{image.describe_tag()} is {_shown(image)} but {reference.describe_tag()} is {_shown(reference)}; "
            "deploy both forks with one tag, because they only work as a matched pair.",
            image.urn,
        )
        for image in tagged
        if image.deployed_tag != reference.deployed_tag
    ]


def _build_violations(tagged: list[DeployedImage], built: Builds) -> list[Violation]:
    if not built.tags:
        return []  # nothing built here, or a built tag is unknown during preview
    return [
        Violation(
            f"{image.describe_tag()} is {_shown(image)} but this stack builds {quoted(sorted(built.tags))}; "
            "deploy the tag you built.",
            image.urn,
        )
        for image in tagged
        if image.deployed_tag not in built.tags and image.fips is not True
    ]


def _fips_violations(installs: list[ForkInstall], built: Builds) -> list[Violation]:
    violations = []
    for install in installs:
        if install.release is None or install.fips in (None, FIPS_OFF) or isinstance(install.fips, Unknown):
            continue
        tags = {image.deployed_tag for image in install.images if isinstance(image.deployed_tag, str)}
        if built.tags is None or (built.tags and (not tags or tags <= built.tags)):
            continue  # a built tag is unknown during preview, or the stack builds what the chart deploys
        deploys = f"deploys {quoted(sorted(tags))}" if tags else "deploys <tag>-fips"
        violations.append(
            Violation(
                f"{install.release.describe('global.fipsMode')} is {install.fips!r}, so the chart appends -fips and "
                f'{deploys}, which this stack does not build; set global.fipsMode: "off", or build and push '
                "-fips images of both forks in this stack and deploy them.",
                install.urn,
            )
        )
    return violations


def _registry_violations(images: list[DeployedImage], built: Builds) -> list[Violation]:
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
    if not placed:
        return violations
    reference = _reference(placed, lambda image: image.base)
    violations.extend(
        Violation(
            f"{image.describe_repository()} is under {image.base!r} but {reference.describe_repository()} "
            f"is under {reference.base!r}; push and deploy both forks under one registry base.",
            image.urn,
        )
        for image in placed
        if image.base != reference.base
    )
    if built.bases:
        violations.extend(
            Violation(
                f"{image.describe_repository()} is under {image.base!r} but this stack builds the forks under "
                f"{quoted(sorted(built.bases))}; deploy the images from the registry you push them to.",
                image.urn,
            )
            # An image under another base than the rest is reported above already.
            for image in placed
            if image.base == reference.base and image.base not in built.bases
        )
    return violations


def check_paired_image_tags(resources: Sequence[PolicyResource], _config: Mapping[str, Any]) -> list[Violation]:
    """Violations of the fork pairing; a value unknown during preview skips only the checks that need it.

    Empty and default tags are kai-fork-require-explicit-image-tags's to report.
    """
    installs = fork_installs(resources)
    if stack_runs_forks(installs) is not True:
        raise NotApplicable(NOT_APPLICABLE)
    # KAI first, then in stack order: the engine hands the resources in no particular order.
    ordered = sorted(installs, key=lambda install: (install.component is not Component.KAI_SCHEDULER, install.urn))
    images = [image for install in ordered for image in install.images]
    tagged = _compared(images)
    built = builds(resources, {image.base for image in images if isinstance(image.base, str) and image.base})
    return [
        *_pairing_violations(tagged),
        *_build_violations(tagged, built),
        *_fips_violations(installs, built),
        *_registry_violations(images, built),
    ]


policy = StackValidationPolicy(
    name="kai-fork-require-paired-image-tags",
    description=(
        "The KAI-Scheduler fork and the gpu-fractioning fork are deployed with one image tag from one "
        "registry base, and with the tag and registry the stack builds."
    ),
    validate=stack_validation(check_paired_image_tags),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "Choose one TAG that names both fork commits (such as smshare-44d1d0a-af0544e) and build and push "
        "both forks with it; set global.tag on the KAI release and images.<name>.tag for operator, mpsd, "
        "fractiond and metricsd on the gpu-fractioning release to that tag (a <tag>@sha256:<digest> pin is "
        "fine), with no other per-service tag; point global.registry at <registry>/kai-scheduler and every "
        "images.<name>.repository at <registry>/kai-gpu-fractioning/<name>, the registry the stack pushes to; "
        'leave global.fipsMode at "off" unless the stack builds -fips images.'
    ),
)
