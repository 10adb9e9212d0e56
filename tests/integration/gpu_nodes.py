"""More stand-in GPU nodes for a test, fractional pods to run on them, and a record of what a rollout
did to them: which nodes were cordoned at once, and which nodes were cordoned when each pod went."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.integration.workspace import REPO, kubectl

NODE_FILE = REPO / "standins/nodes/gpu-node.yaml"
TEAM = "team-a"


@contextmanager
def more_gpu_nodes(names: list[str]) -> Iterator[list[str]]:
    """Copies of the stand-in GPU node under these names, deleted (with every pod on them) afterwards."""
    template = yaml.safe_load(NODE_FILE.read_text())
    nodes = []
    for name in names:
        node = yaml.safe_load(yaml.safe_dump(template))
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        nodes.append(node)
    kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(nodes))
    try:
        yield names
    finally:
        kubectl("delete", "node", *names, "--ignore-not-found", "--wait=true")
        # Their pods, at once: the pod garbage collector would take up to a minute.
        for name in names:
            kubectl("delete", "pod", "-A", "--field-selector", f"spec.nodeName={name}", "--force", "--grace-period=0")


def fractional_pod(name: str, node: str) -> dict[str, Any]:
    """A fractional pod bound to `node`, as KAI's binder binds one, meeting the admission policy."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": TEAM,
            "labels": {"kai.scheduler/queue": "default-queue", "runai-gpu-group": f"group-{node}"},
            "annotations": {"gpu-fraction": "0.5"},
        },
        "spec": {
            "nodeName": node,
            "runtimeClassName": "nvidia",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": "main",
                    "image": "nvidia/cuda:13.3.1-base-ubuntu24.04",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


def reservation_pod(node: str) -> dict[str, Any]:
    """KAI's reservation pod for a GPU group: bare, bound, asking for one whole GPU."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"gpu-reservation-{node}",
            "namespace": "kai-resource-reservation",
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": f"group-{node}"},
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "resource-reservation",
                    "image": "ghcr.io/kai-scheduler/resource-reservation",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


@dataclass
class Timeline:
    """What a watch of nodes and pods saw: the most nodes cordoned at once, and each pod that went
    with its node and the nodes cordoned at that moment."""

    cordoned: set[str] = field(default_factory=set)
    most_cordoned: int = 0
    gone: list[tuple[str, str, frozenset[str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def node(self, node: Any) -> None:
        with self.lock:
            (self.cordoned.add if node.spec.unschedulable else self.cordoned.discard)(node.metadata.name)
            self.most_cordoned = max(self.most_cordoned, len(self.cordoned))

    def pod(self, kind: str, pod: Any) -> None:
        if kind == "DELETED" or pod.metadata.deletion_timestamp:
            name = f"{pod.metadata.namespace}/{pod.metadata.name}"
            with self.lock:
                if all(gone != name for gone, _, _ in self.gone):
                    self.gone.append((name, pod.spec.node_name or "", frozenset(self.cordoned)))


@contextmanager
def watched() -> Iterator[Timeline]:
    """A Timeline of the block, from two watches that end with it."""
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(os.environ["KUBECONFIG"]))
    timeline, stop = Timeline(), threading.Event()
    for node in api.list_node().items:
        timeline.node(node)
    started = threading.Barrier(3)

    def follow(list_call: Any, handle: Any) -> None:
        version = list_call().metadata.resource_version
        started.wait()
        while not stop.is_set():
            stream = watch.Watch().stream(list_call, resource_version=version, timeout_seconds=1)
            for event in stream:
                version = event["object"].metadata.resource_version
                handle(event["type"], event["object"])

    threads = [
        threading.Thread(target=follow, args=(api.list_node, lambda _kind, node: timeline.node(node))),
        threading.Thread(target=follow, args=(api.list_pod_for_all_namespaces, timeline.pod)),
    ]
    for thread in threads:
        thread.start()
    started.wait()
    try:
        yield timeline
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
