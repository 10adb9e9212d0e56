"""More stand-in GPU nodes for a test, fractional pods to run on them, a node the GPU Operator's own
upgrade controller got stuck on, and a record of what a rollout did to them: which nodes were
cordoned at once, and which nodes were cordoned when each pod went."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.vocabulary.kai import RESERVATION_NAMESPACE
from components.vocabulary.nvidia import UPGRADE_STATE_LABEL
from tests.integration.workspace import REPO, kubectl, kubectl_json, wait_until

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
            "namespace": RESERVATION_NAMESPACE,
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


def upgrade_state(node: str) -> str:
    return str(kubectl_json("get", "node", node)["metadata"]["labels"].get(UPGRADE_STATE_LABEL, ""))


def _upgrade_policy(auto_upgrade: bool, driver: str) -> str:
    return json.dumps({"spec": {"driver": {"version": driver, "upgradePolicy": {"autoUpgrade": auto_upgrade}}}})


@contextmanager
def stuck_in_a_driver_upgrade(node: str, driver: str = "615.99.00") -> Iterator[None]:
    """The GPU Operator's own upgrade controller switched on by hand with a new driver while KAI's
    ownerless reservation pod holds a GPU on `node`. The control plane's upgrade controller runs the
    real state machine (k8s-operator-libs), which cordons the node and, unable to delete that pod,
    leaves it in upgrade-failed before any driver pod is touched (day2-upstream.md 1.2, 1.4).
    Afterwards the controller is off again, which removes the label, and the node is uncordoned."""
    installed = kubectl_json("get", "clusterpolicy", "cluster-policy")["spec"]["driver"]["version"]
    kubectl("create", "namespace", RESERVATION_NAMESPACE, check=False)
    kubectl("apply", "-f", "-", input_text=yaml.safe_dump(reservation_pod(node)))
    kubectl("patch", "clusterpolicy", "cluster-policy", "--type=merge", "-p", _upgrade_policy(True, driver))
    try:
        wait_until(lambda: upgrade_state(node) == "upgrade-failed", 120, f"{node} in upgrade-failed")
        yield
    finally:
        kubectl("patch", "clusterpolicy", "cluster-policy", "--type=merge", "-p", _upgrade_policy(False, installed))
        wait_until(lambda: upgrade_state(node) == "", 120, f"the upgrade state label gone from {node}")
        kubectl("-n", RESERVATION_NAMESPACE, "delete", "pod", f"gpu-reservation-{node}", "--wait=true")
        kubectl("uncordon", node)


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
