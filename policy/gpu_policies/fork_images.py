"""Which fork images a stack deploys: the shared discovery of the fork tag policies (what it builds:
fork_builds.py), and the images a v3 Release deploys, read from its values over a local chart's
defaults (what charts render and Configs name: fork_installs.py).

KAI counts as the fork when it runs in NvFractions mode. Values unknown during preview stay UNKNOWN,
so each check skips only what needs them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .facts import FIPS_OFF, FIPS_TAG_SUFFIX, NODE_AGENT_IMAGES
from .images import registry_base
from .props import UNKNOWN, Knob, Unknown
from .releases import Component, Release

NVFRACTIONS = "NvFractions"
DIGEST_PREFIX = "sha256:"
FORBIDDEN_TAGS: Knob[tuple[str, ...]] = Knob(
    key="forbiddenTags",
    default=("0.0.0", "0.1.0", "latest"),
    description="Chart appVersion and Makefile default tags, never fork builds (a leading v is ignored).",
    schema={"type": "array", "items": {"type": "string"}},
)


def is_forbidden(tag: Any, forbidden: set[str]) -> bool:
    return isinstance(tag, str) and (tag in forbidden or tag.removeprefix("v") in forbidden)


def known_text(value: Any) -> Any:
    """A known value as text, leaving None and UNKNOWN alone."""
    return value if value is None or isinstance(value, Unknown) else str(value)


def base_of(repository: Any, depth: int) -> Any:
    """The registry base of a repository value; None when it is unset, so the chart uses its default."""
    repository = known_text(repository)
    if isinstance(repository, Unknown):
        return UNKNOWN
    return registry_base(repository, depth) if repository else None


@dataclass(frozen=True)
class DeployedImage:
    """One image a fork install deploys: its tag and registry base, each str, None (unset) or UNKNOWN."""

    urn: str
    owner: str
    tag_key: str
    tag: Any
    repository_key: str
    base: Any
    fips: bool | Unknown = False
    # Set by the program itself, rather than a chart default or a tag the chart resolved.
    explicit: bool = True
    # Named by a kai-config Config in NvFractions mode or gpu-fractioning's operator, each judged alone.
    judged_alone: bool = False

    @property
    def judged_on_creation(self) -> bool:
        """kai-release-disallow-unsafe-values judges this tag on its own resource, before it is created:
        a tag a v3 Release sets, or one a Config or the operator names."""
        return self.explicit or self.judged_alone

    def describe_tag(self) -> str:
        return f"{self.tag_key} of {self.owner}"

    def describe_repository(self) -> str:
        return f"{self.repository_key} of {self.owner}"

    @property
    def digest_only(self) -> bool:
        return isinstance(self.tag, str) and self.tag.lstrip("@").startswith(DIGEST_PREFIX)

    @property
    def pinned_tag(self) -> Any:
        """The tag part of `<tag>@sha256:<digest>`; None for a bare digest, which pins the image itself."""
        if not isinstance(self.tag, str) or self.digest_only:
            return None if self.digest_only else self.tag
        return self.tag.split("@", 1)[0]

    @property
    def deployed_tag(self) -> Any:
        """The tag the chart renders: with -fips appended when the release asks for FIPS images."""
        tag = self.pinned_tag
        if isinstance(self.fips, Unknown) and isinstance(tag, str):
            return UNKNOWN
        return f"{tag}{FIPS_TAG_SUFFIX}" if self.fips is True and isinstance(tag, str) and tag else tag


@dataclass(frozen=True)
class ForkInstall:
    """A KAI or gpu-fractioning install and the images it deploys."""

    component: Component
    urn: str
    owner: str
    # KAI: whether it runs in NvFractions mode (so it is the fork); gpu-fractioning is always the fork.
    fork_mode: bool | Unknown
    images: tuple[DeployedImage, ...]
    release: Release | None = None
    fips: Any = field(default=None)


def helm_truthy(value: Any) -> bool | Unknown:
    """Whether a Helm template `if` takes `value` as true: any non-empty string is."""
    if isinstance(value, Unknown):
        return UNKNOWN
    if isinstance(value, str):
        return value != ""
    return bool(value)


def _fips(release: Release) -> tuple[Any, bool | Unknown]:
    mode = release.value("global.fipsMode")
    if isinstance(mode, Unknown):
        return mode, UNKNOWN
    return mode, mode is not None and mode != FIPS_OFF


def _kai_fork_mode(mode: Any, subchart: Any) -> bool | Unknown:
    # global.nvFractions.set forces NvFractions mode too (and is refused by its own policy).
    if mode == NVFRACTIONS or helm_truthy(subchart) is True:
        return True
    if isinstance(mode, Unknown) or isinstance(subchart, Unknown):
        return UNKNOWN
    return False


def _image_blocks(release: Release) -> Iterator[str]:
    """Every per-service image block of KAI's chart, such as `binder.image` and
    `binder.resourceReservationImage`: each may override the tag and the registry."""
    for service in sorted(release.keys("")):
        if service == "global":
            continue
        for block in sorted(release.keys(service)):
            if block == "image" or block.endswith("Image"):
                yield f"{service}.{block}"


def _kai_release_images(release: Release, fips: bool | Unknown) -> Iterator[DeployedImage]:
    owner = f"release {release.label!r}"
    global_base = base_of(release.value("global.registry"), 1)
    # Every KAI service image is <registry>/<service>:<tag>, global unless the service overrides it.
    yield DeployedImage(
        urn=release.urn,
        owner=owner,
        tag_key="global.tag",
        tag=known_text(release.value("global.tag")),
        repository_key="global.registry",
        base=global_base,
        fips=fips,
        explicit=not release.is_default("global.tag"),
    )
    for block in _image_blocks(release):
        tag = known_text(release.value(f"{block}.tag"))
        registry_key = next(
            (
                f"{block}.{key}"
                for key in ("registry", "repository")
                if release.value(f"{block}.{key}") not in (None, "")
            ),
            None,
        )
        if tag in (None, "") and registry_key is None:
            continue  # inherits global.tag and global.registry
        yield DeployedImage(
            urn=release.urn,
            owner=owner,
            tag_key=f"{block}.tag" if tag not in (None, "") else "global.tag",
            tag=tag if tag not in (None, "") else known_text(release.value("global.tag")),
            repository_key=registry_key or "global.registry",
            base=base_of(release.value(registry_key), 1) if registry_key else global_base,
            fips=fips,
            explicit=not release.is_default(f"{block}.tag"),
        )


def _fractioning_release_images(release: Release, fips: bool | Unknown) -> Iterator[DeployedImage]:
    owner = f"release {release.label!r}"
    names = release.keys("images") or frozenset(NODE_AGENT_IMAGES)
    # Each node agent is <base>/kai-gpu-fractioning/<name>:<tag>.
    for name in [*NODE_AGENT_IMAGES, *sorted(names - set(NODE_AGENT_IMAGES))]:
        key = f"images.{name}"
        yield DeployedImage(
            urn=release.urn,
            owner=owner,
            tag_key=f"{key}.tag",
            tag=known_text(release.value(f"{key}.tag")),
            repository_key=f"{key}.repository",
            base=base_of(release.value(f"{key}.repository"), 2),
            fips=fips,
            explicit=not release.is_default(f"{key}.tag"),
        )


def release_images(release: Release) -> tuple[DeployedImage, ...]:
    """The fork images a KAI or gpu-fractioning release deploys, with the tag and registry keys it sets."""
    return release_install(release).images


def release_install(release: Release) -> ForkInstall:
    fips_value, fips = _fips(release)
    if release.component is Component.KAI_SCHEDULER:
        mode = _kai_fork_mode(release.value("global.gpuSharingMode"), release.value("global.nvFractions.set"))
        images = tuple(_kai_release_images(release, fips))
    else:
        mode, images = True, tuple(_fractioning_release_images(release, fips))
    return ForkInstall(release.component, release.urn, f"release {release.label!r}", mode, images, release, fips_value)


def stack_runs_forks(installs: Sequence[ForkInstall]) -> bool | Unknown:
    """True with a gpu-fractioning install or KAI in NvFractions mode; UNKNOWN when only an unknown
    value stands between the stack and either."""
    if any(install.fork_mode is True for install in installs):
        return True
    return UNKNOWN if any(isinstance(install.fork_mode, Unknown) for install in installs) else False
