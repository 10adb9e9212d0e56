"""Every KAI and gpu-fractioning install of a stack: a v3 Release (fork_images.py), a chart resource
(a v4 Chart, or the SDK-side v3 Chart) by the kai-config Config and the workloads it renders, or a
kai-config Config the stack declares itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pulumi_policy import PolicyResource

from .facts import IMAGE_ENV_SUFFIXES, KAI_CONFIG, NODE_AGENT_IMAGES
from .fork_images import NVFRACTIONS, DeployedImage, ForkInstall, base_of, known_text, release_install
from .images import split_image_reference
from .kube import is_built_in_workload, is_list, pod_view
from .props import UNKNOWN, Unknown, peek
from .releases import Component, RenderedChart, chart_of, is_chart_child, releases, rendered_charts

NOT_APPLICABLE = "The stack deploys neither the gpu-fractioning release nor KAI in NvFractions mode."


# Where kai-config's Config names each image it deploys: <repository>/<name>:<tag>.
def _config_image_paths(spec: Mapping[str, Any]) -> Iterator[tuple[str, ...]]:
    for section in sorted(spec):
        if isinstance(peek(spec, section, "service", "image"), Mapping):
            yield (section, "service", "image")
    yield ("binder", "resourceReservation", "image")
    yield ("nodeScaleAdjuster", "args", "scalingPodImage")


def _config_images(props: Mapping[str, Any], urn: str, owner: str) -> Iterator[DeployedImage]:
    spec = peek(props, "spec")
    if not isinstance(spec, Mapping):
        return
    fork = _config_mode(props) is True
    for path in _config_image_paths(spec):
        image = peek(spec, *path)
        if not isinstance(image, Mapping):
            continue
        key = "spec." + ".".join(path)
        yield DeployedImage(
            urn=urn,
            owner=owner,
            tag_key=f"{key}.tag",
            tag=known_text(peek(image, "tag")),
            repository_key=f"{key}.repository",
            base=base_of(peek(image, "repository"), 1),
            explicit=False,
            judged_alone=fork,
        )


def _workload_images(resource_type: str, props: Mapping[str, Any], urn: str, owner: str) -> Iterator[DeployedImage]:
    """The images a rendered workload runs, and those its containers pass on as <NAME>_IMAGE_* variables."""
    pod = pod_view(resource_type, props)
    if pod is None:
        return
    for kind in ("initContainers", "containers"):
        listed = peek(pod.spec, kind)
        for index, container in enumerate(listed if is_list(listed) else ()):
            name = peek(container, "name")
            where = f"{pod.field(kind)}[{index}]" if not isinstance(name, str) else f"container {name!r}"
            reference = peek(container, "image")
            if isinstance(reference, str):
                repository, tag = split_image_reference(reference)
                if tag is None and "@" in reference:
                    tag = "@" + reference.split("@", 1)[1]  # pinned by digest alone
                yield DeployedImage(
                    urn=urn,
                    owner=owner,
                    tag_key=f"the image tag of {where}",
                    tag=tag,
                    repository_key=f"the image of {where}",
                    base=base_of(repository, 2),
                    explicit=False,
                )
            yield from _env_images(urn, owner, where, container)


def _env_images(urn: str, owner: str, where: str, container: Any) -> Iterator[DeployedImage]:
    listed = peek(container, "env")
    items = [item for item in (listed if is_list(listed) else ()) if isinstance(item, Mapping)]
    env = {peek(item, "name"): peek(item, "value") for item in items}
    repository_suffix, tag_suffix = IMAGE_ENV_SUFFIXES
    for variable in sorted(name for name in env if isinstance(name, str) and name.endswith(repository_suffix)):
        prefix = variable.removesuffix(repository_suffix)
        yield DeployedImage(
            urn=urn,
            owner=owner,
            tag_key=f"{prefix}{tag_suffix} of {where}",
            tag=known_text(env.get(f"{prefix}{tag_suffix}")),
            repository_key=f"{variable} of {where}",
            base=base_of(env[variable], 2),
            explicit=False,
        )


def _config_mode(props: Mapping[str, Any]) -> bool | Unknown:
    mode = peek(props, "spec", "global", "gpuSharingMode")
    return UNKNOWN if isinstance(mode, Unknown) else mode == NVFRACTIONS


def _chart_install(rendered: RenderedChart, component: Component) -> ForkInstall:
    images: list[DeployedImage] = []
    configs = rendered.of_type(KAI_CONFIG)
    for child in rendered.children:
        kind = child.resource_type.rsplit(":", 1)[-1]
        owner = f"{kind} {child.name!r} of chart {rendered.label!r}"
        if child.resource_type == KAI_CONFIG:
            images.extend(_config_images(child.props, child.urn, owner))
        else:
            found = tuple(_workload_images(child.resource_type, child.props, child.urn, owner))
            images.extend(_as_operator(found) or found)
    mode: bool | Unknown = True
    if component is Component.KAI_SCHEDULER:
        modes = [_config_mode(config.props) for config in configs]
        # Without a rendered kai-config the mode is not visible; the runtime-class policy refuses that.
        mode = True if True in modes else (UNKNOWN if not modes or UNKNOWN in modes else False)
    return ForkInstall(component, rendered.chart.urn, f"chart {rendered.label!r}", mode, tuple(images))


def fork_installs(resources: Sequence[PolicyResource]) -> list[ForkInstall]:
    """Every KAI and gpu-fractioning install of the stack."""
    installs = [
        release_install(release)
        for release in releases(resources)
        if release.component in (Component.KAI_SCHEDULER, Component.GPU_FRACTIONING)
    ]
    for rendered in rendered_charts(resources):
        component = chart_of(rendered)
        if component in (Component.KAI_SCHEDULER, Component.GPU_FRACTIONING):
            installs.append(_chart_install(rendered, component))
    installs.extend(
        config_install(config.props, config.urn, f"Config {config.name!r}")
        for config in resources
        if config.resource_type == KAI_CONFIG and not is_chart_child(config)
    )
    return installs


def fractioning_operator(resource_type: str, props: Mapping[str, Any], urn: str, owner: str) -> ForkInstall | None:
    """A workload passing the node agents' images on as <AGENT>_IMAGE_* variables: gpu-fractioning's
    operator, which is always the fork, so its tags are judged on it before it is created."""
    if not is_built_in_workload(resource_type):
        return None
    images = _as_operator(tuple(_workload_images(resource_type, props, urn, owner)))
    return None if images is None else ForkInstall(Component.GPU_FRACTIONING, urn, owner, True, images)


def _as_operator(images: tuple[DeployedImage, ...]) -> tuple[DeployedImage, ...] | None:
    """A workload's images as gpu-fractioning's operator's, judged alone; None for any other workload."""
    agents = {f"{agent.upper()}{IMAGE_ENV_SUFFIXES[0]}" for agent in NODE_AGENT_IMAGES if agent != "operator"}
    if not any(image.repository_key.split(" ", 1)[0] in agents for image in images):
        return None
    return tuple(replace(image, judged_alone=True) for image in images)


def config_install(props: Mapping[str, Any], urn: str, owner: str) -> ForkInstall:
    """A kai-config Config: the fork when its mode is NvFractions, and the images it names."""
    return ForkInstall(
        Component.KAI_SCHEDULER, urn, owner, _config_mode(props), tuple(_config_images(props, urn, owner))
    )
