"""Asks the test control plane's API server what it admits, through the program's own client
adapter (KubeClient.dry_run_create and dry_run_debug): server-side dry runs of the built-in
objects the shared case table holds, every admission step included, nothing stored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from components.cluster.client import KubeClient

# The built-in kinds the shared case table creates, by their REST name.
PLURALS = {
    "Pod": "pods",
    "PodTemplate": "podtemplates",
    "ReplicationController": "replicationcontrollers",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "Job": "jobs",
    "CronJob": "cronjobs",
}


def dry_run_create(cluster: KubeClient, manifest: dict[str, Any], namespace: str) -> str | None:
    """None when the API server admits `manifest` in `namespace`, else its message."""
    return cluster.dry_run_create(manifest["apiVersion"], PLURALS[manifest["kind"]], namespace, manifest).refusal


@contextmanager
def api_server() -> Iterator[KubeClient]:
    cluster = KubeClient.connect(os.environ["KUBECONFIG"], None)
    try:
        yield cluster
    finally:
        cluster.client.close()
