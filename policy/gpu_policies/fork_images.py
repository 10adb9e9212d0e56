"""Which images a stack deploys and builds for the two forks: the shared discovery of the fork tag policies.

A fork release is recognised by its chart (components in kube.py); KAI counts when it runs in
NvFractions mode. Values unknown during preview stay UNKNOWN, so each check can skip only what
needs them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .kube import Component, identify_release, registry_base, release_label, split_image_reference
from .props import UNKNOWN, NotApplicable, elements, is_true, keys, peek

NODE_AGENT_IMAGES = ("operator", "mpsd", "fractiond", "metricsd")

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


def built_tags(resources: Sequence[PolicyResource], bases: set[str]) -> set[str] | None:
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


def fork_images(resources: Sequence[PolicyResource]) -> list[DeployedImage]:
    releases = [(resource, identify_release(resource.resource_type, resource.props)) for resource in resources]
    kai = [resource for resource, component in releases if component is Component.KAI_SCHEDULER]
    fractioning = [resource for resource, component in releases if component is Component.GPU_FRACTIONING]
    if not fractioning and not any(_runs_nvfractions(resource.props) for resource in kai):
        raise NotApplicable("The stack deploys neither the gpu-fractioning release nor KAI in NvFractions mode.")
    return [
        *(image for resource in kai for image in _deployed_images(resource, Component.KAI_SCHEDULER)),
        *(image for resource in fractioning for image in _deployed_images(resource, Component.GPU_FRACTIONING)),
    ]
