"""The API calls the stand-in operators make: plain JSON over the kubernetes client's REST layer,
reads of a watched kind answered from the store its watch keeps (informer.py)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from standins.operators.informer import Store, split_path
from standins.operators.watching import ALARM, WATCH_SECONDS, Alarm

Json = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    scoped = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return f"{scoped}/{name}" if name else scoped


class Cluster:
    """get/list/create/patch/delete on API paths; a missing object reads as None, an existing one
    is not created again."""

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        # One connection for each watch (watching.WATCHED) besides the operators' own calls.
        configuration.connection_pool_maxsize = 32
        self._api = client.ApiClient(configuration)
        self._watches: set[Any] = set()
        self.store = Store()

    def _call(
        self, method: str, url: str, body: Any = None, content_type: str = "application/json", **query: str
    ) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            response = self._api.call_api(
                url,
                method,
                query_params=[(k, v) for k, v in query.items() if v],
                header_params={"Accept": "application/json", "Content-Type": content_type},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
            )
        except ApiException as error:
            if error.status == 404 or (method == "POST" and error.status == 409):
                return None
            raise
        return json.loads(response.data) if response.data else None

    def get(self, url: str) -> Json | None:
        answered, held = self.store.get(url)
        if answered:
            return held
        found: Json | None = self._call("GET", url)
        return found

    def list(self, url: str, selector: str = "", field_selector: str = "") -> list[Json]:
        held = None if field_selector else self.store.list(url, selector)
        if held is not None:
            return held
        found = self._call("GET", url, labelSelector=selector, fieldSelector=field_selector)
        return list(found["items"]) if found else []

    def create(self, url: str, body: Json) -> None:
        self._written(url, self._call("POST", url, body))

    def patch(self, url: str, patch: Json | Sequence[Json], content_type: str = MERGE_PATCH) -> None:
        """A merge patch by default; a JSON patch (JSON_PATCH) is a list of operations."""
        self._written(url, self._call("PATCH", url, patch, content_type))

    def delete(self, url: str) -> None:
        answer = self._call("DELETE", url)
        where = split_path(url)
        if answer is not None and answer.get("kind") != "Status":
            self._written(url, answer)  # still there: a finalizer holds it, now with its deletionTimestamp
        elif where is not None:
            self.store.forget(*where)

    def _written(self, url: str, answer: Json | None) -> None:
        """The API server's answer to a write (of the object or its status), into the store: the
        next read sees it."""
        where = split_path(url.removesuffix("/status"))
        if answer is not None and where is not None and answer.get("metadata"):
            self.store.apply(where[0], "MODIFIED", answer)

    def close(self) -> None:
        """Closes every connection, open watches first: their readers end at once."""
        for response in list(self._watches):
            response.shutdown()  # a read blocked in another thread returns at once
        self._api.close()

    def open_watch(self, url: str, resource_version: str) -> Iterator[bytes]:
        """The lines of a watch of `url` from `resource_version` (when empty, the API server first
        sends every object as ADDED, then a bookmark saying so): one JSON event each, until it ends
        the watch after WATCH_SECONDS."""
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(WATCH_SECONDS))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        else:  # the current state first, closed by a bookmark (watching.INITIAL_EVENTS_END)
            query += [("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")]
        response = self._api.call_api(
            url,
            "GET",
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=(10, WATCH_SECONDS + 30),
        )
        self._watches.add(response)
        try:
            yield from response
        finally:
            self._watches.discard(response)
            response.release_conn()


def name_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["name"])


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def webhooks_off_the_machine(configuration: Mapping[str, Any]) -> list[str]:
    """Each webhook of a webhook configuration that the API server would call anywhere but on
    loopback: through a Service (its cluster IP routes off the machine) or at a URL of another host."""
    found = []
    for webhook in configuration.get("webhooks") or []:
        client = webhook.get("clientConfig") or {}
        host = urlsplit(client.get("url") or "").hostname
        if client.get("service") or host not in LOOPBACK_HOSTS:
            found.append(f"{name_of(configuration)}/{webhook['name']}: {client.get('service') or host}")
    return found


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def owned_by(owner: Mapping[str, Any]) -> list[Json]:
    """A controller owner reference: deleting the owner garbage-collects the object."""
    metadata = owner["metadata"]
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": metadata["name"],
            "uid": metadata["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def pod_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])


def pods_by_node(pods: Iterable[Json]) -> dict[str, list[Json]]:
    found: dict[str, list[Json]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            found.setdefault(node, []).append(pod)
    return found


def daemonset_ready(daemonset: Mapping[str, Any] | None) -> bool:
    """Desired == ready, as `kubectl rollout status` and the real operators judge it (0 desired is ready)."""
    if daemonset is None:
        return False
    status = daemonset.get("status") or {}
    if status.get("observedGeneration", 0) < daemonset["metadata"].get("generation", 1):
        return False
    return int(status.get("numberReady", 0)) == int(status.get("desiredNumberScheduled", -1))


def deployment_available(deployment: Mapping[str, Any] | None) -> bool:
    if deployment is None:
        return False
    status = deployment.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return conditions.get("Available") == "True" and status.get("updatedReplicas") == deployment["spec"].get(
        "replicas", 1
    )


def ensure(cluster: Cluster, url: str, body: Json) -> Json | None:
    """Creates the object unless it exists; returns what the API server holds."""
    existing = cluster.get(f"{url}/{body['metadata']['name']}")
    if existing is None:
        cluster.create(url, body)
        existing = cluster.get(f"{url}/{body['metadata']['name']}")
    return existing


SPEC_HASH_ANNOTATION = "stand-in.kai-gpu-fractions/spec-hash"


def apply(cluster: Cluster, url: str, body: Json) -> Json | None:
    """Creates the object, or updates its spec when the wanted one changed, as an operator reconciles
    what it owns (the GPU Operator keeps a hash of what it applied in an annotation too)."""
    digest = hashlib.sha256(json.dumps(body["spec"], sort_keys=True).encode()).hexdigest()[:16]
    body = {**body, "metadata": {**body["metadata"], "annotations": {SPEC_HASH_ANNOTATION: digest}}}
    existing = ensure(cluster, url, body)
    if existing is not None and (existing["metadata"].get("annotations") or {}).get(SPEC_HASH_ANNOTATION) != digest:
        cluster.patch(f"{url}/{body['metadata']['name']}", {"metadata": body["metadata"], "spec": body["spec"]})
        existing = cluster.get(f"{url}/{body['metadata']['name']}")
    return existing


@dataclass
class Condition:
    type: str
    status: str
    reason: str
    message: str = ""


def merge_conditions(old: Iterable[Mapping[str, Any]], new: Iterable[Condition], generation: int | None) -> list[Json]:
    """The new conditions, keeping each one's lastTransitionTime while its status stays the same."""
    previous = {c["type"]: c for c in old}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    merged = []
    for condition in new:
        before = previous.get(condition.type)
        changed = before is None or before.get("status") != condition.status
        entry: Json = {
            "type": condition.type,
            "status": condition.status,
            "reason": condition.reason,
            "message": condition.message,
            "lastTransitionTime": now if changed or before is None else before.get("lastTransitionTime", now),
        }
        if generation is not None:
            entry["observedGeneration"] = generation
        merged.append(entry)
    return merged


def same_conditions(old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]]) -> bool:
    key = lambda c: (c["type"], c["status"], c.get("reason"), c.get("message"))  # noqa: E731
    return sorted(map(key, old)) == sorted(map(key, new))


@dataclass
class FirstSeen:
    """When each object (by uid) was first seen, so delays count from then; a delay not yet over
    sets the alarm that wakes the operators when it is."""

    seen: dict[str, float] = field(default_factory=dict)
    alarm: Alarm = field(default_factory=lambda: ALARM)

    def reached(self, obj: Mapping[str, Any], now: float, delay: float) -> bool:
        first = self.seen.setdefault(str(obj["metadata"]["uid"]), now)
        if now - first >= delay:
            return True
        self.alarm.at(first + delay)
        return False
