"""The unit tests' one cluster: every call of the Cluster Protocol (components/cluster/protocol.py)
answered from plain data, and a record of the calls that change something.

Objects are stored by resource, namespace ("" for a cluster-scoped one) and name. A resource is
named as kubectl names it, plural and API group: `nodes`, `pods` (the core group has no name),
`deployments.apps`, `clusterpolicies.nvidia.com`. The version is not part of it: an object is the
same object at each version the API serves it at. Label and field selectors match as the API
server matches the equality forms the checks send (`a=b,c!=d`, `spec.nodeName=n`).

Calls may come from many threads at once, as the preflight check pods' do.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from typing import Any

from components.cluster.protocol import POD_GONE_TIMEOUT_SECONDS, Conflict, DryRun, Json
from standins.operators.informer import matches


def resource(group: str, plural: str) -> str:
    """kubectl's name of a resource: `queues.scheduling.run.ai`, `pods`."""
    return f"{plural}.{group}" if group else plural


def labels_of(selector: str) -> dict[str, str]:
    """The labels an equality selector (`a=b,c=d`) selects by, for an object it is to select."""
    return dict(term.split("=", 1) for term in selector.split(","))


def field_selected(obj: Json, selector: str) -> bool:
    """Whether an object matches a field selector of `path=value` terms (`spec.nodeName=gpu-node-0`)."""
    for term in filter(None, (t.strip() for t in selector.split(","))):
        path, value = term.replace("==", "=").split("=", 1)
        found: Any = obj
        for step in path.strip().split("."):
            found = (found or {}).get(step) if isinstance(found, dict) else None
        if str(found if found is not None else "") != value.strip():
            return False
    return True


class ExecFailed(RuntimeError):
    """An exec the fake has no answer for, as the API server refuses one into a pod without the command."""


def merge(target: Json, patch: Json) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value


