"""How the pack recognises the Helm installs of KAI, gpu-fractioning and the GPU Operator, and reads their values.

A v3 Release is recognised by its chart (the reference's last path segment, or a local chart's
Chart.yaml `name`), never by its release name, and its values are read merged over a local chart's
values.yaml. The engine hands a v4 Chart's inputs as `{}` (a remote component), so a v4 Chart is
recognised, and judged, by the objects it renders: its children in the stack; so is the SDK-side v3
Chart, a component whose rendered objects the program registers as its children.

During preview the kubernetes provider drops every unknown value from a Release's checked inputs
(and then skips loading the chart, so `version` stays as given, usually empty): a key missing from
such a Release may be one whose value is not known yet, and reads as UNKNOWN.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pulumi_policy import PolicyResource

from .facts import (
    CLUSTER_POLICY,
    GPU_FRACTIONING_CHART,
    GPU_FRACTIONING_CHART_DIRECTORY,
    GPU_FRACTIONING_CONFIG,
    GPU_FRACTIONING_CRDS,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_CRDS,
    KAI_CHART,
    KAI_CONFIG,
    KAI_CRDS,
)
from .props import UNKNOWN, NotApplicable, Unknown, peek

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
# The SDK-side Chart (pulumi_kubernetes.helm.v3.Chart): a component the program renders with `helm
# template` and registers each object of as its child, with {} as its own inputs, like a v4 Chart.
SDK_HELM_CHART = "kubernetes:helm.sh/v3:Chart"
CHART_TYPES = frozenset({HELM_CHART, SDK_HELM_CHART})
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


class Component(Enum):
    KAI_SCHEDULER = KAI_CHART
    GPU_FRACTIONING = GPU_FRACTIONING_CHART
    GPU_OPERATOR = GPU_OPERATOR_CHART


CHART_COMPONENTS = {
    KAI_CHART: Component.KAI_SCHEDULER,
    GPU_FRACTIONING_CHART: Component.GPU_FRACTIONING,
    GPU_OPERATOR_CHART: Component.GPU_OPERATOR,
}
CRD_COMPONENTS = {
    **dict.fromkeys(KAI_CRDS, Component.KAI_SCHEDULER),
    **dict.fromkeys(GPU_FRACTIONING_CRDS, Component.GPU_FRACTIONING),
    **dict.fromkeys(GPU_OPERATOR_CRDS, Component.GPU_OPERATOR),
}
OBJECT_COMPONENTS = {
    KAI_CONFIG: Component.KAI_SCHEDULER,
    GPU_FRACTIONING_CONFIG: Component.GPU_FRACTIONING,
    CLUSTER_POLICY: Component.GPU_OPERATOR,
}


@dataclass(frozen=True)
class LocalChart:
    name: str | None
    version: str | None
    values: Mapping[str, Any]


@functools.cache
def _read_local_chart(directory: str) -> LocalChart | None:
    root = Path(directory)
    try:
        chart = yaml.safe_load((root / "Chart.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return None
    try:
        values = yaml.safe_load((root / "values.yaml").read_text())
    except (OSError, yaml.YAMLError):
        values = None
    chart = chart if isinstance(chart, dict) else {}
    name, version = chart.get("name"), chart.get("version")
    return LocalChart(
        name=name if isinstance(name, str) else None,
        version=str(version) if version is not None else None,
        values=values if isinstance(values, dict) else {},
    )


def local_chart(chart: str) -> LocalChart | None:
    """The chart directory a Release names, read from disk (relative to the program, where the engine
    runs the pack), or None for a remote chart or a directory this machine does not have."""
    if "://" in chart:
        return None
    return _read_local_chart(str(Path(chart).resolve()))


def _chart_reference(props: Mapping[str, Any]) -> str | None:
    chart = peek(props, "chart")
    return chart.strip().rstrip("/") if isinstance(chart, str) and chart.strip() else None


def identify_release(resource_type: str, props: Mapping[str, Any]) -> Component | None:
    """Which component a v3 Release installs, by its chart; an unknown or unrelated chart is None."""
    if resource_type != HELM_RELEASE:
        return None
    chart = _chart_reference(props)
    if chart is None:
        return None
    local = local_chart(chart)
    if local is not None and local.name:
        return CHART_COMPONENTS.get(local.name)
    if chart.endswith(GPU_FRACTIONING_CHART_DIRECTORY):
        return Component.GPU_FRACTIONING
    return CHART_COMPONENTS.get(chart.rsplit("/", 1)[-1])


def _lookup(values: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(values, Mapping):
            return None
        values = values.get(key)
    return values


@dataclass(frozen=True)
class Release:
    """A recognised v3 Release: its values as Helm merges them over the local chart's defaults."""

    urn: str
    label: str
    component: Component
    props: Mapping[str, Any]
    defaults: Mapping[str, Any]
    chart_version: str | None
    # The provider may have dropped unknown values (see the module docstring).
    maybe_stripped: bool

    def user_value(self, key: str) -> Any:
        """What the program sets for a dotted Helm key: a value, None, or UNKNOWN."""
        found = peek(self.props, "values", *key.split("."))
        if found is None and self.maybe_stripped:
            return UNKNOWN
        return found

    def value(self, key: str) -> Any:
        found = self.user_value(key)
        return _lookup(self.defaults, key.split(".")) if found is None else found

    def is_default(self, key: str) -> bool:
        return self.user_value(key) is None and _lookup(self.defaults, key.split(".")) is not None

    def keys(self, key: str) -> frozenset[str]:
        """The keys Helm sees under a dotted key, the chart's defaults included."""
        found = peek(self.props, "values", *key.split(".")) if key else peek(self.props, "values")
        user = frozenset(found) if isinstance(found, Mapping) else frozenset()
        default = _lookup(self.defaults, key.split(".")) if key else self.defaults
        return user | (frozenset(default) if isinstance(default, Mapping) else frozenset())

    def describe(self, key: str) -> str:
        return f"{key} of release {self.label!r}"


