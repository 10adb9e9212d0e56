"""The shared case table of tests/fixtures/guide-rules: one list of cases that both enforcers of the
guide's rules (the policy pack and the ValidatingAdmissionPolicy) run, each with the verdict it expects.

    from tests.guide_rules import cases
    for case in cases("admission"):
        ...  # create case.namespace if any, dry-run create case.manifest, expect case.expect / case.token

The project's own smoke pod and lab pods are added here from the program's manifests, so the table
cannot drift from what the program deploys.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import yaml

from components.config.model import GPU_PROFILES, SmokeTestConfig
from components.lab.lab_pods import shared_pod_manifest, whole_gpu_pod_manifest
from components.proofs.smoke import smoke_pod_manifest

Enforcer = Literal["pack", "admission"]
ENFORCERS: tuple[Enforcer, ...] = get_args(Enforcer)
Rule = Literal[
    "runtime-class",
    "non-root",
    "privilege",
    "host-namespaces",
    "mps-pipe",
    "valid-fraction",
    "exemption",
    "scheduling",
    "gpu-runtime-class",
    "release-values",
    "fork-images",
    "versions",
    "driver-upgrades",
    "compliant",
]
RULES: tuple[str, ...] = get_args(Rule)
# The rules both enforcers hold; the others are the pack's own.
SHARED_RULES = (
    "runtime-class",
    "non-root",
    "privilege",
    "host-namespaces",
    "mps-pipe",
    "valid-fraction",
    "exemption",
    "gpu-runtime-class",
)
TABLE = Path(__file__).parent / "fixtures" / "guide-rules"


@dataclass(frozen=True)
class Namespace:
    """A namespace a case needs: the admission tier creates it, the pack tier declares it in the stack."""

    name: str
    labels: Mapping[str, str]


@dataclass(frozen=True)
class PulumiResource:
    """One resource as a Pulumi program registers it (pack only); its URN name is `<case>-<name>`."""

    type: str
    name: str
    props: Mapping[str, Any]
    # Fields, as key paths, whose value comes from another resource's output: unknown during preview.
    unknown: tuple[tuple[str, ...], ...] = ()
    # What a v4 Chart renders, for tiers without an engine to render it.
    children: tuple[PulumiResource, ...] = ()


@dataclass(frozen=True)
class PulumiCase:
    """How the pack tiers register a case; without `resources`, the case's manifest is the one resource."""

    resources: tuple[PulumiResource, ...]
    # Fields of the manifest whose value comes from another resource's output.
    manifest_unknown: tuple[tuple[str, ...], ...]
    provider_namespace: str | None
    target: str | None
    up_expect: Literal["deny", "allow"] | None
    up_token: str | None
    # A resource policy refuses the target at `up` before it is created (a stack policy only after).
    up_before_creation: bool
    isolated: bool
    # The engine tier previews the cases of one named stack together (None: pods together, others alone).
    stack: str | None = None


@dataclass(frozen=True)
class GuideCase:
    case: str
    rule: str
    expect: Literal["deny", "allow"]
    # A substring every enforcer's refusal must contain (deny cases only).
    token: str | None
    enforcers: tuple[Enforcer, ...]
    # For each enforcer left out, why it cannot run the case.
    blind: Mapping[str, str]
    namespace: Namespace | None
    # A real Kubernetes object, for every case an admission tier can run.
    manifest: dict[str, Any] | None
    pulumi: PulumiCase | None = None
    source: str = field(default="", compare=False)


def _resource(raw: Mapping[str, Any]) -> PulumiResource:
    return PulumiResource(
        type=raw["type"],
        name=raw["name"],
        props=raw.get("props") or {},
        unknown=tuple(tuple(path) for path in raw.get("unknown") or ()),
        children=tuple(_resource(child) for child in raw.get("children") or ()),
    )


def _pulumi(raw: Mapping[str, Any] | None, manifest: dict[str, Any] | None) -> PulumiCase | None:
    if raw is None:
        return None
    resources = tuple(_resource(resource) for resource in raw.get("resources") or ())
    if not resources and manifest is None:
        raise ValueError("a pulumi case needs resources or a manifest")
    if resources and raw.get("unknown"):
        raise ValueError("`unknown` at the case level is for its manifest; put it on a resource")
    up = raw.get("up") or {}
    return PulumiCase(
        resources=resources,
        manifest_unknown=tuple(tuple(path) for path in raw.get("unknown") or ()),
        provider_namespace=(raw.get("provider") or {}).get("namespace"),
        target=raw.get("target"),
        up_expect=up.get("expect"),
        up_token=up.get("token"),
        up_before_creation=bool(up.get("before_creation")),
        isolated=bool(raw.get("isolated")),
        stack=raw.get("stack"),
    )


def _case(raw: Mapping[str, Any], source: str) -> GuideCase:
    raw = copy.deepcopy(dict(raw))  # YAML anchors share objects between cases
    namespace = raw.get("namespace")
    manifest = raw.get("manifest")
    return GuideCase(
        case=raw["case"],
        rule=raw["rule"],
        expect=raw["expect"],
        token=raw.get("token"),
        enforcers=tuple(raw.get("enforcers") or ENFORCERS),
        blind=raw.get("blind") or {},
        namespace=Namespace(namespace["name"], namespace.get("labels") or {}) if namespace else None,
        manifest=manifest,
        pulumi=_pulumi(raw.get("pulumi"), manifest),
        source=source,
    )


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _project_pod(case: str, manifest: dict[str, Any]) -> GuideCase:
    """A pod this program deploys, as a compliant case: no namespace, as the admission tier sets its own."""
    metadata = {key: value for key, value in manifest["metadata"].items() if key != "namespace"}
    pod = _without_nulls({"apiVersion": "v1", "kind": "Pod", **manifest, "metadata": metadata})
    return GuideCase(case, "compliant", "allow", None, ENFORCERS, {}, None, pod, None, "components")


def project_pods() -> list[GuideCase]:
    return [
        _project_pod("compliant-smoke-pod", smoke_pod_manifest("fraction-smoke-a", SmokeTestConfig())),
        _project_pod("compliant-lab-shared-pod", shared_pod_manifest(GPU_PROFILES["a100"])),
        _project_pod("compliant-lab-whole-gpu-pod", whole_gpu_pod_manifest(await_ready=True)),
    ]


def all_cases() -> list[GuideCase]:
    """Every case of the table, in file order, then the project's own pods."""
    found: list[GuideCase] = []
    for path in sorted(TABLE.glob("*.yaml")):
        # libyaml's parser: the table is large and every pytest worker reads it while collecting.
        document = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        found.extend(_case(raw, path.name) for raw in document["cases"])
    return [*found, *project_pods()]


def cases(enforcer: Enforcer) -> list[GuideCase]:
    """The cases `enforcer` runs."""
    if enforcer not in ENFORCERS:
        raise ValueError(f"enforcer must be one of {ENFORCERS}, not {enforcer!r}")
    return [case for case in all_cases() if enforcer in case.enforcers]
