"""The KAI-Scheduler fork and the gpu-fractioning fork deploy as one pair: one tag, one registry, as built."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, Severity, StackValidationPolicy
from pulumi_policy.proxy import UnknownValueError

from .kube import (
    Component,
    identify_release,
    registry_base,
    release_label,
    split_image_reference,
)
from .props import (
    UNKNOWN,
    Knob,
    NotApplicable,
    Violation,
    config_schema,
    elements,
    is_true,
    keys,
    peek,
    quoted,
    stack_validation,
)

NODE_AGENT_IMAGES = ("operator", "mpsd", "fractiond", "metricsd")

FORBIDDEN_TAGS: Knob[tuple[str, ...]] = Knob(
    key="forbiddenTags",
    default=("0.0.0", "0.1.0", "latest"),
    description="Chart appVersion and Makefile default tags, never fork builds (a leading v is ignored).",
    schema={"type": "array", "items": {"type": "string"}},
)

BUILD_COMMAND = "command:local:Command"
DOCKER_BUILD_IMAGE = "docker-build:index:Image"
DOCKER_IMAGE = "docker:index/image:Image"
# The fork Makefiles take DOCKER_REPO_BASE plus DOCKER_TAG (KAI-Scheduler) or VERSION (gpu-fractioning).
BUILD_TAG_VARIABLES = ("DOCKER_TAG", "VERSION")


@dataclass(frozen=True)
class DeployedImage:
    """One image a fork release deploys: its tag and registry base, each str, None (unset) or UNKNOWN."""

    urn: str
    release: str
    tag_key: str
    tag: Any
    repository_key: str
    base: Any

    def describe_tag(self) -> str:
        return f"{self.tag_key} of release {self.release!r}"

    def describe_repository(self) -> str:
        return f"{self.repository_key} of release {self.release!r}"


def _text(value: Any) -> Any:
    """A known value as text, leaving None and UNKNOWN alone."""
    return value if value is None or value is UNKNOWN else str(value)


def _base(repository: Any, depth: int) -> Any:
    """The registry base of a repository value; None when it is unset, so the chart uses its default."""
    repository = _text(repository)
    if repository is UNKNOWN:
        return UNKNOWN
    return registry_base(repository, depth) if repository else None


def _peek_value(props: Mapping[str, Any], key: str) -> Any:
    return peek(props, "values", *key.split("."))


def _deployed_images(resource: PolicyResource, component: Component) -> Iterator[DeployedImage]:
    props, release = resource.props, release_label(resource.props, resource.name)
    if component is Component.KAI_SCHEDULER:
        # Every KAI service image is <global.registry>/<service>:<global.tag>.
        yield DeployedImage(
            urn=resource.urn,
            release=release,
            tag_key="global.tag",
            tag=_text(_peek_value(props, "global.tag")),
            repository_key="global.registry",
            base=_base(_peek_value(props, "global.registry"), 1),
        )
        return
    # Each node agent is <base>/kai-gpu-fractioning/<name>:<tag>.
    for name in NODE_AGENT_IMAGES:
        yield DeployedImage(
            urn=resource.urn,
            release=release,
            tag_key=f"images.{name}.tag",
            tag=_text(_peek_value(props, f"images.{name}.tag")),
            repository_key=f"images.{name}.repository",
            base=_base(_peek_value(props, f"images.{name}.repository"), 2),
        )


def _image_references(resource: PolicyResource) -> list[Any]:
    if resource.resource_type == DOCKER_IMAGE:
        return [peek(resource.props, "imageName")]
    try:
        return elements(resource.props, "tags")
    except UnknownValueError:
        return [UNKNOWN]


def _built_references(resource: PolicyResource) -> Iterator[tuple[Any, Any]]:
    """(repository, tag) of what a build resource pushes; a Makefile command's repository is None."""
    if resource.resource_type == BUILD_COMMAND:
        variables = keys(resource.props, "environment")
        if "DOCKER_REPO_BASE" in variables:
            for variable in BUILD_TAG_VARIABLES:
                if variable in variables:
                    yield None, _text(peek(resource.props, "environment", variable))
    elif resource.resource_type in (DOCKER_BUILD_IMAGE, DOCKER_IMAGE):
        for reference in _image_references(resource):
            if reference is UNKNOWN:
                yield UNKNOWN, UNKNOWN
            elif reference:
                yield split_image_reference(str(reference))


