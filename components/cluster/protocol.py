"""The cluster as the checks see it: the Protocol they take KubeClient (components/cluster/client.py)
by, so that a test's fake cluster stands where it does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

Json = dict[str, Any]
# How long `delete_pod` waits for a pod deleted at once (grace period 0) to be gone: the kubelet
# stops it within seconds; one still there after this is held by a finalizer or a node that does
# not answer, and waiting longer would hang `up` or `destroy`.
POD_GONE_TIMEOUT_SECONDS = 120.0


class Conflict(Exception):
    """A patch that carried `metadata.resourceVersion` found the object changed since it was read
    (HTTP 409): read it again and decide the patch anew."""


@dataclass(frozen=True)
class DryRun:
    """What a server-side dry run met: the API server's refusal (None when it admitted the object)
    and the warnings it answered with, a Warn-mode admission policy's among them."""

    refusal: str | None
    warnings: tuple[str, ...] = ()


class Cluster(Protocol):
    """Each KubeClient call the checks make, with KubeClient's signature
    (tests/unit/test_cluster_protocol.py holds them to it)."""

    def read_node(self, name: str) -> Json | None: ...

    def list_nodes(self, label_selector: str = "") -> list[Json]: ...

    def patch_node(self, name: str, patch: Json) -> None:
        """Raises Conflict when the patch names a resourceVersion the node no longer has."""
        ...

    def list_runtime_classes(self) -> list[Json]: ...

    def read_namespace(self, name: str) -> Json | None: ...

    def read_cluster_object(self, group: str, version: str, plural: str, name: str) -> Json | None: ...

    def list_cluster_objects(self, group: str, version: str, plural: str) -> list[Json]: ...

    def delete_cluster_object(self, group: str, version: str, plural: str, name: str) -> bool: ...

    def can_create(self, group: str, resource: str) -> bool: ...

    def list_deployments(self, namespace: str) -> list[Json]: ...

    def list_daemonsets(self, namespace: str, label_selector: str = "") -> list[Json]: ...

    def list_controller_revisions(self, namespace: str, label_selector: str = "") -> list[Json]: ...

    def read_webhook_configuration(self, kind: str, name: str) -> Json | None: ...

    def list_endpoint_slices(self, namespace: str, service: str) -> list[Json]: ...

    def dry_run_create(self, api_version: str, plural: str, namespace: str | None, manifest: Json) -> DryRun: ...

    def read_pod(self, namespace: str, name: str) -> Json | None: ...

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[Json]: ...

    def list_all_pods(self, field_selector: str = "") -> list[Json]: ...

    def create_pod(self, namespace: str, manifest: Json) -> None: ...

    def delete_pod(
        self,
        namespace: str,
        name: str,
        wait: bool = True,
        timeout_seconds: float = POD_GONE_TIMEOUT_SECONDS,
        grace_period_seconds: int | None = 0,
    ) -> None: ...

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str: ...

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str: ...

    def events_for(self, namespace: str, name: str) -> list[str]: ...
