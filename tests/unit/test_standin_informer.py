"""The stand-in operators' informer store: filled by their watches, read instead of the API server
once a kind is synced, and never behind the operators' own writes."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from standins.operators.cluster import Cluster
from standins.operators.informer import Store, matches, split_path
from standins.operators.watching import INITIAL_EVENTS_END, Alarm, watch_forever
from tests.unit.test_standin_watching import FakeWatches, line

PODS = "/api/v1/pods"


def pod(name: str, version: str, namespace: str = "team", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": version, "labels": labels}}


def end_of_initial_events(version: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": version, "annotations": {INITIAL_EVENTS_END: "true"}}}


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("/api/v1/pods", ("/api/v1/pods", "", "")),
        ("/api/v1/namespaces/team/pods", ("/api/v1/pods", "team", "")),
        ("/api/v1/namespaces/team/pods/job-0", ("/api/v1/pods", "team", "job-0")),
        ("/api/v1/namespaces", ("/api/v1/namespaces", "", "")),
        ("/api/v1/namespaces/team", ("/api/v1/namespaces", "", "team")),
        ("/api/v1/nodes/gpu-node-0", ("/api/v1/nodes", "", "gpu-node-0")),
        ("/apis/apps/v1/namespaces/gpu-operator/daemonsets", ("/apis/apps/v1/daemonsets", "gpu-operator", "")),
        (
            "/apis/nvidia.com/v1/clusterpolicies/cluster-policy",
            ("/apis/nvidia.com/v1/clusterpolicies", "", "cluster-policy"),
        ),
        ("/api/v1/nodes/gpu-node-0/status", None),
        ("/api/v1/namespaces/team/pods/job-0/status", None),
    ],
)
def test_a_path_names_its_watched_collection_namespace_and_name(url: str, where: tuple[str, str, str] | None) -> None:
    assert split_path(url) == where


# Each row was compared with what kube-apiserver v1.37.2 of this project's control plane returned
# for `kubectl get configmaps -l SELECTOR` over the same four label sets: the same names every time.
LABELS = {"a": {"x": "1", "y": "2"}, "b": {"x": "2"}, "c": {"y": "2"}, "d": {}}


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ("", "abcd"),
        ("x", "ab"),
        ("!x", "cd"),
        ("x=1", "a"),
        ("x==1", "a"),
        ("x!=1", "bcd"),
        ("x in (1,2)", "ab"),
        ("x notin (1)", "bcd"),
        ("x,y", "a"),
        ("x=1,y=2", "a"),
        ("!x,y", "c"),
        ("x in (1, 2),!y", "b"),
        ("y notin (2,3)", "bd"),
        ("x in (3)", ""),
    ],
)
def test_label_selectors_select_what_the_api_server_selects(selector: str, selected: str) -> None:
    assert "".join(name for name, labels in LABELS.items() if matches(labels, selector)) == selected


def test_a_selector_the_api_server_would_refuse_is_an_error_not_everything() -> None:
    with pytest.raises(ValueError, match="not a label selector requirement"):
        matches({}, "x in 1,2")


def test_a_kind_is_read_from_the_store_only_once_its_current_state_is_in() -> None:
    store = Store()
    store.restart(PODS)
    store.apply(PODS, "ADDED", pod("job-0", "5", app="mpsd"))
    assert store.get("/api/v1/namespaces/team/pods/job-0") == (False, None), "not synced: ask the API server"
    assert store.list(PODS) is None
    store.synced(PODS)
    assert store.get("/api/v1/namespaces/team/pods/job-0")[1] == pod("job-0", "5", app="mpsd")
    assert store.get("/api/v1/namespaces/team/pods/gone") == (True, None), "synced: a missing object is missing"
    assert store.get("/api/v1/nodes/gpu-node-0") == (False, None), "a kind no watch keeps"


def test_lists_filter_by_namespace_and_selector_and_hand_out_copies() -> None:
    store = Store()
    store.synced(PODS)
    for name, namespace, labels in (("a", "team", {"app": "mpsd"}), ("b", "team", {}), ("c", "other", {"app": "mpsd"})):
        store.apply(PODS, "ADDED", pod(name, "1", namespace, **labels))
    names = lambda found: sorted(p["metadata"]["name"] for p in found or [])  # noqa: E731
    assert names(store.list(PODS, "app=mpsd")) == ["a", "c"]
    assert names(store.list("/api/v1/namespaces/team/pods")) == ["a", "b"]
    assert names(store.list("/api/v1/namespaces/team/pods", "app=mpsd")) == ["a"]
    listed = store.list("/api/v1/namespaces/team/pods", "app=mpsd") or []
    listed[0]["metadata"]["labels"]["app"] = "changed by an operator"
    assert names(store.list(PODS, "app=mpsd")) == ["a", "c"], "what an operator does to a read stays its own"


def test_an_older_version_never_replaces_a_newer_one() -> None:
    store = Store()
    store.synced(PODS)
    store.apply(PODS, "MODIFIED", pod("job-0", "9", app="new"))  # the operator's own write, answered
    store.apply(PODS, "MODIFIED", pod("job-0", "7", app="old"))  # the watch catching up
    assert store.get("/api/v1/namespaces/team/pods/job-0")[1] == pod("job-0", "9", app="new")
    store.apply(PODS, "DELETED", pod("job-0", "8"))
    assert store.get("/api/v1/namespaces/team/pods/job-0")[1] is not None, "a deletion older than what is held"
    store.apply(PODS, "DELETED", pod("job-0", "10"))
    assert store.get("/api/v1/namespaces/team/pods/job-0") == (True, None)


def test_an_answer_that_arrives_after_the_deletion_it_caused_does_not_bring_the_object_back() -> None:
    """An operator removes the last finalizer of a deleting pod: the API server answers the patch with
    the pod (version 11) and deletes it (version 12); the watch's DELETED can be applied first."""
    store = Store()
    store.synced(PODS)
    store.apply(PODS, "ADDED", pod("mpsd-x", "10"))
    store.apply(PODS, "DELETED", pod("mpsd-x", "12"))
    store.apply(PODS, "MODIFIED", pod("mpsd-x", "11"))
    assert store.get("/api/v1/namespaces/team/pods/mpsd-x") == (True, None)
    store.apply(PODS, "ADDED", pod("mpsd-x", "15"))
    assert store.get("/api/v1/namespaces/team/pods/mpsd-x")[1] == pod("mpsd-x", "15"), "made again under its name"


