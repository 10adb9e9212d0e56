"""Checks that nothing a destroyed stack created is left in its cluster.

Reads a `pulumi stack export` taken before `pulumi destroy` and asks the cluster for every
Kubernetes object in it: objects must be gone, Helm releases must have no release record left, and
an object a `*Patch` resource changed (a node, which stays) must have nothing left that the patch's
field manager owns. Fields another manager owns too (labels the node had before) may stay. Objects
of a kind whose CRD no longer exists are gone with it.

Usage: python -m tools.verify_destroyed EXPORT_JSON [--context CONTEXT]
Cluster access comes from KUBECONFIG (or ~/.kube/config), as for kubectl. Exits 1 naming every
leftover.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RELEASE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class Expected:
    """One thing the destroy must have removed: an object, a release record, or a patch's fields."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None
    # For a patch of an object that stays: the server-side apply field manager of the patch.
    patch_manager: str | None = None

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        patch = f" (fields of {self.patch_manager})" if self.patch_manager else ""
        return f"{self.kind} {where}{self.name}{patch}"


def expected_gone(export: Mapping[str, Any]) -> list[Expected]:
    """What the stack's Kubernetes resources put into the cluster, from their recorded outputs."""
    found = []
    for resource in (export.get("deployment") or {}).get("resources") or []:
        kind_token = str(resource.get("type", ""))
        outputs = resource.get("outputs") or {}
        if not kind_token.startswith("kubernetes:") or kind_token.startswith("pulumi:"):
            continue
        if kind_token == RELEASE:
            found.append(Expected("v1", "HelmRelease", str(outputs.get("name")), outputs.get("namespace") or "default"))
            continue
        metadata = outputs.get("metadata") or {}
        if not outputs.get("kind") or not metadata.get("name"):
            continue
        manager = str(outputs.get("__fieldManager")) if kind_token.endswith("Patch") else None
        found.append(
            Expected(
                str(outputs["apiVersion"]), str(outputs["kind"]), metadata["name"], metadata.get("namespace"), manager
            )
        )
    return found


# The field managers of a live object; None when the object does not exist.
ReadManagers = Callable[[Expected], set[str] | None]


def leftovers(expected: Iterable[Expected], read_managers: ReadManagers) -> list[Expected]:
    left = []
    for item in expected:
        managers = read_managers(item)
        if managers is not None and (item.patch_manager is None or item.patch_manager in managers):
            left.append(item)
    return left


def cluster_reader(context: str | None) -> ReadManagers:
    from kubernetes import client, config, dynamic
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    api = config.new_client_from_config(context=context)
    core = client.CoreV1Api(api)
    discovery = dynamic.DynamicClient(api)

    def read(item: Expected) -> set[str] | None:
        if item.kind == "HelmRelease":
            records = core.list_namespaced_secret(item.namespace, label_selector=f"owner=helm,name={item.name}")
            return {"helm"} if records.items else None
        try:
            resource = discovery.resources.get(api_version=item.api_version, kind=item.kind)
            found = resource.get(name=item.name, namespace=item.namespace)
        except (NotFoundError, ResourceNotFoundError):
            return None
        return {str(entry.manager) for entry in found.metadata.managedFields or []}

    return read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", help="`pulumi stack export` of the stack, taken before the destroy")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    args = parser.parse_args(argv)
    with open(args.export) as file:
        expected = expected_gone(json.load(file))
    left = leftovers(expected, cluster_reader(args.context))
    if left:
        print(f"{len(left)} of {len(expected)} objects of the stack are still in the cluster:", file=sys.stderr)
        for item in left:
            print(f"  - {item}", file=sys.stderr)
        return 1
    print(f"Nothing of the stack is left in the cluster ({len(expected)} objects checked).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
