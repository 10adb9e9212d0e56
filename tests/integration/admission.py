"""Asks the test control plane's API server what it admits: server-side dry runs (every admission
step, webhooks and policies included, nothing stored) of any built-in object, and of a pod's
ephemeral containers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from components.checks.kube import api_client

Json = dict[str, Any]
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


class ApiServer:
    def __init__(self) -> None:
        from kubernetes.client import ApiException

        self.client = api_client(os.environ["KUBECONFIG"], None)
        self._error = ApiException

    def _call(self, method: str, path: str, body: Json, content_type: str = "application/json") -> str | None:
        """None when the API server admits the request, else its message."""
        try:
            response = self.client.call_api(
                path,
                method,
                query_params=[("dryRun", "All")],
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
        except self._error as error:
            try:
                return str(json.loads(error.body).get("message") or error.reason)
            except (TypeError, ValueError):
                return f"{error.status} {error.reason}"
        response.drain_conn()
        response.release_conn()
        return None

    def dry_run_create(self, manifest: Json, namespace: str) -> str | None:
        api_version, plural = manifest["apiVersion"], PLURALS[manifest["kind"]]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return self._call("POST", f"{base}/namespaces/{namespace}/{plural}", manifest)

    def dry_run_debug(self, namespace: str, pod: str, container: Json) -> str | None:
        """What `kubectl debug` sends: a patch of the pod's ephemeralcontainers subresource."""
        patch = {"spec": {"ephemeralContainers": [container]}}
        path = f"/api/v1/namespaces/{namespace}/pods/{pod}/ephemeralcontainers"
        return self._call("PATCH", path, patch, "application/strategic-merge-patch+json")

    def close(self) -> None:
        self.client.close()


@contextmanager
def api_server() -> Iterator[ApiServer]:
    server = ApiServer()
    try:
        yield server
    finally:
        server.close()
