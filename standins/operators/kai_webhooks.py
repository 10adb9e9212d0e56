"""STAND-IN for the webhooks KAI-Scheduler's operator registers and its pods serve.

Replays standins/upstream/kai-scheduler/webhook-configurations.yaml (see its provenance): the
operator registers all four configurations, `failurePolicy: Fail`, owned by Config `kai-config`, in
the reconcile that creates its Deployments; admission, queue-controller and podgroup-controller
answer them only once their pods have started. Here each answers the `kai-webhooks` delay after
its Deployment exists; `never` leaves them registered and unanswered. Until then its port is
reserved but not listening, so the API server's call is refused, as for a Service without endpoints.

One difference, so that traffic stays on this machine: each webhook is called at
`https://127.0.0.1:<port><path>` with the stand-in's own CA, instead of through its Service, whose
cluster IP routes off the machine; a configuration that would still call off it is not registered
at all. The queue webhook refuses a Queue without `spec.resources` in
upstream's words (`pkg/apis/scheduling/v2/queue_webhook.go`); the pod and PodGroup webhooks admit
everything (KAI's admission plugins' checks of GPU-sharing pods are not replayed).
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import yaml

from standins.operators.cluster import Cluster, FirstSeen, Json, name_of, owned_by, path, webhooks_off_the_machine
from standins.operators.knobs import Knobs

RECORDED = Path(__file__).parents[1] / "upstream/kai-scheduler/webhook-configurations.yaml"
RECORDED_NAMESPACE = "kai-scheduler"
# The Deployment whose pods serve each recorded configuration.
SERVED_BY = {
    "mutating-kai-admission": "admission",
    "validating-kai-admission": "admission",
    "kai-queue-validation-v2": "queue-controller",
    "kai-podgroup-validation-v2alpha2": "podgroup-controller",
}
QUEUE_PATH = "/validate-scheduling-run-ai-v2-queue"
MISSING_RESOURCES = "resources must be specified"


def recorded_configurations() -> list[Json]:
    return [doc for doc in yaml.safe_load_all(RECORDED.read_text()) if doc]


def review_response(request_path: str, request: Json) -> Json:
    """What the serving pod answers for one AdmissionReview request."""
    response: Json = {"uid": request["uid"], "allowed": True}
    obj = request.get("object") or {}
    if request_path == QUEUE_PATH and not (obj.get("spec") or {}).get("resources"):
        response |= {
            "allowed": False,
            "warnings": [MISSING_RESOURCES],
            "status": {"code": 403, "reason": "Forbidden", "message": MISSING_RESOURCES},
        }
    return response


def client_configs(configuration: Json) -> list[Json]:
    return [w.get("clientConfig") or {} for w in configuration.get("webhooks") or []]


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": review_response(self.path, review["request"]),
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:  # the operators' log is for their own steps
        pass


class ServingPod:
    """One Deployment's webhook server on 127.0.0.1: its port is bound at once (so the registered
    URL never changes while it runs) and listens only once `start` is called."""

    def __init__(self, tls: ssl.SSLContext, port: int = 0) -> None:
        self.tls = tls
        self.server = HTTPServer(("127.0.0.1", port), _Handler, bind_and_activate=False)
        self.server.server_bind()
        self.port = int(self.server.server_address[1])
        self.serving = False

    def start(self) -> None:
        self.server.server_activate()
        self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.serving = True

    def stop(self) -> ServingPod:
        """Stops answering; returns a pod bound to the same port, not listening yet."""
        if self.serving:
            self.server.shutdown()
        self.server.server_close()
        return ServingPod(self.tls, self.port)


class KaiWebhooks:
    def __init__(self, workdir: Path) -> None:
        cert, key = workdir / "kai-webhooks.crt", workdir / "kai-webhooks.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj", "/CN=127.0.0.1"]
            + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
            check=True,
            capture_output=True,
        )
        self.ca_bundle = base64.b64encode(cert.read_bytes()).decode()
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(cert, key)
        self.pods = {deployment: ServingPod(tls) for deployment in dict.fromkeys(SERVED_BY.values())}
        self.first_seen = FirstSeen()

    def register(self, cluster: Cluster, config: Json, namespace: str) -> None:
        """What the operator does in the reconcile that creates the Deployments."""
        for recorded in recorded_configurations():
            body = self.configuration(recorded, config, namespace)
            if off := webhooks_off_the_machine(body):
                raise RuntimeError(f"not registered, the API server would call off this machine: {'; '.join(off)}")
            url = path("admissionregistration.k8s.io/v1", f"{recorded['kind'].lower()}s")
            existing = cluster.get(f"{url}/{name_of(body)}")
            if existing is None:
                cluster.create(url, body)
            elif client_configs(existing) != client_configs(body):  # the API server adds defaults to the rest
                cluster.patch(f"{url}/{name_of(body)}", {"webhooks": body["webhooks"]})

    def configuration(self, recorded: Json, config: Json, namespace: str) -> Json:
        body = json.loads(json.dumps(recorded).replace(f".{RECORDED_NAMESPACE}.svc", f".{namespace}.svc"))
        body["metadata"]["ownerReferences"] = owned_by(config)
        port = self.pods[SERVED_BY[name_of(recorded)]].port
        for webhook in body["webhooks"]:
            service = webhook["clientConfig"].pop("service")
            webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{service['path']}", "caBundle": self.ca_bundle}
            for selector in (webhook.get("namespaceSelector") or {}).get("matchExpressions") or []:
                selector["values"] = [namespace if v == RECORDED_NAMESPACE else v for v in selector["values"]]
        return copy.deepcopy(body)

    def serve(self, cluster: Cluster, knobs: Knobs, now: float, namespace: str | None) -> None:
        """Each Deployment's pods answer once they have had time to start, and stop with it."""
        delay = knobs.delay("kai-webhooks")
        present = {name_of(d): d for d in cluster.list(path("apps/v1", "deployments", namespace))} if namespace else {}
        for deployment, pod in list(self.pods.items()):
            found = present.get(deployment)
            if found is None or delay is None:
                if pod.serving:
                    self.pods[deployment] = pod.stop()
                continue
            if not pod.serving and self.first_seen.reached(found, now, delay):
                pod.start()
