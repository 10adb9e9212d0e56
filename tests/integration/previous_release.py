"""A stack as the release before the provider plugin left it, made from today's state.

That release ran the gates, proofs, rollout and destroy-time waits as Python dynamic resources: type
`pulumi-python:dynamic/kai-gpu-fractions:<Kind>`, served by the `pulumi-python` default provider, with
the provider class pickled into the inputs and outputs as `__provider`, by module path. Everything
else in its state is what today's program writes. The pickles are those recorded at each class's
path (tests/fixtures/state/dynamic-providers.json). Checked against the real thing: the dev stack
deployed by that release (391f157, `scripts/deploy-local.sh`) and then updated by this one (32
unchanged), written back by this function, gave the release's own state again: the same URNs, types,
keys, inputs and outputs (the pickle a secret), provider references, parents and dependencies (in
another order). What came later is taken out again: the one wait for the namespaces at destroy
(NamespacesGone), the edges to it and the annotation with which its namespaces skip their own wait.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from components.cluster.engine import PACKAGE, dynamic_type, resource_type
from components.helm import DELETION_AWAITED_ELSEWHERE
from components.plugin import RESOURCES
from components.teardown.waits import NamespacesGone

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures/state/dynamic-providers.json"
PROVIDER_KEY = "__provider"
# How a deployment export marks a secret (sdk/go/common/resource/sig, SecretSig).
SECRET_SIG, SECRET = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
# Kinds of the package that release did not have.
LATER = frozenset({NamespacesGone})


def pickles() -> dict[str, str]:
    """Each kind's provider as the previous release pickled it: at its handler's module path."""
    recorded = json.loads(FIXTURE.read_text())["providers"]
    return {
        r.kind: recorded[f"{r.handler.__module__}.{r.handler.__qualname__}"]["pickle"]
        for r in RESOURCES
        if r not in LATER
    }


def without_later(resource: dict[str, Any], later: set[str]) -> dict[str, Any]:
    """`resource` without its edges to the `later` URNs and, for a namespace, the annotation that
    leaves the wait for its deletion to NamespacesGone."""
    resource = {**resource, "dependencies": [d for d in resource.get("dependencies", []) if d not in later]}
    if "propertyDependencies" in resource:
        resource["propertyDependencies"] = {
            key: [d for d in urns if d not in later] for key, urns in resource["propertyDependencies"].items()
        }
    if resource["type"] != "kubernetes:core/v1:Namespace":
        return resource
    for side in ("inputs", "outputs"):
        metadata = resource.get(side, {}).get("metadata") or {}
        annotations = {
            k: v for k, v in (metadata.get("annotations") or {}).items() if k not in DELETION_AWAITED_ELSEWHERE
        }
        metadata = {k: v for k, v in metadata.items() if k != "annotations"}
        resource[side] = {
            **resource.get(side, {}),
            "metadata": {**metadata, **({"annotations": annotations} if annotations else {})},
        }
    return resource


def as_previous_release(deployment: dict[str, Any]) -> dict[str, Any]:
    """`deployment` (a `pulumi stack export`) with the package's resources as that release held them."""
    state = deployment["deployment"]
    resources: list[dict[str, Any]] = state["resources"]
    stack = next(r["urn"] for r in resources if r["type"] == "pulumi:pulumi:Stack")
    prefix = stack.split("::pulumi:pulumi:Stack")[0]
    dynamic_provider = f"{prefix}::pulumi:providers:pulumi-python::default"
    provider_id = str(uuid.uuid4())
    kinds = {resource_type(r.kind): r.kind for r in RESOURCES}
    pickled = pickles()
    renamed: dict[str, str] = {}
    previous: list[dict[str, Any]] = []
    later = {r["urn"] for r in resources if r["type"] in {resource_type(k.kind) for k in LATER}}
    # The dynamic provider's inputs were the project's config, as the package's provider's are now.
    config: dict[str, Any] = {}
    for resource in (without_later(r, later) for r in resources if r["urn"] not in later):
        if resource["type"] == f"pulumi:providers:{PACKAGE}":
            renamed[f"{resource['urn']}::{resource['id']}"] = f"{dynamic_provider}::{provider_id}"
            config = {f"{PACKAGE}:{key}": value for key, value in resource.get("inputs", {}).items()}
            continue
        kind = kinds.get(resource["type"])
        if kind is not None:
            renamed[resource["urn"]] = resource["urn"].replace(resource_type(kind), dynamic_type(kind))
            # The SDK stores the pickle as a secret (pulumi/dynamic/dynamic.py, Resource.__init__).
            pickle = {SECRET_SIG: SECRET, "plaintext": json.dumps(pickled[kind])}
            resource = {
                **resource,
                "type": dynamic_type(kind),
                "inputs": {**resource["inputs"], PROVIDER_KEY: pickle},
                "outputs": {**resource.get("outputs", {}), PROVIDER_KEY: pickle},
            }
        previous.append(resource)
    assert renamed, "no resource of the package in the state"
    at = next(i for i, r in enumerate(previous) if r["type"] == "pulumi:pulumi:Stack") + 1
    previous.insert(
        at,
        {
            "urn": dynamic_provider,
            "custom": True,
            "id": provider_id,
            "type": "pulumi:providers:pulumi-python",
            "inputs": config,
            "outputs": config,
        },
    )
    text = json.dumps({**deployment, "deployment": {**state, "resources": previous}})
    # Whole JSON strings only: one resource's name may begin another's.
    for old, new in renamed.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    return dict(json.loads(text))