def _built_tags(resources: Sequence[PolicyResource], bases: set[str]) -> set[str] | None:
    """Tags this stack builds for the forks, or None when one of them is unknown during preview.

    Fork Makefile commands always count; a generic image counts when it is pushed under a registry
    base the forks deploy from (or its reference is unknown), so a team's app images do not.
    """
    built: set[str] = set()
    for resource in resources:
        for repository, tag in _built_references(resource):
            counts = (
                repository is None
                or repository is UNKNOWN
                or repository.startswith(tuple(f"{base}/" for base in bases))
            )
            if counts and tag is UNKNOWN:
                return None
            if counts and tag:
                built.add(tag)
    return built


def _runs_nvfractions(props: Mapping[str, Any]) -> bool:
    # global.nvFractions.set forces NvFractions mode too (and is refused by its own policy).
    return _peek_value(props, "global.gpuSharingMode") == "NvFractions" or is_true(
        _peek_value(props, "global.nvFractions.set")
    )


def _fork_images(resources: Sequence[PolicyResource]) -> list[DeployedImage]:
    releases = [(resource, identify_release(resource.resource_type, resource.props)) for resource in resources]
    kai = [resource for resource, component in releases if component is Component.KAI_SCHEDULER]
    fractioning = [resource for resource, component in releases if component is Component.GPU_FRACTIONING]
    if not fractioning and not any(_runs_nvfractions(resource.props) for resource in kai):
        raise NotApplicable("The stack deploys neither the gpu-fractioning release nor KAI in NvFractions mode.")
    return [
        *(image for resource in kai for image in _deployed_images(resource, Component.KAI_SCHEDULER)),
        *(image for resource in fractioning for image in _deployed_images(resource, Component.GPU_FRACTIONING)),
    ]


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


def check_paired_image_tags(resources: Sequence[PolicyResource], config: Mapping[str, Any]) -> list[Violation]:
    """Violations of the fork pairing; a value unknown during preview skips only the checks that need it."""
    images = _fork_images(resources)
    forbidden = set(FORBIDDEN_TAGS.read(config))
    # Tags that are known and acceptable; the others already have their own violation.
    tagged = [
        image
        for image in images
        if isinstance(image.tag, str) and image.tag and not _is_forbidden(image.tag, forbidden)
    ]
    bases = {image.base for image in images if isinstance(image.base, str) and image.base}
    return [
        *_tag_violations(images, forbidden),
        *_pairing_violations(tagged),
        *_build_violations(tagged, _built_tags(resources, bases)),
        *_registry_violations(images),
    ]


policy = StackValidationPolicy(
    name="kai-fork-require-paired-image-tags",
    description=(
        "The KAI-Scheduler fork and the gpu-fractioning fork are deployed with one explicit image tag "
        "from one registry base, and with the tag the stack builds."
    ),
    validate=stack_validation(check_paired_image_tags),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=config_schema(FORBIDDEN_TAGS),
    remediation_steps=(
        "Choose one TAG that names both fork commits (such as smshare-44d1d0a-af0544e) and build and push "
        "both forks with it; set global.tag on the KAI release and images.<name>.tag for operator, mpsd, "
        "fractiond and metricsd on the gpu-fractioning release to that tag; point global.registry at "
        "<registry>/kai-scheduler and every images.<name>.repository at "
        "<registry>/kai-gpu-fractioning/<name>."
    ),
)
