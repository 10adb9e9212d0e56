"""KAI and gpu-fractioning installs set no value that installs other than the fork, refused before creation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .facts import KAI_CONFIG
from .fork_images import FORBIDDEN_TAGS, DeployedImage, is_forbidden, release_images
from .fork_installs import config_install, fractioning_operator
from .kai_release_disallow_nvfractions_subchart import KEY, release_violation
from .props import NotApplicable, Unknown, config_schema, resource_validation
from .releases import HELM_RELEASE, Component, release_from_inputs

CONFIG_MODE = "spec.global.gpuSharingMode"


def _judged(resource_type: str, props: Mapping[str, Any]) -> tuple[list[str], list[str], tuple[DeployedImage, ...]]:
    """What a resource installs that is judged on the resource itself: a KAI or gpu-fractioning v3
    Release, a kai-config Config in NvFractions mode or gpu-fractioning's operator workload (a chart's
    rendered ones included, which a v4 Chart whose values were unknown at preview first renders during
    `up`). Its messages, the keys not known yet, and the images it names."""
    if resource_type == KAI_CONFIG:
        install = config_install(props, "", "this kai-config Config")
        if isinstance(install.fork_mode, Unknown):
            return [], [CONFIG_MODE], ()
        return [], [], install.images if install.fork_mode else ()
    if (operator := fractioning_operator(resource_type, props, "", "gpu-fractioning's operator")) is not None:
        return [], [], operator.images
    release = release_from_inputs(resource_type, props, "", "")
    if release is None or release.component not in (Component.KAI_SCHEDULER, Component.GPU_FRACTIONING):
        return [], [], ()
    messages: list[str] = []
    unknown: list[str] = []
    if release.component is Component.KAI_SCHEDULER:
        if isinstance(release.value(KEY), Unknown):
            unknown.append(KEY)
        elif message := release_violation(release):
            messages.append(message)
    return messages, unknown, release_images(release)


def check_release_values(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """KAI's global.nvFractions.set on a Helm v3 Release, and every tag such a release sets explicitly,
    or an NvFractions kai-config Config names, to a chart or Makefile default. The stack policies judge
    the rest (empty tags, pairing with the builds), which needs the whole stack and reports once the
    update ran."""
    messages, unknown, images = _judged(resource_type, props)
    forbidden = set(FORBIDDEN_TAGS.read(config))
    where = "" if resource_type == HELM_RELEASE else " (in the values of the chart that renders it)"
    for image in images:
        if not image.judged_on_creation or image.digest_only:
            continue
        if isinstance(image.tag, Unknown):
            unknown.append(image.tag_key)
        elif is_forbidden(image.pinned_tag, forbidden):
            messages.append(
                f"{image.describe_tag()} is {image.tag!r}, a chart or Makefile default rather than your fork build; "
                f"set it{where} to the tag you built and pushed."
            )
    if unknown and not messages:
        subject = "Config" if resource_type == KAI_CONFIG else "release"
        raise NotApplicable(
            f"Not checked during preview: {', '.join(sorted(set(unknown)))} can't be known yet; `pulumi up` checks "
            f"them before the {subject} is created."
        )
    return messages


policy = ResourceValidationPolicy(
    name="kai-release-disallow-unsafe-values",
    description=(
        "A KAI or gpu-fractioning Helm release never turns on the upstream gpu-fractioning subchart and never "
        "sets a tag to a chart or Makefile default, and a kai-config Config in NvFractions mode (a chart's "
        "rendered one too) never names such a tag: each checked on the resource itself before it is created."
    ),
    validate=resource_validation(check_release_values),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=config_schema(FORBIDDEN_TAGS),
    remediation_steps=(
        "Remove global.nvFractions.set from the KAI release (or set it to the boolean false, unquoted), and set "
        "global.tag, every <service>.image.tag and each gpu-fractioning images.<name>.tag to the tag you built "
        "and pushed, never 0.0.0, 0.1.0 or latest; a Chart resource renders these into kai-config's Config."
    ),
)
