"""The one Kubernetes client adapter: every read, exec and pod the checks need, as the API's own JSON.
The checks take it as a `Cluster` (components/cluster/protocol.py).

A missing object reads as None and a kind the cluster does not serve lists as empty; any other API
error raises. The kubernetes package is imported when a client is made, so programs that never
read the cluster do not pay for it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

import yaml

from components.cluster.protocol import POD_GONE_TIMEOUT_SECONDS, Conflict, DryRun, Json
from components.cluster.waiting import Clock, Deadline, poll
from components.config.types import is_kubeconfig_contents


class PodStillThere(TimeoutError):
    """A deleted pod was not gone by the deadline."""


def api_client(kubeconfig: str | None, context: str | None, connections: int = 4) -> Any:
    """A kubernetes ApiClient for a kubeconfig path, its contents, or the ambient KUBECONFIG, keeping
    up to `connections` connections open (one per thread that calls it at once)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if kubeconfig and is_kubeconfig_contents(kubeconfig):
        config.load_kube_config_from_dict(
            yaml.safe_load(kubeconfig), context=context, client_configuration=configuration
        )
    else:
        path = os.path.expanduser(kubeconfig) if kubeconfig else None
        config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    configuration.connection_pool_maxsize = connections
    return client.ApiClient(configuration)


def raw_json(response: Any) -> Any:
    """The body of a `_preload_content=False` call: the API's own JSON, without the client's models.

    The models reject objects a real node would never send but a fake one does (a nodeInfo without
    bootID), and their snake_case would not match what the parsers here read.
    """
    return json.loads(response.data)


def read_to_end(response: Any) -> None:
    """Reads a `_preload_content=False` answer to its end, unparsed, so its connection is used
    again: one left unread is closed, and the next call pays a new TLS handshake."""
    response.drain_conn()
    response.release_conn()


# One warning of a `Warning` header: code, agent, quoted text (a backslash escapes a quote or a
# backslash), an optional quoted date, then a comma before the next (k8s.io/apimachinery v0.37.2 pkg/util/net/http.go,
# ParseWarningHeader and makeQuotedString).
_WARNING = re.compile(r'\s*([0-9]{3}) (\S+) "((?:[^"\\]|\\.)*)"(?:\s*"[^"]*")?\s*(?:,|$)')


def warning_texts(headers: list[str]) -> tuple[str, ...]:
    """The texts of the code-299 warnings in `Warning` header values, the only code the API server
    sends and client-go shows (client-go v0.37.2 rest/warnings.go). Each warning is a header line
    of its own, and one line may hold several; a malformed rest of a line is dropped, as client-go
    drops it."""
    texts = []
    for header in headers:
        # http.client reads header bytes as latin-1; the API server writes the text as UTF-8.
        line = header.encode("latin-1", "replace").decode("utf-8", "replace")
        while match := _WARNING.match(line):
            if match[1] == "299" and match[3]:
                texts.append(re.sub(r"\\(.)", r"\1", match[3]))
            line = line[match.end() :]
    return tuple(texts)