def test_the_watch_fills_the_store_syncs_it_at_the_bookmark_and_starts_over_after_410() -> None:
    stop, alarm, store = threading.Event(), Alarm(), Store()
    synced_after_first: list[bool] = []

    class Watches(FakeWatches):
        def __call__(self, url: str, version: str) -> Any:
            if len(self.asked) == 1:
                synced_after_first.append(store.list(PODS) is not None)
            return super().__call__(url, version)

    watches = Watches(
        [
            [
                line("ADDED", pod("a", "3")),
                line("ADDED", pod("b", "4")),
                line("BOOKMARK", end_of_initial_events("4")),
                line("DELETED", pod("a", "6")),
            ],
            [line("ERROR", {"code": 410, "message": "too old"})],
            [line("ADDED", pod("c", "8"))],
        ],
        stop,
    )
    watch_forever(watches, PODS, alarm, stop, print, store=store)
    assert synced_after_first == [True], "synced at the bookmark, kept across a resumed watch"
    assert watches.asked == ["", "6", "", "8"]
    # After the 410 it started over: no bookmark yet, so the store does not answer.
    assert store.list(PODS) is None
    store.synced(PODS)
    assert [p["metadata"]["name"] for p in store.list(PODS) or []] == ["c"], "what it held before the 410 is gone"


class AnsweringCluster(Cluster):
    """The stand-ins' Cluster with the API server's answers scripted: each call is recorded."""

    def __init__(self, answers: dict[tuple[str, str], Any]) -> None:
        self.store, self.answers = Store(), answers
        self.calls: list[tuple[str, str]] = []

    def _call(self, method: str, url: str, body: Any = None, content_type: str = "", **query: str) -> Any:
        self.calls.append((method, url))
        return json.loads(json.dumps(self.answers.get((method, url))))


def test_reads_of_a_synced_kind_ask_the_api_server_nothing_and_see_the_operators_own_writes() -> None:
    url = "/api/v1/namespaces/team/pods"
    written = pod("job-0", "12", app="mpsd")
    status = {**written, "metadata": {**written["metadata"], "resourceVersion": "13"}, "status": {"phase": "Running"}}
    cluster = AnsweringCluster({("POST", url): written, ("PATCH", f"{url}/job-0/status"): status})
    cluster.store.synced(PODS)
    assert cluster.list(url, "app=mpsd") == [] and cluster.get(f"{url}/job-0") is None
    cluster.create(url, written)
    assert cluster.get(f"{url}/job-0") == written, "read right after its own create"
    cluster.patch(f"{url}/job-0/status", {"status": {"phase": "Running"}})
    assert cluster.list(url, "app=mpsd") == [status], "and after its own status patch"
    assert cluster.calls == [("POST", url), ("PATCH", f"{url}/job-0/status")], "no read went to the API server"


def test_a_delete_leaves_a_finalized_object_with_its_deletion_time_and_forgets_a_gone_one() -> None:
    url = "/api/v1/namespaces/team/pods"
    held = {**pod("held", "20"), "metadata": {**pod("held", "20")["metadata"], "deletionTimestamp": "now"}}
    cluster = AnsweringCluster(
        {("DELETE", f"{url}/held"): held, ("DELETE", f"{url}/gone"): {"kind": "Status", "status": "Success"}}
    )
    cluster.store.synced(PODS)
    for name in ("held", "gone"):
        cluster.store.apply(PODS, "ADDED", pod(name, "1"))
        cluster.delete(f"{url}/{name}")
    assert cluster.get(f"{url}/held") == held
    assert cluster.get(f"{url}/gone") is None


def test_a_kind_not_synced_and_a_field_selector_still_ask_the_api_server() -> None:
    nodes = {"items": [{"metadata": {"name": "gpu-node-0"}}]}
    cluster = AnsweringCluster({("GET", "/api/v1/nodes"): nodes, ("GET", PODS): {"items": []}})
    assert cluster.list("/api/v1/nodes") == nodes["items"]
    cluster.store.synced(PODS)
    assert cluster.list(PODS, field_selector="spec.nodeName=gpu-node-0") == []
    assert cluster.calls == [("GET", "/api/v1/nodes"), ("GET", PODS)]