def _release(resource_type: str, props: Mapping[str, Any], urn: str, name: str, stripped: bool) -> Release | None:
    component = identify_release(resource_type, props)
    if component is None:
        return None
    chart = _chart_reference(props)
    local = local_chart(chart) if chart else None
    release_name = peek(props, "name")
    return Release(
        urn=urn,
        label=release_name if isinstance(release_name, str) and release_name else name,
        component=component,
        props=props,
        defaults=local.values if local else {},
        chart_version=local.version if local else None,
        maybe_stripped=stripped,
    )


def _version_left_empty(props: Mapping[str, Any]) -> bool:
    # With every input known the provider sets `version` to the version of the chart it loaded.
    return peek(props, "version") in (None, "")


def release_from_inputs(resource_type: str, props: Mapping[str, Any], urn: str, name: str) -> Release | None:
    """A Release as a resource policy sees it: its checked inputs."""
    return _release(resource_type, props, urn, name, _version_left_empty(props))


def release_from_stack(resource: PolicyResource) -> Release | None:
    """A Release as a stack policy sees it: its outputs, whose `status` is unknown only during preview."""
    props = resource.props
    preview = isinstance(peek(props, "status"), Unknown)
    fed = bool(resource.property_dependencies.get("values"))
    return _release(
        resource.resource_type, props, resource.urn, resource.name, preview and (fed or _version_left_empty(props))
    )


def releases(resources: Sequence[PolicyResource]) -> list[Release]:
    found = (release_from_stack(resource) for resource in resources)
    return [release for release in found if release is not None]


@dataclass(frozen=True)
class RenderedChart:
    """A v4 Chart and the objects it renders, recognised by the CRDs and custom objects among them."""

    chart: PolicyResource
    children: tuple[PolicyResource, ...]
    components: frozenset[Component]

    @property
    def label(self) -> str:
        return self.chart.name

    def of_type(self, resource_type: str) -> list[PolicyResource]:
        return [child for child in self.children if child.resource_type == resource_type]


def _component_of(resource: PolicyResource) -> Component | None:
    if resource.resource_type == CRD:
        name = peek(resource.props, "metadata", "name")
        return CRD_COMPONENTS.get(name) if isinstance(name, str) else None
    return OBJECT_COMPONENTS.get(resource.resource_type)


def _chart_ancestor(resource: PolicyResource) -> PolicyResource | None:
    parent = resource.parent
    while parent is not None:
        if parent.resource_type in CHART_TYPES:
            return parent
        parent = parent.parent
    return None


def rendered_charts(resources: Sequence[PolicyResource]) -> list[RenderedChart]:
    children: dict[str, list[PolicyResource]] = {}
    charts: dict[str, PolicyResource] = {}
    for resource in resources:
        if resource.resource_type in CHART_TYPES:
            charts.setdefault(resource.urn, resource)
            children.setdefault(resource.urn, [])
        elif (chart := _chart_ancestor(resource)) is not None:
            charts.setdefault(chart.urn, chart)
            children.setdefault(chart.urn, []).append(resource)
    return [
        RenderedChart(
            chart=charts[urn],
            children=tuple(found),
            components=frozenset(c for c in map(_component_of, found) if c is not None),
        )
        for urn, found in children.items()
    ]


def unrendered_charts(resources: Sequence[PolicyResource]) -> NotApplicable | None:
    """Why chart resources that rendered nothing cannot be judged yet: the kubernetes provider renders a
    v4 Chart only once all its inputs are known, and registers it alone during such a preview
    (pulumi-kubernetes v4.25.0 provider/pkg/provider/helm/v4/chart.go, "Preview is incomplete")."""
    empty = sorted(rendered.label for rendered in rendered_charts(resources) if not rendered.children)
    if not empty:
        return None
    return NotApplicable(
        f"Not checked during preview: chart {', '.join(repr(name) for name in empty)} rendered nothing, as a v4 "
        "Chart does while one of its inputs is unknown; `up` checks what it renders once the update has created "
        "it, so make its values known at preview (or install it with a helm.sh/v3 Release) to have it checked "
        "before."
    )


def chart_of(rendered: RenderedChart) -> Component | None:
    """The component a rendered chart installs; KAI's chart with the gpu-fractioning subchart is KAI."""
    for component in (Component.KAI_SCHEDULER, Component.GPU_FRACTIONING, Component.GPU_OPERATOR):
        if component in rendered.components:
            return component
    return None


def is_chart_child(resource: PolicyResource) -> bool:
    return _chart_ancestor(resource) is not None
