"""One Protocol over the one Kubernetes adapter: the checks take a Cluster; KubeClient is one, and so
is the unit tests' fake, call for call and signature for signature."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from components.cluster.client import KubeClient, warning_texts
from components.cluster.protocol import Cluster, Conflict, Json
from standins.operators.informer import matches
from tests.unit.fake_cluster import FakeCluster, field_selected

# KubeClient's calls no check makes: how a client is made, and the `kubectl debug` dry run only the
# integration tier's admission cases send.
NOT_FOR_THE_CHECKS = {"connect", "dry_run_debug"}


def calls(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, callable)
        if not name.startswith("_") and name in vars(cls)
    }


def test_the_protocol_is_kube_clients_calls_with_their_signatures() -> None:
    protocol, client = calls(Cluster), calls(KubeClient)
    assert set(client) - set(protocol) == NOT_FOR_THE_CHECKS, "a KubeClient call the checks make is in Cluster"
    assert {name: client[name] for name in protocol} == protocol


def test_the_fake_answers_every_call_with_the_same_signature() -> None:
    fake = calls(FakeCluster)
    assert {name: fake[name] for name in calls(Cluster)} == calls(Cluster)


def test_kube_client_and_the_fake_are_clusters() -> None:
    clusters: list[Cluster] = [KubeClient(None), FakeCluster()]  # what mypy proves
    assert len(clusters) == 2


def test_the_fake_selects_by_labels_and_fields_as_the_api_server_does() -> None:
    labels = {"app": "mpsd", "tier": "node"}
    assert matches(labels, "") and matches(labels, "app=mpsd") and matches(labels, "app==mpsd,tier")
    assert not matches(labels, "app=mpsd,tier!=node") and not matches(labels, "!tier") and not matches(labels, "x")
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "gpu-node-0"}}
    assert field_selected(pod, "spec.nodeName=gpu-node-0,metadata.name=p")
    assert not field_selected(pod, "spec.nodeName=gpu-node-1") and not field_selected(pod, "status.phase=Running")


def test_the_fake_records_what_changes_the_cluster() -> None:
    cluster = FakeCluster(created_phase="Running")
    cluster.create_pod("default", {"metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {"nodeName": "n"}})
    assert cluster.list_pods("default", "app=x", "spec.nodeName=n")[0]["status"] == {"phase": "Running"}
    cluster.delete_pod("default", "p")
    assert (cluster.created_pods, cluster.deleted_pods, cluster.read_pod("default", "p")) == (["p"], ["p"], None)
    cluster.put("queues.scheduling.run.ai", {"metadata": {"name": "q"}})
    assert cluster.delete_cluster_object("scheduling.run.ai", "v2", "queues", "q")
    assert not cluster.delete_cluster_object("scheduling.run.ai", "v2", "queues", "q"), "already gone"


class RefusingCore:
    """CoreV1Api's patch_node answering as the API server does for a stale resourceVersion (409), or
    with another error."""

    def __init__(self, status: int) -> None:
        self.status = status

    def patch_node(self, name: str, patch: Json, **_: Any) -> Any:
        from kubernetes.client import ApiException

        raise ApiException(status=self.status, reason="Conflict" if self.status == 409 else "Forbidden")


def test_a_node_patch_the_api_server_refuses_as_stale_is_a_conflict_and_any_other_error_is_not() -> None:
    from kubernetes.client import ApiException

    cluster = KubeClient(None)
    cluster.core = RefusingCore(409)
    with pytest.raises(Conflict, match="node gpu-node-0 changed since it was read"):
        cluster.patch_node("gpu-node-0", {"metadata": {"resourceVersion": "1"}})
    cluster.core = RefusingCore(403)
    with pytest.raises(ApiException):
        cluster.patch_node("gpu-node-0", {"spec": {"unschedulable": True}})


def test_warning_headers_are_read_as_the_api_server_writes_them() -> None:
    """Header values as k8s.io/apimachinery v0.37.2 NewWarningHeader formats them: code 299, agent
    `-`, the text quoted with `"` and `\\` escaped, one warning per header line; RFC 7234 also lets a
    line hold several, each with an optional date."""
    policy = "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': container(s) main run as UID 0"
    assert warning_texts([f'299 - "{policy}"']) == (policy,)
    assert warning_texts(['299 - "a \\"quoted\\" word, and a \\\\"', '299 - "second"']) == (
        'a "quoted" word, and a \\',
        "second",
    )
    assert warning_texts(['299 - "one", 299 kube-apiserver "two" "Sat, 05 Dec 2026 19:00:00 GMT", 299 - "three"']) == (
        "one",
        "two",
        "three",
    )
    # http.client reads the UTF-8 the API server writes as latin-1.
    assert warning_texts(['299 - "größe"'.encode().decode("latin-1")]) == ("größe",)
    assert warning_texts(['199 - "not the API server\'s"', '299 - ""', "not a warning", ""]) == ()
    assert warning_texts(['299 - "kept", garbage', '299 - "unterminated']) == ("kept",)