class KubeClient:
    """The cluster as the checks see it, over the official kubernetes client."""

    def __init__(self, client: Any, clock: Clock | None = None) -> None:
        from kubernetes import client as k8s

        self.client = client
        self.clock = clock or Clock()
        self._api = k8s
        self.core = k8s.CoreV1Api(client)
        self.custom = k8s.CustomObjectsApi(client)

    @classmethod
    def connect(cls, kubeconfig: str | None, context: str | None, connections: int = 4) -> KubeClient:
        return cls(api_client(kubeconfig, context, connections))

    # ---------------------------------------------------------------- nodes and cluster objects

    def read_node(self, name: str) -> Json | None:
        return self._or_none(lambda: raw_json(self.core.read_node(name, _preload_content=False)))

    def list_nodes(self, label_selector: str = "") -> list[Json]:
        return list(raw_json(self.core.list_node(label_selector=label_selector, _preload_content=False))["items"])

    def patch_node(self, name: str, patch: Json) -> None:
        """A strategic merge patch of the node: labels, annotations, `spec.unschedulable`, taints. With
        `metadata.resourceVersion` the API server applies it only to that version, else Conflict."""
        try:
            read_to_end(self.core.patch_node(name, patch, _preload_content=False))
        except self._api.ApiException as error:
            if error.status == 409:
                raise Conflict(f"node {name} changed since it was read") from None
            raise

    def list_runtime_classes(self) -> list[Json]:
        nodes = self._api.NodeV1Api(self.client)
        return list(raw_json(nodes.list_runtime_class(_preload_content=False))["items"])

    def read_namespace(self, name: str) -> Json | None:
        return self._or_none(lambda: raw_json(self.core.read_namespace(name, _preload_content=False)))

    def read_cluster_object(self, group: str, version: str, plural: str, name: str) -> Json | None:
        return self._or_none(lambda: dict(self.custom.get_cluster_custom_object(group, version, plural, name)))

    def list_cluster_objects(self, group: str, version: str, plural: str) -> list[Json]:
        try:
            listing = self.custom.list_cluster_custom_object(group, version, plural, _preload_content=False)
        except self._api.ApiException as error:
            if error.status == 404:  # the kind is not served: no CRD, no objects
                return []
            raise
        return list(raw_json(listing).get("items", []))

    def delete_cluster_object(self, group: str, version: str, plural: str, name: str) -> bool:
        """Deletes the object; False when there was none."""
        try:
            read_to_end(self.custom.delete_cluster_custom_object(group, version, plural, name, _preload_content=False))
        except self._api.ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    def can_create(self, group: str, resource: str) -> bool:
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "create", "group": group, "resource": resource}},
        }
        api = self._api.AuthorizationV1Api(self.client)
        answer = raw_json(api.create_self_subject_access_review(review, _preload_content=False))
        return bool((answer.get("status") or {}).get("allowed"))

    def list_deployments(self, namespace: str) -> list[Json]:
        apps = self._api.AppsV1Api(self.client)
        return list(raw_json(apps.list_namespaced_deployment(namespace, _preload_content=False))["items"])

    def list_daemonsets(self, namespace: str, label_selector: str = "") -> list[Json]:
        apps = self._api.AppsV1Api(self.client)
        listing = apps.list_namespaced_daemon_set(namespace, label_selector=label_selector, _preload_content=False)
        return list(raw_json(listing)["items"])

    def list_controller_revisions(self, namespace: str, label_selector: str = "") -> list[Json]:
        apps = self._api.AppsV1Api(self.client)
        listing = apps.list_namespaced_controller_revision(
            namespace, label_selector=label_selector, _preload_content=False
        )
        return list(raw_json(listing)["items"])

    # ---------------------------------------------------------------- admission

    def read_webhook_configuration(self, kind: str, name: str) -> Json | None:
        api = self._api.AdmissionregistrationV1Api(self.client)
        read = (
            api.read_mutating_webhook_configuration
            if kind == "MutatingWebhookConfiguration"
            else api.read_validating_webhook_configuration
        )
        return self._or_none(lambda: raw_json(read(name, _preload_content=False)))

    def list_endpoint_slices(self, namespace: str, service: str) -> list[Json]:
        discovery = self._api.DiscoveryV1Api(self.client)
        listing = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}", _preload_content=False
        )
        return list(raw_json(listing)["items"])

    def dry_run_create(self, api_version: str, plural: str, namespace: str | None, manifest: Json) -> DryRun:
        """Creates `manifest` as a server-side dry run, through every admission step and webhook but
        stored nowhere: the API server's refusal (None when it is admitted) and its warnings."""
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"  # the core group has only v1
        scope = f"/namespaces/{namespace}" if namespace else ""
        return self._dry_run("POST", f"{base}{scope}/{plural}", manifest, "application/json")

    def dry_run_debug(self, namespace: str, pod: str, container: Json) -> str | None:
        """What `kubectl debug` sends, as a server-side dry run: a patch of the pod's
        ephemeralcontainers subresource adding `container`."""
        return self._dry_run(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{pod}/ephemeralcontainers",
            {"spec": {"ephemeralContainers": [container]}},
            "application/strategic-merge-patch+json",
        ).refusal

    def _dry_run(self, method: str, path: str, body: Json, content_type: str) -> DryRun:
        try:
            answer = self.client.call_api(
                path,
                method,
                query_params=[("dryRun", "All")],
                header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
        except self._api.ApiException as error:
            warnings = warning_texts(error.headers.getlist("Warning")) if error.headers else ()
            try:
                return DryRun(str(json.loads(error.body).get("message") or error.reason), warnings)
            except (TypeError, ValueError):
                return DryRun(f"{error.status} {error.reason}", warnings)
        read_to_end(answer)
        return DryRun(None, warning_texts(answer.headers.getlist("Warning")))

    # ---------------------------------------------------------------- pods

    def read_pod(self, namespace: str, name: str) -> Json | None:
        return self._or_none(lambda: raw_json(self.core.read_namespaced_pod(name, namespace, _preload_content=False)))

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[Json]:
        pods = self.core.list_namespaced_pod(
            namespace, label_selector=label_selector, field_selector=field_selector, _preload_content=False
        )
        return list(raw_json(pods)["items"])

    def list_all_pods(self, field_selector: str = "") -> list[Json]:
        pods = self.core.list_pod_for_all_namespaces(field_selector=field_selector, _preload_content=False)
        return list(raw_json(pods)["items"])

    # Calls whose answer is not needed skip the client's models, which cost milliseconds of CPU
    # each, adding up when many checks run at once.

    def create_pod(self, namespace: str, manifest: Json) -> None:
        read_to_end(self.core.create_namespaced_pod(namespace, manifest, _preload_content=False))

    def delete_pod(
        self,
        namespace: str,
        name: str,
        wait: bool = True,
        timeout_seconds: float = POD_GONE_TIMEOUT_SECONDS,
        grace_period_seconds: int | None = 0,
    ) -> None:
        """Deletes the pod, at once unless given a grace period (None: the pod's own); with `wait`,
        returns once it is gone (a reused pod name must be free), or raises PodStillThere naming it
        when it is still there after `timeout_seconds`."""
        try:
            deleted = self.core.delete_namespaced_pod(
                name, namespace, grace_period_seconds=grace_period_seconds, _preload_content=False
            )
            read_to_end(deleted)
        except self._api.ApiException as error:
            if error.status != 404:
                raise
            return
        if not wait:
            return
        deadline = Deadline.after(timeout_seconds, self.clock)
        if poll(lambda: self.read_pod(namespace, name), lambda pod: pod is None, deadline) is not None:
            raise PodStillThere(
                f"pod {namespace}/{name} is still there {timeout_seconds:g}s after it was deleted: a finalizer "
                f"holds it, or its node does not answer (kubectl -n {namespace} get pod {name} -o yaml)"
            )

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str:
        from kubernetes.stream import stream

        kwargs: Json = {"command": command, "stderr": True, "stdin": False, "stdout": True, "tty": False}
        if container:
            kwargs["container"] = container
        return str(stream(self.core.connect_get_namespaced_pod_exec, pod, namespace, **kwargs))

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str:
        """The pod's log; empty when it has none yet (or no longer)."""
        try:
            return str(self.core.read_namespaced_pod_log(name, namespace, container=container))
        except self._api.ApiException:
            return ""

    def events_for(self, namespace: str, name: str) -> list[str]:
        events = self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.name={name}", _preload_content=False
        )
        return [f"{e.get('reason')}: {e.get('message')}" for e in raw_json(events)["items"]]

    def _or_none(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except self._api.ApiException as error:
            if error.status == 404:
                return None
            raise
