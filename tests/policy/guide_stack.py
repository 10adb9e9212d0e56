"""The pack's view of a shared-table case: the stack a case registers, as the engine hands it to the pack.

What the engine does to the inputs is what the engine tier (tests/integration/test_guide_rules.py)
observes. The kubernetes provider's Check fills a namespaced object's metadata.namespace from the
provider's default namespace (or `default`), also in place of a namespace unknown during preview.
Any other unknown value of a Kubernetes object reaches the pack as the SDK's unknown sentinel, while
a Release loses every unknown value from its checked inputs and keeps `version` as given (with
every input known, Check sets it to the loaded chart's version). A stack policy sees outputs, where
a Release's `status` is unknown until the update ran, and the dependencies of each property. A v4
Chart's own inputs reach the pack as {}; what it renders are its children, none during a preview in
which one of its inputs is unknown.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.guide_rules import GuideCase, PulumiResource

Phase = Literal["preview", "up"]
# Spelled out rather than imported, so the same tier can judge another revision of the pack.
NAMESPACE = "kubernetes:core/v1:Namespace"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
# pulumi_kubernetes.helm.v3.Chart: rendered by the program, its objects registered as its children.
SDK_HELM_CHART = "kubernetes:helm.sh/v3:Chart"
CHARTS = {HELM_CHART, SDK_HELM_CHART}
STACK_WIDE = {HELM_RELEASE, *CHARTS}
CLUSTER_SCOPED = {NAMESPACE, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"}


def _chart_version(chart: str) -> str | None:
    try:
        found = yaml.safe_load((Path(chart) / "Chart.yaml").read_text())
    except OSError:
        return None
    return str(found["version"]) if isinstance(found, dict) and "version" in found else None


def type_of(manifest: Mapping[str, Any]) -> str:
    """The Pulumi type token of a Kubernetes object: a `v1` Pod is `kubernetes:core/v1:Pod`."""
    api_version = manifest["apiVersion"]
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{manifest['kind']}"


@dataclass(frozen=True)
class StackResource:
    type: str
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    parent: str | None = None
    # The properties fed from another resource's outputs, with that resource's name (None: not in the
    # stack): the engine records each property's dependencies.
    depends: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class CaseStack:
    resources: list[StackResource]
    target: str


def engine_stacks(cases: list[GuideCase]) -> list[tuple[str, list[GuideCase]]]:
    """How the engine tier groups cases into as few stacks as their verdicts allow: pods and workloads
    alone judge each resource by itself, so they share one stack; a case whose verdict depends on what
    else the stack holds (releases, charts, builds) shares only a stack its table names, or has its own."""
    groups: dict[str, list[GuideCase]] = {"pods": []}
    alone: list[tuple[str, list[GuideCase]]] = []
    for case in cases:
        pulumi = case.pulumi
        if pulumi is not None and pulumi.stack:
            groups.setdefault(pulumi.stack, []).append(case)
        elif (pulumi is not None and pulumi.isolated) or any(
            r.type in STACK_WIDE or r.type.startswith("command:") for r in resources_of(case)
        ):
            alone.append((case.case, [case]))
        else:
            groups["pods"].append(case)
    return [(name, members) for name, members in groups.items() if members] + alone


def resources_of(case: GuideCase) -> list[PulumiResource]:
    """What a case registers besides its namespace: its `pulumi.resources`, or its manifest as `<case>`."""
    pulumi = case.pulumi
    if pulumi is not None and pulumi.resources:
        return list(pulumi.resources)
    assert case.manifest is not None, f"{case.case} has neither resources nor a manifest"
    unknown = pulumi.manifest_unknown if pulumi is not None else ()
    return [PulumiResource(type_of(case.manifest), "", case.manifest, unknown)]


def resource_name(case: GuideCase, resource: PulumiResource) -> str:
    return f"{case.case}-{resource.name}" if resource.name else case.case


def target_name(case: GuideCase) -> str:
    pulumi = case.pulumi
    if pulumi is not None and pulumi.target:
        return f"{case.case}-{pulumi.target}"
    return resource_name(case, resources_of(case)[0])


def _pop(props: dict[str, Any], path: tuple[str, ...]) -> None:
    for key in path[:-1]:
        props = props[key]
    props.pop(path[-1], None)


def _set(props: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        props = props[key]
    props[path[-1]] = value


def _release(resource: PulumiResource, phase: Phase, namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    inputs = copy.deepcopy(dict(resource.props))
    inputs.setdefault("namespace", namespace)
    stripped = phase == "preview" and bool(resource.unknown)
    for path in resource.unknown if stripped else ():
        _pop(inputs, path)
    if not stripped:
        inputs["version"] = _chart_version(inputs["chart"]) or inputs.get("version", "")
    inputs.setdefault("version", "")
    status: Any = UNKNOWN_STRING_VALUE if phase == "preview" else {"status": "deployed"}
    return inputs, {**copy.deepcopy(inputs), "status": status}


def _object(resource: PulumiResource, phase: Phase, namespace: str, provider_namespace: str) -> dict[str, Any]:
    props = copy.deepcopy(dict(resource.props))
    if resource.type.startswith("kubernetes:") and resource.type not in CLUSTER_SCOPED:
        props.setdefault("metadata", {}).setdefault("namespace", namespace)
    for path in resource.unknown if phase == "preview" else ():
        # A provider with a default namespace puts it in place of an unknown one.
        unknown = provider_namespace if path == ("metadata", "namespace") else UNKNOWN_STRING_VALUE
        _set(props, path, unknown)
    return props


def unknown_source(case: GuideCase, path: tuple[str, ...]) -> str | None:
    """The resource an unknown value comes from: a namespace the case declares gives its own name (as
    `namespace=ns.id`), anything else comes from a resource of no interest to the pack."""
    if path == ("metadata", "namespace") and case.namespace is not None:
        return f"{case.case}-namespace"
    return None


def case_stack(case: GuideCase, phase: Phase = "preview") -> CaseStack:
    """The resources a case registers, named as the engine tier names them: `<case>-<name>`, a manifest
    alone as `<case>`, a chart's rendered object as `<case>-<chart>:<object>`."""
    provider_namespace = (case.pulumi.provider_namespace if case.pulumi else None) or "default"
    # The admission tier creates a case's objects in its namespace; so does the pack's engine tier.
    namespace = case.namespace.name if case.namespace else provider_namespace
    found: list[StackResource] = []
    if case.namespace is not None:
        metadata = {"name": case.namespace.name, "labels": dict(case.namespace.labels)}
        props = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
        found.append(StackResource(NAMESPACE, f"{case.case}-namespace", props, props))
    for resource in resources_of(case):
        name = resource_name(case, resource)
        if resource.type == HELM_RELEASE:
            inputs, outputs = _release(resource, phase, namespace)
            depends: tuple[tuple[str, str | None], ...] = (("values", None),) if resource.unknown else ()
            found.append(StackResource(resource.type, name, inputs, outputs, depends=depends))
        elif resource.type in CHARTS:
            found.append(StackResource(resource.type, name, {}, {}))
            # The provider renders a v4 Chart only once every input is known; during a preview with one
            # unknown it registers the component alone ("Preview is incomplete", helm/v4/chart.go).
            rendered = not (resource.type == HELM_CHART and resource.unknown and phase == "preview")
            for child in resource.children if rendered else ():
                props = _object(child, phase, namespace, provider_namespace)
                found.append(StackResource(child.type, f"{name}:{child.name}", props, props, parent=name))
        else:
            props = _object(resource, phase, namespace, provider_namespace)
            depends = tuple(sorted({(path[0], unknown_source(case, path)) for path in resource.unknown}, key=str))
            found.append(StackResource(resource.type, name, props, props, depends=depends))
    return CaseStack(found, target_name(case))
