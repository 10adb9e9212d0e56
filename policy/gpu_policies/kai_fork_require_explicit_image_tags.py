"""Every fork image is deployed with an explicit tag that is a build, not a chart or Makefile default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy

from .fork_images import FORBIDDEN_TAGS, DeployedImage, ForkInstall, is_forbidden, stack_runs_forks
from .fork_installs import NOT_APPLICABLE, fork_installs
from .props import NotApplicable, Unknown, Violation, config_schema, stack_validation
from .releases import Component


def _image_violation(image: DeployedImage, fork: bool, forbidden: set[str]) -> str | None:
    tag = image.pinned_tag
    if isinstance(image.tag, Unknown) or image.digest_only:
        return None
    if is_forbidden(tag, forbidden) and (fork or image.explicit):
        return (
            f"{image.describe_tag()} is {image.tag!r}, a chart or Makefile default rather than your fork build; "
            "set it to the tag you built and pushed."
        )
    if fork and tag in (None, ""):
        return (
            f"{image.describe_tag()} is empty, so the chart falls back to its appVersion instead of your fork "
            "build; set it to the tag you built and pushed."
        )
    return None


def _judged_on_creation(image: DeployedImage, forbidden: set[str]) -> bool:
    """A default tag set explicitly on a v3 Release, or named by a kai-config Config in NvFractions mode:
    kai-release-disallow-unsafe-values refuses it on that resource before it is created, so it is not
    reported twice."""
    return image.judged_on_creation and is_forbidden(image.pinned_tag, forbidden)


def _counts_as_fork(install: ForkInstall, stack_fork: bool | Unknown) -> bool:
    # With gpu-fractioning in the stack every KAI install is its partner; a KAI release whose mode is
    # unknown during preview is only held to what is wrong in any mode: an explicit default tag.
    return install.component is Component.GPU_FRACTIONING or install.fork_mode is True or stack_fork is True


def check_explicit_image_tags(resources: Sequence[PolicyResource], config: Mapping[str, Any]) -> list[Violation]:
    """A violation per empty or default tag; a tag unknown during preview is not checked."""
    installs = fork_installs(resources)
    stack_fork = stack_runs_forks(installs)
    forbidden = set(FORBIDDEN_TAGS.read(config))
    violations = [
        Violation(message, image.urn)
        for install in installs
        for image in install.images
        if not _judged_on_creation(image, forbidden)
        and (message := _image_violation(image, _counts_as_fork(install, stack_fork), forbidden))
    ]
    if not violations and stack_fork is not True:
        raise NotApplicable(NOT_APPLICABLE)
    return violations


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
        "on the gpu-fractioning release to the tag you built and pushed (such as smshare-44d1d0a-af0544e), "
        "optionally pinned as <tag>@sha256:<digest>, and give any per-service <service>.image.tag the same "
        "tag: an empty tag falls back to the chart's appVersion, and 0.0.0, 0.1.0 or latest are never the "
        "fork build."
    ),
)
