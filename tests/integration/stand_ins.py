"""Test doubles for what runs on a GPU cluster but not on the local control plane.

Each says what it stands in for; none of them models a GPU. They exist so the program's own code
paths (the proofs reading pods, queues, webhooks' effects and logs) run against a real API server.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Self

import yaml

from components.cluster.facts import parse_quantity
from components.proofs.smoke import DEVICE_QUERY_POD
from standins.operators.cluster import Cluster, path
from standins.operators.watching import Alarm, run_rounds, watch_forever
from tests.integration.workspace import kubectl

GPU = "nvidia.com/gpu"


def cri_log(source: Path, target: Path) -> Path:
    """kwok serves a Logs file in the container runtime's log format: one stamped line per line."""
    lines = source.read_text().splitlines()
    target.write_text("".join(f"2026-11-30T00:00:00.000000000Z stdout F {line}\n" for line in lines))
    return target


CHECK_POD_LOGS = "preflight-check-pods"


def check_pods_print(report: Path, work: Path) -> None:
    """Makes every preflight check pod "print" a host report: kwok completes the check pod
    (standins/kwok/stages.yaml) and serves its log from the file a ClusterLogs object names,
    so the runner's create, wait, log read and delete all run. Undo with `check_pods_print_nothing`."""
    log = cri_log(report, work / f"{report.name}.cri.log")
    logs = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": CHECK_POD_LOGS},
        "spec": {"selector": {"matchNamespaces": ["kube-system"]}, "logs": [{"logsFile": str(log)}]},
    }
    kubectl("apply", "-f", "-", input_text=yaml.safe_dump(logs))


def check_pods_print_nothing() -> None:
    kubectl("delete", "clusterlogs.kwok.x-k8s.io", CHECK_POD_LOGS, "--ignore-not-found")


DEVICE_QUERY_LOGS = "rollout-device-query"
PROOF_EVIDENCE = Path(__file__).parents[1] / "fixtures" / "proof"


@contextmanager
def device_query_on_nodes_prints(nodes: list[str], work: Path, fixture: str = "devicequery-half.txt") -> Iterator[None]:
    """What deviceQuery prints in the pod a driver rollout runs on each of `nodes` to prove it (kwok
    completes the pod, standins/kwok/stages.yaml): a guide-shaped fixture of tests/fixtures/proof."""
    log = cri_log(PROOF_EVIDENCE / fixture, work / f"rollout-{fixture}.cri.log")
    names = [f"{DEVICE_QUERY_POD}-{node}" for node in nodes]
    logs = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": DEVICE_QUERY_LOGS},
        "spec": {"selector": {"matchNames": names}, "logs": [{"logsFile": str(log)}]},
    }
    kubectl("apply", "-f", "-", input_text=yaml.safe_dump(logs))
    try:
        yield
    finally:
        kubectl("delete", "clusterlogs.kwok.x-k8s.io", DEVICE_QUERY_LOGS, "--ignore-not-found")


QUEUES = path("scheduling.run.ai/v2", "queues")
PODS_AND_QUEUES = ("/api/v1/pods", QUEUES)


class StandInQueueAccounting:
    """Stands in for KAI's scheduler writing a Queue's status.allocated: the sum, over the queue's
    Running pods, of whole GPUs requested and the `gpu-memory` share of the node's GPU memory.

    It reacts as the stand-in operators do (standins/operators/watching.py): a watch of pods and one
    of queues wake it, with their periodic resync, and it writes the status only when the sum
    changes; idle, it makes no call."""

    def __init__(self, queue: str, gpu_memory_mib: int) -> None:
        self.queue, self.gpu_memory_mib = queue, gpu_memory_mib
        self._stop, self._alarm = threading.Event(), Alarm()
        self._threads: list[threading.Thread] = []
        self._cluster: Cluster | None = None

    def __enter__(self) -> Self:
        self._cluster = cluster = Cluster(os.environ["KUBECONFIG"])
        watches = [
            (watch_forever, (cluster.open_watch, url, self._alarm, self._stop, self.say)) for url in PODS_AND_QUEUES
        ]
        rounds = (run_rounds, (lambda _now: self.round_(cluster), self._alarm, self._stop))
        for target, args in (*watches, rounds):
            thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._alarm.ring()
        self._threads[-1].join(timeout=10)
        if self._cluster is not None:
            self._cluster.close()  # the watches' streams end, and their threads with them
        for thread in self._threads:
            thread.join(timeout=10)

    def say(self, line: str) -> None:
        if not self._stop.is_set():  # once stopped, its watches end with an error on purpose
            print(f"stand-in queue accounting: {line}", file=sys.stderr)

    def allocated(self, pods: list[dict[str, Any]]) -> float:
        total = 0.0
        for pod in pods:
            metadata, spec = pod["metadata"], pod["spec"]
            if metadata.get("labels", {}).get("kai.scheduler/queue") != self.queue:
                continue
            if pod.get("status", {}).get("phase") != "Running":
                continue
            for container in spec.get("containers", []):
                total += parse_quantity(str(container.get("resources", {}).get("limits", {}).get(GPU, "0")))
            memory = metadata.get("annotations", {}).get("gpu-memory")
            if memory:
                total += int(memory) / self.gpu_memory_mib
        return total

    def round_(self, cluster: Cluster) -> bool:
        """One look: False when it failed, so the round is tried again soon (a queue kind not served
        yet reads as no queue)."""
        try:
            queue = cluster.get(f"{QUEUES}/{self.queue}")
            if queue is None:
                return True
            allocated = f"{round(self.allocated(cluster.list('/api/v1/pods')) * 1000)}m"
            status = {"allocated": {GPU: allocated}, "requested": {GPU: allocated}}
            if {key: (queue.get("status") or {}).get(key) for key in status} != status:
                cluster.patch(f"{QUEUES}/{self.queue}/status", {"status": status})
            return True
        except Exception as error:  # a stand-in that stops silently makes a confusing failure
            self.say(f"{error!r}, trying again")
            return False


