"""Which fork images a stack builds: the fork Makefile commands and image resources, their tags and
the registry bases they push to, for the fork tag policies."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .fork_images import known_text
from .images import registry_base, split_image_reference
from .props import UNKNOWN, Unknown, elements, keys, peek

BUILD_COMMAND = "command:local:Command"
DOCKER_BUILD_IMAGE = "docker-build:index:Image"
DOCKER_IMAGE = "docker:index/image:Image"
# The fork Makefiles take DOCKER_REPO_BASE plus DOCKER_TAG (KAI-Scheduler) or VERSION (gpu-fractioning).
BUILD_TAG_VARIABLES = ("DOCKER_TAG", "VERSION")


@dataclass(frozen=True)
class Builds:
    """What the stack builds for the forks: tags (None when one is unknown) and registry bases."""

    tags: set[str] | None
    bases: set[str]


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
                    yield None, known_text(peek(resource.props, "environment", variable))
    elif resource.resource_type in (DOCKER_BUILD_IMAGE, DOCKER_IMAGE):
        for reference in _image_references(resource):
            if isinstance(reference, Unknown):
                yield UNKNOWN, UNKNOWN
            elif reference:
                yield split_image_reference(str(reference))


def _built_bases(resources: Sequence[PolicyResource]) -> set[str]:
    """Where the fork Makefiles push: DOCKER_REPO_BASE is <registry>/kai-scheduler or
    <registry>/kai-gpu-fractioning, so the registry base is that less its last segment."""
    bases = set()
    for resource in resources:
        if resource.resource_type == BUILD_COMMAND:
            repo_base = peek(resource.props, "environment", "DOCKER_REPO_BASE")
            if isinstance(repo_base, str) and repo_base:
                bases.add(registry_base(repo_base, 1))
    return bases


def builds(resources: Sequence[PolicyResource], deployed_bases: set[str]) -> Builds:
    """Fork Makefile commands always count; a generic image counts when it is pushed under a registry
    base the forks deploy from (or its reference is unknown), so a team's app images do not."""
    built: set[str] | None = set()
    for resource in resources:
        for repository, tag in _built_references(resource):
            counts = (
                repository is None
                or isinstance(repository, Unknown)
                or repository.startswith(tuple(f"{base}/" for base in deployed_bases))
            )
            if counts and isinstance(tag, Unknown):
                built = None
            elif counts and tag and built is not None:
                built.add(tag)
    return Builds(built, _built_bases(resources))
