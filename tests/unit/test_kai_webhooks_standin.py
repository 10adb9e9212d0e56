"""The stand-in KAI webhooks are no more forgiving than the real ones: registered fail-closed before
they answer, and reached on loopback only."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path

import pytest

from standins.operators.cluster import Cluster, Json, webhooks_off_the_machine
from standins.operators.kai_webhooks import MISSING_RESOURCES, QUEUE_PATH, KaiWebhooks, recorded_configurations

CONFIG = {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config", "uid": "u-1"}}


def review(port: int, obj: dict[str, object]) -> dict[str, object]:
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    body = json.dumps({"request": {"uid": "r-1", "object": obj}}).encode()
    request = urllib.request.Request(f"https://127.0.0.1:{port}{QUEUE_PATH}", data=body)
    answer: dict[str, object] = json.loads(urllib.request.urlopen(request, context=tls, timeout=5).read())["response"]
    return answer


def test_a_webhook_refuses_connections_until_its_pod_starts_and_then_answers_as_upstream(tmp_path: Path) -> None:
    webhooks = KaiWebhooks(tmp_path)
    pod = webhooks.pods["queue-controller"]
    with pytest.raises(OSError):
        review(pod.port, {"spec": {}})
    pod.start()
    try:
        refused = review(pod.port, {"spec": {}})
        assert refused["allowed"] is False and refused["status"] == {  # type: ignore[comparison-overlap]
            "code": 403,
            "reason": "Forbidden",
            "message": MISSING_RESOURCES,
        }
        assert review(pod.port, {"spec": {"resources": {"gpu": {"quota": -1}}}})["allowed"] is True
    finally:
        webhooks.pods["queue-controller"] = pod.stop()
    with pytest.raises(OSError):
        review(pod.port, {"spec": {}})


def test_registered_configurations_keep_upstream_rules_and_call_loopback_only(tmp_path: Path) -> None:
    webhooks = KaiWebhooks(tmp_path)
    for recorded in recorded_configurations():
        body = webhooks.configuration(recorded, CONFIG, "kai-system")
        assert body["metadata"]["ownerReferences"][0]["uid"] == "u-1", "garbage-collected with kai-config"
        for webhook, original in zip(body["webhooks"], recorded["webhooks"], strict=True):
            assert webhook["failurePolicy"] == "Fail" and webhook["rules"] == original["rules"]
            assert set(webhook["clientConfig"]) == {"url", "caBundle"}
            assert webhook["clientConfig"]["url"].startswith("https://127.0.0.1:")
            assert webhook["clientConfig"]["url"].endswith(original["clientConfig"]["service"]["path"])
            for selector in (webhook.get("namespaceSelector") or {}).get("matchExpressions", []):
                assert selector["values"] == ["kube-system", "kai-system"], "KAI's own namespace is skipped"
        if recorded["metadata"]["name"].endswith("kai-admission"):
            assert body["webhooks"][0]["name"] == "admission.kai-system.svc"


class RecordingCluster(Cluster):
    """Remembers what the stand-in would create; nothing is registered yet."""

    def __init__(self) -> None:
        self.created: list[Json] = []

    def get(self, url: str) -> Json | None:
        return None

    def create(self, url: str, body: Json) -> None:
        self.created.append(body)


def test_every_recorded_webhook_calls_a_service_and_none_of_the_registered_ones_does(tmp_path: Path) -> None:
    recorded = recorded_configurations()
    off = [found for configuration in recorded for found in webhooks_off_the_machine(configuration)]
    assert len(off) == sum(len(c["webhooks"]) for c in recorded) and all("'namespace'" in f for f in off)
    cluster = RecordingCluster()
    KaiWebhooks(tmp_path).register(cluster, CONFIG, "kai-system")
    assert len(cluster.created) == len(recorded)
    assert [found for body in cluster.created for found in webhooks_off_the_machine(body)] == []


@pytest.mark.parametrize(
    "client",
    [
        {"service": {"namespace": "kai-scheduler", "name": "admission", "path": "/mutate--v1-pod"}},
        {"url": "https://10.96.0.12:443/mutate--v1-pod"},
        {"url": "https://admission.kai-scheduler.svc/mutate--v1-pod"},
        {},
    ],
    ids=["service", "cluster-ip", "service-dns-name", "nothing"],
)
def test_a_webhook_that_would_leave_the_machine_is_never_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: Json
) -> None:
    webhooks, cluster = KaiWebhooks(tmp_path), RecordingCluster()
    build = webhooks.configuration

    def leaving(recorded: Json, config: Json, namespace: str) -> Json:
        body = build(recorded, config, namespace)
        body["webhooks"][-1]["clientConfig"] = client
        return body

    monkeypatch.setattr(webhooks, "configuration", leaving)
    with pytest.raises(RuntimeError, match="not registered, the API server would call off this machine"):
        webhooks.register(cluster, CONFIG, "kai-system")
    assert cluster.created == []
