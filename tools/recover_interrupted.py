"""Brings a stack whose `pulumi up` was killed back to a state the next `pulumi up` converges from.

A killed update leaves "pending creates" in the state (objects that may exist in the cluster but
not in the state), and can leave a Helm release the state does not know, or one stuck in
`pending-install`/`pending-upgrade`, which no later install or upgrade may touch. This drops those
release records (the objects they created keep Helm's ownership labels, so the next install adopts
them) and the pending creates; Kubernetes objects are server-side applied, so the next `pulumi up`
adopts whatever the killed run created. Run `pulumi cancel` first if the killed
run left its lock, and `pulumi up` afterwards.

Usage: python -m tools.recover_interrupted --stack NAME [--cwd PROJECT_DIR] [--context CONTEXT]
Cluster access comes from KUBECONFIG (or ~/.kube/config), as for kubectl.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

RELEASE = "kubernetes:helm.sh/v3:Release"
STUCK = ("pending-install", "pending-upgrade", "pending-rollback")


def interrupted_releases(deployment: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(namespace, release name, Helm label selector of the records to drop) for every Helm release
    the killed run was creating or changing.

    A release being created is not in the state, so all its records go and the next install
    starts over; a release being upgraded keeps its history but loses the stuck record.
    """
    releases = []
    for operation in deployment.get("pending_operations") or []:
        resource = operation.get("resource") or {}
        inputs = resource.get("inputs") or {}
        if resource.get("type") != RELEASE or not isinstance(inputs.get("name"), str):
            continue
        name = inputs["name"]
        selector = f"owner=helm,name={name}"
        if operation.get("type") != "creating":
            selector += f",status in ({','.join(STUCK)})"
        releases.append((inputs.get("namespace") or "default", name, selector))
    return releases


def drop_release_records(releases: Iterable[tuple[str, str, str]], context: str | None) -> list[str]:
    from kubernetes import client, config

    config.load_kube_config(context=context)
    core = client.CoreV1Api()
    dropped = []
    for namespace, _, selector in releases:
        for record in core.list_namespaced_secret(namespace, label_selector=selector).items:
            core.delete_namespaced_secret(record.metadata.name, namespace)
            dropped.append(f"{namespace}/{record.metadata.name}")
    return dropped


def main() -> int:
    parser = argparse.ArgumentParser(description="Recover a stack after a killed `pulumi up`.")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--context", default=None)
    args = parser.parse_args()
    exported = subprocess.run(
        ["pulumi", "stack", "export", "--stack", args.stack], cwd=args.cwd, capture_output=True, text=True, check=True
    )
    deployment = json.loads(exported.stdout)["deployment"]
    if not deployment.get("pending_operations"):
        print("no interrupted operations: nothing to recover")
        return 0
    for record in drop_release_records(interrupted_releases(deployment), args.context):
        print(f"dropped the Helm release record {record}; the next install adopts the release's objects")
    refresh = ["pulumi", "refresh", "--yes", "--skip-preview", "--non-interactive", "--clear-pending-creates"]
    return subprocess.run([*refresh, "--stack", args.stack], cwd=args.cwd).returncode


if __name__ == "__main__":
    sys.exit(main())
