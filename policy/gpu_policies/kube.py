"""How the pack finds the pods a resource creates and the namespaces a stack exempts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from .facts import (
    CONTAINER_MEMORY_MARKER,
    DEFAULT_NAMESPACE,
    FRACTION_ANNOTATIONS,
    SYSTEM_NAMESPACE_LABEL,
    SYSTEM_NAMESPACE_VALUE,
)
from .props import UNKNOWN, Unknown, peek

POD = "kubernetes:core/v1:Pod"
NAMESPACE = "kubernetes:core/v1:Namespace"
PATCH_SUFFIX = "Patch"

# Where each built-in kind keeps the pod it creates (() is the resource itself), by `group/version:Kind`.
BUILT_IN_POD_PATHS: Mapping[str, tuple[str, ...]] = {
    "core/v1:Pod": (),
    "core/v1:PodTemplate": ("template",),
    "core/v1:ReplicationController": ("spec", "template"),
    "apps/v1:Deployment": ("spec", "template"),
    "apps/v1:StatefulSet": ("spec", "template"),
    "apps/v1:DaemonSet": ("spec", "template"),
    "apps/v1:ReplicaSet": ("spec", "template"),
    "batch/v1:Job": ("spec", "template"),
    "batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
}
# Any other Kubernetes resource, a custom resource of an operator included (a Kubeflow PyTorchJob's
# spec.pytorchReplicaSpecs.<role>.template, a RayCluster's spec.workerGroupSpecs[i].template, a JobSet's
# spec.replicatedJobs[i].template.spec.template), is searched for pod templates wherever they sit: any
# mapping below the resource's root whose `spec.containers` is a list. A mapping whose own `containers`
# is a list is a bare pod spec (KServe's spec.predictor, Dynamo's spec.services.<name>.extraPodSpec): its
# operator puts the nearest annotations around it on the pods (its own `metadata.annotations` or
# `annotations`, a parent's, up to the resource's own metadata.annotations). Component resources that install
# charts or files hold values, not objects: their rendered children are resources of their own.
NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml", "kubernetes:kustomize/")
# How deep the search looks; a real object nests its pod templates a few levels down.
MAX_TEMPLATE_DEPTH = 32
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class Container:
    name: str
    security_context: Any  # a mapping, or UNKNOWN
    resource_names: frozenset[str] | Unknown  # the keys of its limits and requests


@dataclass(frozen=True)
class PodView:
    """The pod a resource creates: itself, or the template of a workload, with paths for messages.

    `partial` marks a Patch resource: a field it leaves out keeps whatever the cluster has, which the
    pack cannot see, so only what the patch sets can be judged.
    """

    # Where the pod's spec and its metadata sit, as a message names a field: `spec.template.spec.`.
    spec_path: str
    metadata_path: str
    namespace: str | Unknown
    annotations: Mapping[str, Any] | Unknown
    label_keys: frozenset[str]
    spec: Mapping[str, Any]
    containers: tuple[Container, ...] | Unknown
    partial: bool

    def field(self, name: str) -> str:
        return f"{self.spec_path}{name}"

    def metadata_field(self, name: str) -> str:
        return f"{self.metadata_path}{name}"

    def value(self, *path: str) -> Any:
        """A field of the pod spec: its value, None when absent, or UNKNOWN."""
        return peek(self.spec, *path)

    @property
    def fraction_markers(self) -> frozenset[str] | Unknown:
        """The annotation keys that ask for a GPU fraction; keys are known even when values are not."""
        if isinstance(self.annotations, Unknown):
            return UNKNOWN
        return frozenset(
            key for key in self.annotations if key in FRACTION_ANNOTATIONS or CONTAINER_MEMORY_MARKER.fullmatch(key)
        )

    @property
    def is_fractional(self) -> bool | Unknown:
        markers = self.fraction_markers
        return markers if isinstance(markers, Unknown) else bool(markers)

    def annotation(self, key: str) -> Any:
        return UNKNOWN if isinstance(self.annotations, Unknown) else peek(self.annotations, key)

    def known_containers(self) -> tuple[Container, ...]:
        return () if isinstance(self.containers, Unknown) else self.containers


def _kind(resource_type: str) -> tuple[str, bool]:
    """`kubernetes:apps/v1:DeploymentPatch` as (`apps/v1:Deployment`, True)."""
    kind = resource_type.removeprefix("kubernetes:")
    if kind.endswith(PATCH_SUFFIX):
        return kind.removesuffix(PATCH_SUFFIX), True
    return kind, False


def is_built_in_workload(resource_type: str) -> bool:
    """A Pod or a built-in kind with a pod template (a Patch of one included)."""
    return resource_type.startswith("kubernetes:") and _kind(resource_type)[0] in BUILT_IN_POD_PATHS


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


Step = str | int
Path = tuple[Step, ...]


def _at(props: Any, path: Path) -> Any:
    """The value at `path` (keys of mappings, indexes of lists): None once a step is missing, UNKNOWN
    once a value on the way is unknown during preview."""
    node = props
    for step in path:
        if isinstance(step, int):
            if not is_list(node) or step >= len(node):
                return None
            try:
                node = node[step]
            except UnknownValueError:
                return UNKNOWN
            if isinstance(node, str) and peek({"value": node}, "value") is UNKNOWN:
                return UNKNOWN
        else:
            node = peek(node, step)
        if isinstance(node, Unknown):
            return UNKNOWN
    return node


def _is_template(node: Any) -> bool:
    return isinstance(node, Mapping) and is_list(peek(node, "spec", "containers"))


def _is_bare_spec(node: Any) -> bool:
    return isinstance(node, Mapping) and is_list(peek(node, "containers"))


@dataclass(frozen=True)
class Found:
    """Where a pod sits in a resource: a template (`metadata` and `spec`) or a bare pod spec."""

    path: Path
    bare: bool = False


def _templates_within(props: Mapping[str, Any]) -> list[Found]:
    """Every pod template and bare pod spec below the root of a resource, depth first, not looking
    inside one."""
    found: list[Found] = []

    def walk(node: Any, path: Path) -> None:
        if len(path) > MAX_TEMPLATE_DEPTH:
            return
        template = _is_template(node)
        if path and (template or _is_bare_spec(node)):
            found.append(Found(path, bare=not template))
            return
        if isinstance(node, Mapping):
            for key in list(node):
                if not path and key in ("metadata", "status"):
                    continue
                walk(_at(node, (key,)), (*path, key))
        elif is_list(node):
            for index in range(len(node)):
                walk(_at(node, (index,)), (*path, index))

    walk(props, ())
    return found


def _template_paths(resource_type: str, props: Mapping[str, Any]) -> tuple[list[Found], bool]:
    if not resource_type.startswith("kubernetes:") or resource_type.startswith(NOT_OBJECTS):
        return [], False
    kind, patch = _kind(resource_type)
    if kind in BUILT_IN_POD_PATHS:
        return [Found(BUILT_IN_POD_PATHS[kind])], patch
    return _templates_within(props), patch


def _prefix(path: Path) -> str:
    """`spec.workerGroupSpecs[0].template.` for a path, as a message names a field."""
    text = ""
    for step in path:
        text = f"{text[:-1]}[{step}]." if isinstance(step, int) else f"{text}{step}."
    return text


def _containers(spec: Mapping[str, Any]) -> tuple[Container, ...] | Unknown:
    found = []
    for kind in CONTAINER_LISTS:
        listed = peek(spec, kind)
        if isinstance(listed, Unknown):
            return UNKNOWN
        for index, container in enumerate(listed if is_list(listed) else ()):
            if not isinstance(container, Mapping):
                return UNKNOWN
            name = peek(container, "name")
            found.append(
                Container(
                    name=name if isinstance(name, str) else f"{kind}[{index}]",
                    security_context=peek(container, "securityContext") or {},
                    resource_names=_resource_names(container),
                )
            )
    return tuple(found)


def _resource_names(container: Mapping[str, Any]) -> frozenset[str] | Unknown:
    names: set[str] = set()
    for kind in ("limits", "requests"):
        listed = peek(container, "resources", kind)
        if isinstance(listed, Unknown):
            return UNKNOWN
        if isinstance(listed, Mapping):
            names.update(listed)
    return frozenset(names)


def _label_keys(props: Mapping[str, Any], path: Path, bare: bool) -> frozenset[str]:
    # KAI's pod-grouper reads the queue label from the top owner first, so every level counts; around
    # a bare pod spec, labels may sit beside it as annotations do.
    found: set[str] = set()
    for depth in range(len(path) + 1):
        places = [(*path[:depth], "metadata", "labels")]
        if bare:
            places.append((*path[:depth], "labels"))
        for where in places:
            labels = _at(props, where)
            if isinstance(labels, Mapping):
                found.update(labels)
    return frozenset(found)


def _nearest_annotations(props: Mapping[str, Any], path: Path) -> tuple[Any, Path]:
    """The annotations nearest a bare pod spec at `path`, and where they sit."""
    for depth in range(len(path), -1, -1):
        for where in ((*path[:depth], "metadata"), path[:depth]):
            annotations = _at(props, (*where, "annotations"))
            if annotations is not None:
                return annotations, where
    return None, ("metadata",)


def _pod_at(props: Mapping[str, Any], at: Found, partial: bool) -> PodView | None:
    path = at.path
    spec = _at(props, path if at.bare else (*path, "spec"))
    if not isinstance(spec, Mapping) or (not spec and not partial):
        if not partial:
            return None
        spec = {}
    if at.bare:
        annotations, metadata = _nearest_annotations(props, path)
        spec_path = _prefix(path)
    else:
        annotations, metadata = _at(props, (*path, "metadata", "annotations")), (*path, "metadata")
        spec_path = _prefix((*path, "spec"))
    namespace = peek(props, "metadata", "namespace")
    return PodView(
        spec_path=spec_path,
        metadata_path=_prefix(metadata),
        namespace=namespace if isinstance(namespace, (str, Unknown)) and namespace else DEFAULT_NAMESPACE,
        annotations=annotations if isinstance(annotations, (Mapping, Unknown)) else {},
        label_keys=_label_keys(props, path, at.bare),
        spec=spec,
        containers=_containers(spec),
        partial=partial,
    )


def pod_views(resource_type: str, props: Mapping[str, Any]) -> list[PodView]:
    """The pods a resource creates: a Pod itself, the template of a built-in workload, or every pod
    template and bare pod spec a custom resource embeds; none for anything else.

    A workload's own metadata.annotations never reach its pods, so only the template's count.
    """
    places, partial = _template_paths(resource_type, props)
    found = (_pod_at(props, place, partial) for place in places)
    return [pod for pod in found if pod is not None]


def pod_view(resource_type: str, props: Mapping[str, Any]) -> PodView | None:
    """The first pod a resource creates (see pod_views), or None."""
    found = pod_views(resource_type, props)
    return found[0] if found else None


@dataclass(frozen=True)
class Exemptions:
    """The namespaces a stack declares as homes of its system daemons: a Namespace resource of this
    stack labelled `kai-gpu-fractions/system-namespace: "true"`. A name is never enough."""

    names: frozenset[str]
    # Declared namespaces whose name or label is unknown during preview: any pod might be in one.
    unknown: bool
    maybe: frozenset[str]

    @classmethod
    def of(cls, resources: Sequence[PolicyResource]) -> Exemptions:
        names: set[str] = set()
        maybe: set[str] = set()
        unknown = False
        for resource in resources:
            if resource.resource_type != NAMESPACE:
                continue
            name = peek(resource.props, "metadata", "name")
            label = peek(resource.props, "metadata", "labels", SYSTEM_NAMESPACE_LABEL)
            if label is None or (isinstance(label, str) and label != SYSTEM_NAMESPACE_VALUE):
                continue
            if not isinstance(name, str) or not name:
                unknown = True
            elif isinstance(label, Unknown):
                maybe.add(name)
            elif label == SYSTEM_NAMESPACE_VALUE:
                names.add(name)
        return cls(frozenset(names), unknown, frozenset(maybe))

    def is_empty(self) -> bool:
        return not (self.names or self.maybe or self.unknown)

    def exempts(self, namespace: str | Unknown) -> bool | Unknown:
        if isinstance(namespace, str) and namespace in self.names:
            return True
        if isinstance(namespace, Unknown):
            return False if self.is_empty() else UNKNOWN
        return UNKNOWN if namespace in self.maybe or self.unknown else False