# What kai-resource-isolator's webhook adds to a pod that asks for a GPU share (the lab's shape).
ISOLATOR_PATCH_VOLUMES = [
    {"name": "vgpu", "hostPath": {"path": "/usr/local/vgpu"}},
    {"name": "ld-so-preload", "hostPath": {"path": "/usr/local/vgpu/ld.so.preload", "type": "File"}},
]
ISOLATOR_PATCH_MOUNTS = [
    {"name": "vgpu", "mountPath": "/usr/local/vgpu"},
    {"name": "ld-so-preload", "mountPath": "/etc/ld.so.preload"},
]


def isolator_patch(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON patch the stand-in isolator returns: nothing for pods without a GPU share."""
    annotations = pod.get("metadata", {}).get("annotations") or {}
    if "gpu-memory" not in annotations and "gpu-fraction" not in annotations:
        return []
    patch: list[dict[str, Any]] = [{"op": "add", "path": "/spec/volumes", "value": ISOLATOR_PATCH_VOLUMES}]
    if pod["spec"].get("volumes"):
        patch = [{"op": "add", "path": "/spec/volumes/-", "value": v} for v in ISOLATOR_PATCH_VOLUMES]
    for index, container in enumerate(pod["spec"]["containers"]):
        base = f"/spec/containers/{index}/volumeMounts"
        if container.get("volumeMounts"):
            patch += [{"op": "add", "path": f"{base}/-", "value": m} for m in ISOLATOR_PATCH_MOUNTS]
        else:
            patch.append({"op": "add", "path": base, "value": ISOLATOR_PATCH_MOUNTS})
    return patch


Patcher = Callable[[dict[str, Any]], list[dict[str, Any]]]


class _AdmissionHandler(BaseHTTPRequestHandler):
    server: _AdmissionServer

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        patch = self.server.patcher(request["object"])
        if patch:
            response |= {"patchType": "JSONPatch", "patch": base64.b64encode(json.dumps(patch).encode()).decode()}
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: Any) -> None:  # quiet test output
        pass


class _AdmissionServer(HTTPServer):
    def __init__(self, patcher: Patcher) -> None:
        super().__init__(("127.0.0.1", 0), _AdmissionHandler)
        self.patcher = patcher


class StandInMutatingWebhook:
    """A real HTTPS admission server on 127.0.0.1, registered with the API server for pods created
    in `namespace`, answering with `patcher`'s JSON patch."""

    def __init__(self, name: str, patcher: Patcher, workdir: Path, namespace: str = "default") -> None:
        self.name, self.patcher, self.workdir, self.namespace = name, patcher, workdir, namespace
        self._server: _AdmissionServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        cert, key = self.workdir / f"{self.name}.crt", self.workdir / f"{self.name}.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
            + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server = _AdmissionServer(self.patcher)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        port = self._server.server_address[1]
        kubectl("apply", "-f", "-", input_text=yaml.safe_dump(self._configuration(port, cert.read_bytes())))
        return self

    def __exit__(self, *_: object) -> None:
        kubectl("delete", "mutatingwebhookconfiguration", self.name, "--ignore-not-found")
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def _configuration(self, port: int, ca: bytes) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.name},
            "webhooks": [
                {
                    "name": f"pods.{self.name}.test",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}/mutate",
                        "caBundle": base64.b64encode(ca).decode(),
                    },
                    "rules": [
                        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}},
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Ignore",
                    "timeoutSeconds": 5,
                }
            ],
        }


def isolator_webhook(workdir: Path) -> StandInMutatingWebhook:
    """Stands in for kai-resource-isolator's mutating webhook: mounts HAMi-core's paths into pods
    with a GPU share in the default namespace."""
    return StandInMutatingWebhook("stand-in-kai-resource-isolator", isolator_patch, workdir)
