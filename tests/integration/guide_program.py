"""Registers the resources of shared-table cases, as the engine tier of tests/integration/test_guide_rules.py
writes them to the JSON file named by KGF_GUIDE_SPEC; run by the real engine as a workspace's __main__.py.

Each resource names the provider it goes through:
- `offline`, or `offline:<namespace>` with that default namespace: a kubernetes provider of a cluster
  that does not exist, so a preview needs no network and no cluster-side admission policy interferes;
- `render`: a provider in YAML-render mode, which renders a v4 Chart without a cluster and "creates"
  objects by writing files during `pulumi up`;
- `cluster`: the default provider, the control plane of KUBECONFIG (for `pulumi up` of Helm releases);
- none, for a resource of another package (the command stand-in).
A field listed in `unknown` gets its value from the id of a resource created in the same update, so
it is unknown during preview and the given value once `pulumi up` runs.
"""

import json
import os
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

SPEC = json.loads(Path(os.environ["KGF_GUIDE_SPEC"]).read_text())
NOWHERE = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "nowhere", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "nowhere", "user": {"token": "none"}}],
        "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nowhere"}}],
        "current-context": "nowhere",
    }
)
_providers: dict[str, k8s.Provider] = {}


def provider(key: str) -> k8s.Provider | None:
    if key in ("cluster", ""):
        return None
    if key not in _providers:
        if key == "render":
            # An empty kubeconfig: the SDK would otherwise take KUBECONFIG, which render mode refuses.
            _providers[key] = k8s.Provider("render", kubeconfig="", render_yaml_to_directory=SPEC["render_directory"])
        else:
            namespace = key.partition(":")[2] or None
            name = f"offline-{namespace}" if namespace else "offline"
            _providers[key] = k8s.Provider(name, kubeconfig=NOWHERE, namespace=namespace)
    return _providers[key]


# Its id is unknown until the update creates it: during a preview it goes to the cluster that does not
# exist (in render mode the id would be known already); `pulumi up` renders it to a file.
SOURCE = k8s.core.v1.ConfigMap(
    "unknown-source",
    metadata={"name": "unknown-source"},
    opts=pulumi.ResourceOptions(provider=provider(SPEC["source_provider"])),
)


NAMESPACES: dict[str, pulumi.CustomResource] = {}


def later(path: list[str], value: Any) -> pulumi.Output[Any]:
    # A namespace the stack declares comes from that Namespace, as `namespace=ns.id` would.
    source = NAMESPACES.get(value, SOURCE) if path == ["metadata", "namespace"] else SOURCE
    return source.id.apply(lambda _: value)


def with_unknowns(props: dict[str, Any], paths: list[list[str]]) -> dict[str, Any]:
    for path in paths:
        parent = props
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = later(path, parent[path[-1]])
    return props


for resource in SPEC["resources"]:
    opts = pulumi.ResourceOptions(provider=provider(resource.get("provider") or ""))
    props = with_unknowns(resource["props"], resource.get("unknown") or [])
    if resource.get("remote"):
        pulumi.ComponentResource(resource["type"], resource["name"], {**props, "resources": None}, opts, remote=True)
    elif resource.get("children") is not None:
        # The SDK-side v3 Chart as the engine sees it: a component of the program with {} as its inputs,
        # and each object it rendered registered as its child.
        chart = pulumi.ComponentResource(resource["type"], resource["name"], {}, None)
        for child in resource["children"]:
            child_opts = pulumi.ResourceOptions(parent=chart, provider=provider(child["provider"]))
            pulumi.CustomResource(child["type"], f"{resource['name']}:{child['name']}", child["props"], child_opts)
    else:
        registered = pulumi.CustomResource(resource["type"], resource["name"], props, opts)
        if resource["type"] == "kubernetes:core/v1:Namespace":
            NAMESPACES[props["metadata"]["name"]] = registered