@dataclass
class FakeCluster:
    """A cluster that holds what a test put in it, answers each call from it, and records the calls
    that create, delete or dry-run something."""

    # resource → namespace ("" when cluster-scoped) → name → the object, as the API serialises it
    objects: dict[str, dict[str, dict[str, Json]]] = field(default_factory=dict)
    # (namespace, pod) → its log, whichever container is asked for; a pod without one logs nothing
    logs: dict[tuple[str, str], str] = field(default_factory=dict)
    # the command → what it prints, in whichever pod it runs; a command not here fails (ExecFailed)
    execs: dict[tuple[str, ...], str] = field(default_factory=dict)
    # plural → the API server's refusal of a dry-run create of it; any other is admitted
    refusals: dict[str, str] = field(default_factory=dict)
    # plural → the warnings the API server answers a dry-run create of it with
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # (namespace, name) → the object's events, as "Reason: message"
    events: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # the (group, resource) pairs the caller may not create; any other it may
    denied: set[tuple[str, str]] = field(default_factory=set)
    # the phase a pod reads as once created
    created_phase: str = "Pending"

    # What the checks did, in order.
    created_pods: list[str] = field(default_factory=list)
    deleted_pods: list[str] = field(default_factory=list)
    # (group, version, plural, name) of each delete_cluster_object
    deleted_objects: list[tuple[str, str, str, str]] = field(default_factory=list)
    # (api_version, plural, namespace, manifest) of each dry-run create
    dry_runs: list[tuple[str, str, str | None, Json]] = field(default_factory=list)
    # (node, patch) of each patch_node
    node_patches: list[tuple[str, Json]] = field(default_factory=list)
    # (namespace, label_selector, field_selector) of each list_pods
    pod_listings: list[tuple[str, str, str]] = field(default_factory=list)

    lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    # ---------------------------------------------------------------- the data, for the tests

    def put(self, resource: str, *objects: Json, namespace: str = "") -> None:
        """Stores each object under its name, replacing one of the same name; it is not copied, so a
        test may change it afterwards."""
        with self.lock:
            stored = self.objects.setdefault(resource, {}).setdefault(namespace, {})
            for obj in objects:
                stored[str(obj["metadata"]["name"])] = obj

    def stored(self, resource: str, name: str, namespace: str = "") -> Json:
        """The stored object itself (KeyError when there is none), for a test to change."""
        with self.lock:
            return self.objects[resource][namespace][name]

    def listed(self, resource: str, namespace: str | None = None) -> list[Json]:
        """The objects of a resource in a namespace, or in every namespace, in the order stored."""
        with self.lock:
            namespaces = self.objects.get(resource, {})
            chosen = namespaces.values() if namespace is None else [namespaces.get(namespace, {})]
            return [obj for objects in chosen for obj in objects.values()]

    def remove(self, resource: str, name: str, namespace: str = "") -> bool:
        """Deletes the object; False when there was none."""
        with self.lock:
            return self.objects.get(resource, {}).get(namespace, {}).pop(name, None) is not None

    def clear(self, resource: str, namespace: str | None = None) -> None:
        """Deletes every object of a resource in a namespace, or in every namespace."""
        with self.lock:
            if namespace is None:
                self.objects.pop(resource, None)
            else:
                self.objects.get(resource, {}).pop(namespace, None)

    def set_phase(self, namespace: str, pod: str, phase: str) -> None:
        """The pod's phase as its kubelet reports it; nothing when the pod is gone."""
        with self.lock:
            found = self.objects.get("pods", {}).get(namespace, {}).get(pod)
            if found is not None:
                found.setdefault("status", {})["phase"] = phase

    def _read(self, resource: str, name: str, namespace: str = "") -> Json | None:
        with self.lock:
            return self.objects.get(resource, {}).get(namespace, {}).get(name)

    def _selected(self, resource: str, namespace: str, label_selector: str, field_selector: str = "") -> list[Json]:
        return [
            obj
            for obj in self.listed(resource, namespace)
            if matches((obj.get("metadata") or {}).get("labels") or {}, label_selector)
            and field_selected(obj, field_selector)
        ]

    # ---------------------------------------------------------------- nodes and cluster objects

    def read_node(self, name: str) -> Json | None:
        return self._read("nodes", name)

    def list_nodes(self, label_selector: str = "") -> list[Json]:
        return self._selected("nodes", "", label_selector)

    def read_namespace(self, name: str) -> Json | None:
        return self._read("namespaces", name)

    def patch_node(self, name: str, patch: Json) -> None:
        """Merges labels, annotations and spec as a strategic merge patch does (None removes a key). As
        the API server does, a patch naming metadata.resourceVersion applies only to that version, and
        every patch makes a new one."""
        with self.lock:
            node = self.objects["nodes"][""][name]
            metadata = node.setdefault("metadata", {})
            version = str(metadata.get("resourceVersion") or "1")
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and str(wanted) != version:
                raise Conflict(f"node {name} changed since it was read")
            merge(metadata, {k: v for k, v in (patch.get("metadata") or {}).items() if k != "resourceVersion"})
            merge(node.setdefault("spec", {}), patch.get("spec") or {})
            metadata["resourceVersion"] = str(int(version) + 1)
            self.node_patches.append((name, patch))

    def list_runtime_classes(self) -> list[Json]:
        return self.listed("runtimeclasses.node.k8s.io", "")

    def read_cluster_object(self, group: str, version: str, plural: str, name: str) -> Json | None:
        return self._read(resource(group, plural), name)

    def list_cluster_objects(self, group: str, version: str, plural: str) -> list[Json]:
        return self.listed(resource(group, plural), "")

    def delete_cluster_object(self, group: str, version: str, plural: str, name: str) -> bool:
        self.deleted_objects.append((group, version, plural, name))
        return self.remove(resource(group, plural), name)

    def can_create(self, group: str, resource: str) -> bool:
        return (group, resource) not in self.denied

    def list_deployments(self, namespace: str) -> list[Json]:
        return self.listed("deployments.apps", namespace)

    def list_daemonsets(self, namespace: str, label_selector: str = "") -> list[Json]:
        return self._selected("daemonsets.apps", namespace, label_selector)

    def list_controller_revisions(self, namespace: str, label_selector: str = "") -> list[Json]:
        return self._selected("controllerrevisions.apps", namespace, label_selector)

    # ---------------------------------------------------------------- admission

    def read_webhook_configuration(self, kind: str, name: str) -> Json | None:
        return self._read(resource("admissionregistration.k8s.io", f"{kind.lower()}s"), name)

    def list_endpoint_slices(self, namespace: str, service: str) -> list[Json]:
        return self._selected("endpointslices.discovery.k8s.io", namespace, f"kubernetes.io/service-name={service}")

    def dry_run_create(self, api_version: str, plural: str, namespace: str | None, manifest: Json) -> DryRun:
        self.dry_runs.append((api_version, plural, namespace, manifest))
        return DryRun(self.refusals.get(plural), self.warnings.get(plural, ()))

    # ---------------------------------------------------------------- pods

    def read_pod(self, namespace: str, name: str) -> Json | None:
        return self._read("pods", name, namespace)

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[Json]:
        self.pod_listings.append((namespace, label_selector, field_selector))
        return self._selected("pods", namespace, label_selector, field_selector)

    def list_all_pods(self, field_selector: str = "") -> list[Json]:
        return [pod for pod in self.listed("pods") if field_selected(pod, field_selector)]

    def create_pod(self, namespace: str, manifest: Json) -> None:
        pod = copy.deepcopy(manifest)
        name = str(pod["metadata"]["name"])
        with self.lock:
            if self._read("pods", name, namespace) is not None:
                raise ValueError(f'pods "{name}" already exists')
            pod["status"] = {"phase": self.created_phase}
            self.put("pods", pod, namespace=namespace)
            self.created_pods.append(name)

    def delete_pod(
        self,
        namespace: str,
        name: str,
        wait: bool = True,
        timeout_seconds: float = POD_GONE_TIMEOUT_SECONDS,
        grace_period_seconds: int | None = 0,
    ) -> None:
        """Gone at once, there or not, as KubeClient's is by the time it returns."""
        with self.lock:
            self.deleted_pods.append(name)
            self.remove("pods", name, namespace)

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str:
        answer = self.execs.get(tuple(command))
        if answer is None:
            raise ExecFailed(f"exec {' '.join(command)} in {namespace}/{pod}: no such command")
        return answer

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str:
        return self.logs.get((namespace, name), "")

    def events_for(self, namespace: str, name: str) -> list[str]:
        return list(self.events.get((namespace, name), []))
