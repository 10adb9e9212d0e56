"""How the pack recognises GPU pods, pod templates, Helm releases and images by type and inputs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .props import Knob, dig, elements, keys, mapping, peek

POD = "kubernetes:core/v1:Pod"

# Where each workload keeps the pod it creates; () is the resource itself.
POD_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    POD: (),
    "kubernetes:apps/v1:Deployment": ("spec", "template"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template"),
    "kubernetes:batch/v1:Job": ("spec", "template"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
}

GPU_RESOURCE = "nvidia.com/gpu"
FRACTION_ANNOTATION = "gpu-fraction"
MEMORY_ANNOTATION = "gpu-memory"
DEFAULT_NAMESPACE = "default"

EXEMPT_NAMESPACES: Knob[tuple[str, ...]] = Knob(
    key="exemptNamespaces",
    default=(
        "gpu-operator",
        "gpu-fractioning",
        "kai-scheduler",
        "kai-resource-reservation",
        "kai-resource-isolator",
        "kube-system",
    ),
    description="Namespaces of the privileged system daemons of the GPU Operator, gpu-fractioning and KAI.",
    schema={"type": "array", "items": {"type": "string"}},
)


@dataclass(frozen=True)
class Container:
    name: str
    security_context: Mapping[str, Any]
    requests_gpu: bool


@dataclass(frozen=True)
class PodView:
    """The pod a resource creates: itself, or the template of a workload, with paths for messages."""

    prefix: str
    namespace: str
    annotations: Mapping[str, Any]
    label_keys: frozenset[str]
    spec: Mapping[str, Any]
    containers: tuple[Container, ...]

    def field(self, name: str) -> str:
        return f"{self.prefix}spec.{name}"

    def metadata_field(self, name: str) -> str:
        return f"{self.prefix}metadata.{name}"

    @property
    def asks_for_fraction(self) -> bool:
        # Key membership only: the annotation's value may still be unknown during preview.
        return bool({FRACTION_ANNOTATION, MEMORY_ANNOTATION} & frozenset(self.annotations))

    @property
    def gpu_containers(self) -> list[str]:
        return [container.name for container in self.containers if container.requests_gpu]

    @property
    def gpu_request(self) -> str | None:
        """What the pod asks for, in words, or None when it asks for no GPU."""
        if self.asks_for_fraction:
            return "a GPU fraction"
        return GPU_RESOURCE if self.gpu_containers else None

    def is_exempt(self, config: Mapping[str, Any]) -> bool:
        return self.namespace in EXEMPT_NAMESPACES.read(config)


def _containers(spec: Mapping[str, Any]) -> tuple[Container, ...]:
    found = []
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(elements(spec, kind)):
            resources = keys(container, "resources", "limits") | keys(container, "resources", "requests")
            found.append(
                Container(
                    name=str(dig(container, "name") or f"{kind}[{index}]"),
                    security_context=mapping(container, "securityContext"),
                    requests_gpu=GPU_RESOURCE in resources,
                )
            )
    return tuple(found)


def pod_view(resource_type: str, props: Mapping[str, Any]) -> PodView | None:
    """The pod of a Pod or workload resource, or None for any other type or a missing template."""
    path = POD_TEMPLATE_PATHS.get(resource_type)
    if path is None:
        return None
    spec = mapping(props, *path, "spec")
    if not spec:
        return None
    # KAI's pod-grouper reads the queue label from the top owner first, so every level counts.
    label_keys = frozenset[str]().union(
        *(keys(props, *path[:depth], "metadata", "labels") for depth in range(len(path) + 1))
    )
    return PodView(
        prefix="".join(f"{step}." for step in path),
        namespace=dig(props, "metadata", "namespace") or DEFAULT_NAMESPACE,
        annotations=mapping(props, *path, "metadata", "annotations"),
        label_keys=label_keys,
        spec=spec,
        containers=_containers(spec),
    )


HELM_RELEASE_TYPES = frozenset({"kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart"})


class Component(Enum):
    KAI_SCHEDULER = "kai-scheduler"
    GPU_FRACTIONING = "gpu-fractioning"
    GPU_OPERATOR = "gpu-operator"


@dataclass(frozen=True)
class ReleaseMatcher:
    component: Component
    release_names: frozenset[str]
    chart_names: frozenset[str]
    chart_path_suffixes: tuple[str, ...] = ()

    def matches_chart(self, chart: str) -> bool:
        return chart.rsplit("/", 1)[-1] in self.chart_names or chart.endswith(self.chart_path_suffixes)


# A release is recognised by its chart (an OCI or repo chart name, or a local path), else by its name.
RELEASE_MATCHERS = (
    ReleaseMatcher(Component.KAI_SCHEDULER, frozenset({"kai-scheduler"}), frozenset({"kai-scheduler"})),
    ReleaseMatcher(
        Component.GPU_FRACTIONING,
        frozenset({"gpu-fractioning"}),
        frozenset({"gpu-fractioning"}),
        chart_path_suffixes=("operator/charts",),
    ),
    ReleaseMatcher(Component.GPU_OPERATOR, frozenset({"gpu-operator"}), frozenset({"gpu-operator"})),
)


def _known_text(value: Any) -> str:
    return value.strip().rstrip("/") if isinstance(value, str) else ""


def identify_release(resource_type: str, props: Mapping[str, Any]) -> Component | None:
    """Which component a Helm release installs; an unknown name or chart simply does not match."""
    if resource_type not in HELM_RELEASE_TYPES:
        return None
    chart, release_name = _known_text(peek(props, "chart")), _known_text(peek(props, "name"))
    by_chart = [matcher.component for matcher in RELEASE_MATCHERS if matcher.matches_chart(chart)]
    by_name = [matcher.component for matcher in RELEASE_MATCHERS if release_name in matcher.release_names]
    return next(iter(by_chart + by_name), None)


def release_value(props: Mapping[str, Any], key: str) -> Any:
    """A chart value by its dotted Helm key, such as `global.tag`."""
    return dig(props, "values", *key.split("."))


def release_label(props: Mapping[str, Any], fallback: str) -> str:
    return _known_text(peek(props, "name")) or fallback


def split_image_reference(reference: str) -> tuple[str, str | None]:
    """`registry/path/name:tag@digest` as (`registry/path/name`, `tag`); the tag is None when absent."""
    name = reference.split("@", 1)[0]
    repository, colon, tag = name.rpartition(":")
    if colon and "/" not in tag:
        return repository, tag
    return name, None


def registry_base(repository: str, depth: int) -> str:
    """The repository path without its last `depth` segments: the registry both forks push under."""
    return "/".join(repository.strip().rstrip("/").split("/")[:-depth])
