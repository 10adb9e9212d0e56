"""Proof after install: each of the guide's Step 5 checks, the SM share, and the lab, decided from evidence."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.cluster.checking import CheckProvider
from components.cluster.client import KubeClient
from components.cluster.engine import ClusterAccess, spec_props
from components.cluster.results import (
    CheckResult,
    ProofFailed,
    default_container,
    format_results,
    raise_on_failure,
)
from components.cluster.waiting import Clock, retry
from components.lab.lab_pods import SHARED_POD
from components.proofs.lab import AllocatableSpec, LabSpec, prove_lab, wait_for_allocatable
from components.proofs.lab_decisions import (
    decide_allocatable,
    decide_isolator_injection,
    decide_queue_allocation,
    decide_reservation_boundary,
    parse_queue_division_log,
    queue_allocated_gpus,
)
from components.proofs.resources import LabProof, LabProofProvider, SmokeProof, SmokeProofProvider
from components.proofs.smoke import (
    DEVICE_QUERY_POD,
    HOSTILE_MEMORY_QUERY,
    NAMESPACE_LIST,
    SmokeSpec,
    device_query_pod_manifest,
    prove_smoke,
)
from components.proofs.smoke_decisions import (
    MpsNamespace,
    binder_annotations,
    decide_binder,
    decide_env,
    decide_memory_view,
    decide_namespaces,
    decide_sm_share,
    expected_memory_cap_mib,
    parse_device_query,
    parse_env,
    parse_memory_total,
    parse_namespace_list,
    sm_count_for_product,
)
from components.vocabulary.fractioning import MPSD_SELECTOR
from components.vocabulary.kai import QUEUE_GROUP, QUEUE_PLURAL
from tests.proof_evidence import parse_annotation_grep
from tests.unit.fake_cluster import FakeCluster, labels_of, resource

PROOF = Path(__file__).resolve().parents[1] / "fixtures" / "proof"
LAB = PROOF / "lab"
REPO = Path(__file__).resolve().parents[2]
UUID = "GPU-8f6c1c2e-5b1a-4d1e-9a7f-3c2b1d0e4f51"


def text(name: str) -> str:
    return (PROOF / name).read_text()


def smoke_annotations() -> dict[str, dict[str, str]]:
    return {
        "fraction-smoke-a": parse_annotation_grep(text("annotations-fraction-smoke-a.txt")),
        "fraction-smoke-b": parse_annotation_grep(text("annotations-fraction-smoke-b.txt")),
    }


# ---------------------------------------------------------------- 1. binder annotations


def test_the_guides_annotation_grep_output_is_parsed_per_container_key() -> None:
    decision = binder_annotations(parse_annotation_grep(text("annotations-fraction-smoke-a.txt")))
    assert (decision.portion, decision.memory_request, decision.devices) == ("0.5", "19968Mi", UUID)


def test_two_pods_with_portion_memory_and_one_real_gpu_uuid_pass() -> None:
    result = decide_binder(smoke_annotations())
    assert result.passed, result.detail
    assert UUID in result.detail, "the shared GPU is named"


def test_a_pod_without_a_gpus_devices_uuid_points_at_a_mismatched_scheduler_and_agent() -> None:
    pods = {
        **smoke_annotations(),
        "fraction-smoke-b": parse_annotation_grep(text("annotations-upstream-scheduler.txt")),
    }
    result = decide_binder(pods)
    assert not result.passed, "an empty UUID means the pair is mismatched"
    assert "no gpu-compute.portion" in result.detail and "pinned commits" in result.detail, result.detail


def test_two_pods_on_different_gpus_fail() -> None:
    pods = smoke_annotations()
    other = UUID.replace("8f6c", "0a1b")
    pods["fraction-smoke-b"] = {**pods["fraction-smoke-b"], "nvidia.com/container.main.gpus.devices": other}
    result = decide_binder(pods)
    assert not result.passed and "different GPUs" in result.detail, result.detail


# ---------------------------------------------------------------- 2. injected environment


def test_the_memory_cap_is_half_of_the_gpu_after_the_mps_servers_gib() -> None:
    assert expected_memory_cap_mib(40960, 0.5) == 19968, "(40960 − 1024) × 0.5, as the deploy guide shows"
    assert expected_memory_cap_mib(81920, 0.25) == 20224, "(81920 − 1024) × 0.25"


def test_the_injected_environment_carries_the_share_and_the_pinned_limit() -> None:
    result = decide_env(parse_env(text("env-fraction-smoke-a.txt")), 0.5, 40960)
    assert result.passed, result.detail
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=19968M" in result.detail, result.detail


def test_env_values_with_equals_signs_are_kept_whole() -> None:
    assert parse_env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=19968M\n")["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=19968M"


def test_a_container_without_cuda_mps_variables_means_fractiond_did_not_register_with_nri() -> None:
    result = decide_env(parse_env(text("env-without-nri.txt")), 0.5, 40960)
    assert not result.passed and "NRI plugin" in result.detail, result.detail


def test_a_wrong_share_or_limit_fails_naming_the_variable() -> None:
    env = {**parse_env(text("env-fraction-smoke-a.txt")), "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100"}
    result = decide_env(env, 0.5, 40960)
    assert not result.passed and "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100, expected 50" in result.detail, result.detail
    env = {**parse_env(text("env-fraction-smoke-a.txt")), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=40960M"}
    assert not decide_env(env, 0.5, 40960).passed, "the whole card is not the cap"


def test_visible_devices_void_is_the_mismatched_pair() -> None:
    result = decide_env({"NVIDIA_VISIBLE_DEVICES": "void"}, 0.5, 40960)
    assert not result.passed and "pinned commits" in result.detail, result.detail


# ---------------------------------------------------------------- 3. MPS namespaces


def test_the_namespace_list_table_is_parsed_with_its_multi_word_headers() -> None:
    namespaces = parse_namespace_list(text("namespace-list-shared.txt"))
    assert [(n.name[:4], n.server, n.pinned_memory_limit, n.active_thread_percentage) for n in namespaces] == [
        ("kai_", "shared", "unlimited", 50.0),
        ("kai_", "shared", "unlimited", 50.0),
        ("defa", "shared", "unlimited", 10.0),
    ]


def test_the_csv_form_of_the_namespace_list_is_parsed_too() -> None:
    namespaces = parse_namespace_list("kai_a_1,shared,Ready,unlimited,50.00\ndefault,shared,Ready,unlimited,10.00\n")
    assert [n.active_thread_percentage for n in namespaces] == [50.0, 10.0], "csv,noheader"


def test_two_kai_namespaces_at_fifty_and_default_at_ten_pass() -> None:
    result = decide_namespaces(parse_namespace_list(text("namespace-list-shared.txt")), pods=2, fraction=0.5)
    assert result.passed, result.detail


def test_an_uncapped_namespace_and_default_fail() -> None:
    result = decide_namespaces(parse_namespace_list(text("namespace-list-uncapped.txt")), pods=2, fraction=0.5)
    assert not result.passed, "one pod's namespace is at 100 %"
    assert "1 kai_* namespaces at 50.00, expected 2" in result.detail, result.detail
    assert "default namespace at 100.0, expected 10.00" in result.detail, result.detail


def test_no_default_namespace_fails() -> None:
    capped = [MpsNamespace(f"kai_{i}", "shared", "unlimited", 50.0) for i in range(2)]
    assert not decide_namespaces(capped, pods=2, fraction=0.5).passed, "default caps the server's own pipe at 10 %"


# ---------------------------------------------------------------- 4. memory view


def test_the_pod_sees_its_capped_memory_under_a_hostile_override() -> None:
    result = decide_memory_view(parse_memory_total(text("memory-total-capped.txt")), 19968, 40960)
    assert result.passed, result.detail


def test_the_physical_cards_memory_means_the_nvml_shim_is_not_active() -> None:
    result = decide_memory_view(parse_memory_total(text("memory-total-physical.txt")), 19968, 40960)
    assert not result.passed and "NVML shim" in result.detail, result.detail
    assert not decide_memory_view(None, 19968, 40960).passed, "no answer is no proof"


# ---------------------------------------------------------------- the SM share


def test_device_query_under_a_100_percent_override_reports_half_the_sms() -> None:
    query = parse_device_query(text("devicequery-half.txt"))
    assert (query.multiprocessors, query.result) == (54, "PASS"), "the guide's (054) Multiprocessors"
    result = decide_sm_share(query, 108, 0.5)
    assert result.passed and "54 of 108 SMs" in result.detail, result.detail


def test_the_full_sm_count_means_the_override_won() -> None:
    result = decide_sm_share(parse_device_query(text("devicequery-uncapped.txt")), 108, 0.5)
    assert not result.passed and "not enforced" in result.detail, result.detail


def test_a_device_query_without_a_multiprocessors_line_fails() -> None:
    result = decide_sm_share(parse_device_query("cudaGetDeviceCount returned 100\nResult = FAIL\n"), 108, 0.5)
    assert not result.passed and "FAIL" in result.detail, result.detail


def test_the_device_query_pod_is_the_guides_non_root_half_gpu_pod_that_asks_for_everything() -> None:
    pod = device_query_pod_manifest("default", "default-queue", 0.5)
    assert pod["metadata"]["name"] == DEVICE_QUERY_POD
    assert pod["metadata"]["annotations"] == {
        "gpu-fraction": "0.5",
        "nvidia.com/container.main.gpu-compute.mode": "sm-sharing",
    }, "a half-GPU sm-sharing pod"
    container = pod["spec"]["containers"][0]
    assert container["env"] == [{"name": "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "value": "100"}], "the hostile override"
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True, "a root client could raise its own cap"


def test_sm_counts_come_from_the_gpu_product_label() -> None:
    assert sm_count_for_product("NVIDIA-A100-SXM4-40GB") == 108
    assert sm_count_for_product("NVIDIA-H100-80GB-HBM3") == 132
    assert sm_count_for_product("NVIDIA-H100-PCIe") == 114
    assert sm_count_for_product("Tesla-T4") is None, "unknown products need smCount"


# ---------------------------------------------------------------- the lab


def test_the_lab_node_advertises_eight_whole_gpus() -> None:
    assert decide_allocatable({"kai-hami-test-control-plane": {"nvidia.com/gpu": "8"}}, 8).passed
    result = decide_allocatable({"kai-hami-test-control-plane": {"nvidia.com/gpu": "80"}}, 8)
    assert not result.passed and "80" in result.detail, result.detail
    assert not decide_allocatable({}, 8).passed, "no node, no GPUs"


def test_the_queue_status_counts_the_whole_gpu_and_the_shared_slice() -> None:
    allocated = queue_allocated_gpus(json.loads((LAB / "queue-default-queue.json").read_text()))
    assert allocated == pytest.approx(1.51), "1510m"
    result = decide_queue_allocation(allocated, "default-queue", 1, 0.5)
    assert result.passed and "1 whole + 0.51 shared" in result.detail, result.detail
    assert not decide_queue_allocation(1.0, "default-queue", 1, 0.5).passed, "the shared pod is not accounted"
    assert not decide_queue_allocation(None, "default-queue", 1, 0.5).passed, "no status, no proof"


def test_the_schedulers_division_log_gives_the_same_number() -> None:
    log = (LAB / "scheduler-division.log").read_text()
    assert parse_queue_division_log(log, "default-queue") == pytest.approx(1.51), "the lab's Step 7 line"
    assert parse_queue_division_log(log, "other") is None, "queues are matched by name"


def test_the_isolator_injection_is_on_the_shared_pod() -> None:
    pod = yaml.safe_load((LAB / "shared-pod.yaml").read_text())
    result = decide_isolator_injection(pod)
    assert result.passed and "CONTAINER_VGPU_MOUNT=/usr/local/vgpu" in result.detail, result.detail
    bare = {"spec": {"containers": [{"name": "gpu-workload"}]}}
    result = decide_isolator_injection(bare)
    assert not result.passed and "/etc/ld.so.preload" in result.detail and "runtimeClassName" in result.detail


def test_the_reservation_boundary_is_recognised_as_the_expected_limit_of_fake_gpus() -> None:
    logs = (LAB / "reservation-pod.log").read_text()
    events = (LAB / "shared-pod-events.txt").read_text().splitlines()
    from_logs = decide_reservation_boundary("Pending", logs, [])
    assert from_logs.passed and "expected limit of fake GPUs" in from_logs.detail, from_logs.detail
    from_events = decide_reservation_boundary("Pending", "", events)
    assert from_events.passed and "failed waiting for GPU reservation pod" in from_events.detail
    assert decide_reservation_boundary("Running", "", []).passed, "a real GPU crosses the boundary"
    unknown = decide_reservation_boundary("Pending", "", ["FailedScheduling: 0/1 nodes are available"])
    assert not unknown.passed and "something else" in unknown.detail, "another reason is not the boundary"
    assert not decide_reservation_boundary(None, logs, events).passed, "no shared pod, nothing to prove"


# ---------------------------------------------------------------- the report


def test_the_report_lists_each_check_with_its_verdict() -> None:
    report = format_results([CheckResult("sm-share", True, "54 of 108 SMs"), CheckResult("memory-view", False, "x")])
    assert report.splitlines() == [
        "Proof: 1 of 2 checks passed",
        "  PASS sm-share: 54 of 108 SMs",
        "  FAIL memory-view: x",
    ]


def test_a_failed_proof_raises_naming_the_check_and_why() -> None:
    results = [CheckResult("binder-annotations", True, "ok"), CheckResult("mps-namespaces", False, "no default")]
    with pytest.raises(ProofFailed, match=r"failed 1 of 2 checks: mps-namespaces: no default"):
        raise_on_failure("SmokeProof", results)
    raise_on_failure("SmokeProof", results[:1])


# ---------------------------------------------------------------- gathering evidence


def running_pod(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"nodeName": "gpu-node-0", "containers": [{"name": "main"}]},
        "status": {"phase": "Running"},
    }


ENV, NAMESPACES, MEMORY = ("env",), tuple(NAMESPACE_LIST), tuple(HOSTILE_MEMORY_QUERY)


def gpu_node(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-node-0", "labels": labels}}


def smoke_cluster() -> FakeCluster:
    """A cluster where the smoke pods, mpsd and deviceQuery answer with the guide-shaped fixtures,
    and deviceQuery has finished as soon as it is created."""
    annotations = smoke_annotations()
    mpsd = {
        "metadata": {"name": "gpu-fractioning-mpsd-x7k2p", "annotations": {}, "labels": labels_of(MPSD_SELECTOR)},
        "spec": {"nodeName": "gpu-node-0", "containers": [{"name": "mpsd"}, {"name": "metricsd"}]},
        "status": {"phase": "Running"},
    }
    cluster = FakeCluster(
        execs={
            ENV: text("env-fraction-smoke-a.txt"),
            NAMESPACES: text("namespace-list-shared.txt"),
            MEMORY: text("memory-total-capped.txt"),
        },
        logs={("default", DEVICE_QUERY_POD): text("devicequery-half.txt")},
        created_phase="Succeeded",
    )
    cluster.put("pods", *[running_pod(name, annotations[name]) for name in annotations], namespace="default")
    cluster.put("pods", mpsd, namespace="gpu-fractioning")
    cluster.put("nodes", gpu_node({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}))
    return cluster


class NoWait(Clock):
    """A clock that runs out at once: polling gives up after one attempt."""

    def __init__(self) -> None:
        super().__init__(now=lambda: 0.0, sleep=lambda seconds: None)


SPEC = SmokeSpec(
    pods=("fraction-smoke-a", "fraction-smoke-b"), gpu_memory_mib=40960, gpu_fraction=0.5, timeout_seconds=0
)


def test_a_prepared_a100_passes_every_smoke_check_and_the_sm_measurement() -> None:
    cluster = smoke_cluster()
    results = prove_smoke(cluster, SPEC, NoWait())
    assert [(r.check, r.passed) for r in results] == [
        ("binder-annotations", True),
        ("injected-env", True),
        ("mps-namespaces", True),
        ("memory-view", True),
        ("sm-share", True),
    ], format_results(results)
    assert cluster.created_pods == [DEVICE_QUERY_POD], "deviceQuery runs as its own pod"
    assert cluster.deleted_pods[-1] == DEVICE_QUERY_POD, "and is removed afterwards"


def test_one_missing_piece_fails_its_own_check_and_leaves_the_others_standing() -> None:
    cluster = smoke_cluster()
    cluster.execs[ENV] = text("env-without-nri.txt")
    del cluster.execs[NAMESPACES]
    results = {r.check: r for r in prove_smoke(cluster, SPEC, NoWait())}
    assert not results["injected-env"].passed and "NRI" in results["injected-env"].detail
    assert not results["mps-namespaces"].passed, "an exec that fails is that check's failure"
    assert "could not gather the evidence" in results["mps-namespaces"].detail, results["mps-namespaces"].detail
    assert results["binder-annotations"].passed and results["sm-share"].passed, "the other checks still report"


def test_smoke_pods_that_never_run_fail_every_check_with_their_phase() -> None:
    cluster = smoke_cluster()
    cluster.set_phase("default", "fraction-smoke-b", "Pending")
    results = prove_smoke(cluster, SPEC, NoWait())
    assert all(not r.passed and "fraction-smoke-b Pending" in r.detail for r in results), format_results(results)


def test_the_expected_caps_follow_the_nodes_gpu_memory_label_as_the_binder_does() -> None:
    cluster = smoke_cluster()
    eighty_gig = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920"}
    cluster.put("nodes", gpu_node(eighty_gig))
    results = {r.check: r for r in prove_smoke(cluster, SPEC, NoWait())}
    assert not results["injected-env"].passed, "19968M is half a 40 GiB card, not of this node's 80 GiB"
    assert "40448" in results["injected-env"].detail, results["injected-env"].detail


def test_a_device_query_pod_that_cannot_be_placed_says_why_and_what_it_needs() -> None:
    cluster = smoke_cluster()
    cluster.created_phase = "Pending"
    cluster.events[("default", DEVICE_QUERY_POD)] = ["FailedScheduling: 0/1 nodes are available: insufficient GPU"]
    results = {r.check: r for r in prove_smoke(cluster, SPEC, NoWait())}
    detail = results["sm-share"].detail
    assert not results["sm-share"].passed
    assert "phase Pending; FailedScheduling: 0/1 nodes are available: insufficient GPU" in detail, detail
    assert "needs a free 0.5 GPU besides the one the smoke pods hold" in detail
    assert cluster.deleted_pods[-1] == DEVICE_QUERY_POD, "the unplaced pod is removed too"


def test_the_mpsd_pods_default_container_is_the_one_kubectl_would_exec_into() -> None:
    containers = {"containers": [{"name": "mpsd"}, {"name": "metricsd"}]}
    assert default_container({"metadata": {}, "spec": containers}) == "mpsd", "the first container"
    annotated = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/default-container": "metricsd"}},
        "spec": containers,
    }
    assert default_container(annotated) == "metricsd", "the annotated default wins"


def lab_cluster() -> FakeCluster:
    shared = yaml.safe_load((LAB / "shared-pod.yaml").read_text())
    reservation = "gpu-reservation-5df74f36086ed6c5"
    cluster = FakeCluster()
    cluster.put("pods", shared, namespace="default")
    cluster.put(
        "pods",
        {"metadata": {"name": reservation}, "spec": {"containers": [{"name": "resource-reservation"}]}},
        namespace="kai-resource-reservation",
    )
    cluster.logs[("kai-resource-reservation", reservation)] = (LAB / "reservation-pod.log").read_text()
    node = {"name": "kai-hami-test-control-plane", "labels": {"nvidia.com/gpu.present": "true"}}
    cluster.put("nodes", {"metadata": node, "status": {"allocatable": {"nvidia.com/gpu": "8"}}})
    cluster.put(QUEUES, json.loads((LAB / "queue-default-queue.json").read_text()))
    return cluster


QUEUES = resource(QUEUE_GROUP, QUEUE_PLURAL)
LAB_SPEC = LabSpec(gpu_count=8, gpu_memory_mib=40960, shared_memory_mib=20480, shared_pod=SHARED_POD, timeout_seconds=0)


def test_the_lab_proof_passes_and_reports_the_boundary_as_expected() -> None:
    results = prove_lab(lab_cluster(), LAB_SPEC, NoWait())
    assert all(r.passed for r in results), format_results(results)
    boundary = next(r for r in results if r.check == "reservation-boundary")
    assert "expected limit of fake GPUs" in boundary.detail, boundary.detail


def test_the_lab_proof_without_the_shared_pod_says_so() -> None:
    cluster = lab_cluster()
    cluster.remove("pods", "gpu-sharing-with-isolation", "default")
    results = {r.check: r for r in prove_lab(cluster, LAB_SPEC, NoWait())}
    assert results["isolator-injection"].detail == "no shared pod default/gpu-sharing-with-isolation"
    assert not results["reservation-boundary"].passed, "the boundary needs the shared pod"


def test_the_lab_proof_reads_the_scheduler_log_when_the_queue_has_no_status() -> None:
    cluster = lab_cluster()
    cluster.put(QUEUES, {"metadata": {"name": "default-queue"}})
    scheduler = "kai-scheduler-default-5dfbc85f96-6kp9v"
    cluster.put("pods", {"metadata": {"name": scheduler}}, namespace="kai-scheduler")
    cluster.logs[("kai-scheduler", scheduler)] = (LAB / "scheduler-division.log").read_text()
    queue = next(r for r in prove_lab(cluster, LAB_SPEC, NoWait()) if r.check == "queue-allocation")
    assert queue.passed, queue.detail


# ---------------------------------------------------------------- the dynamic resources


@dataclass(frozen=True)
class CannedSpec:
    pods: tuple[str, ...]


class CannedProvider(CheckProvider):
    kind = "CannedProof"
    spec_type = CannedSpec
    results: list[CheckResult] = []

    def verify(self, cluster: KubeClient, props: Any) -> list[CheckResult]:
        return self.results


def test_a_passing_proof_becomes_results_and_report_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KubeClient, "connect", lambda *_args: None)
    provider = CannedProvider()
    provider.results = [CheckResult("sm-share", True, "54 of 108 SMs")]
    created = provider.create({"pods": ["fraction-smoke-a"]})
    assert created.outs is not None
    assert created.outs["results"] == [{"check": "sm-share", "passed": True, "detail": "54 of 108 SMs"}]
    assert created.outs["report"].startswith("Proof: 1 of 1 checks passed"), created.outs["report"]


def test_a_failing_proof_fails_the_update_naming_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(KubeClient, "connect", lambda *_args: None)
    provider = CannedProvider()
    provider.results = [CheckResult("memory-view", False, "the pod sees 40960 MiB")]
    with pytest.raises(ProofFailed, match="memory-view: the pod sees 40960 MiB"):
        provider.update("id", {}, {"pods": ["fraction-smoke-a"]})


def test_the_proof_reruns_only_when_what_it_proves_changes() -> None:
    olds = {"pods": ["a", "b"], "report": "Proof: ...", "kubeconfig": "old", "__provider": "x"}
    provider = SmokeProofProvider()
    assert provider.diff("id", olds, {"pods": ["a", "b"], "kubeconfig": "new", "__provider": "y"}).changes is False
    assert provider.diff("id", olds, {"pods": ["a", "b"], "triggers": ["uid-2"]}).changes is True


def test_a_spec_field_added_since_the_last_update_reruns_the_proof_only_off_its_default() -> None:
    """A stack proved before LabSpec had kai_namespace stored no such input: the default is what it proved."""
    news = {**spec_props(LAB_SPEC), "kubeconfig": "k"}
    olds = {k: v for k, v in news.items() if k != "kai_namespace"} | {"nodes": [], "report": "Proof: ..."}
    provider = LabProofProvider()
    assert provider.diff("id", olds, news).changes is False
    assert provider.diff("id", olds, {**news, "kai_namespace": "kai-system"}).changes is True
    assert provider.diff("id", olds, {**news, "gpu_count": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}).changes is True


def test_the_pickled_provider_loads_in_a_fresh_process_from_the_project_directory() -> None:
    from pulumi.dynamic.dynamic import serialize_provider

    encoded = serialize_provider(SmokeProofProvider())
    load = (
        "import base64, sys, dill; "
        "p = dill.loads(base64.b64decode(sys.stdin.read())); "
        "print(type(p).__module__, type(p).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", load], input=encoded, capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.stdout.split() == ["components.proofs.resources", "SmokeProofProvider"], done.stderr
    assert len(base64.b64decode(encoded)) < 2000, "the provider is pickled by reference, with no captured state"


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return {}, []


def test_the_proofs_register_as_the_packages_resources_with_a_secret_kubeconfig() -> None:
    pulumi.runtime.set_mocks(Mocks(), project="kai-gpu-fractions", stack="test", preview=False)

    @pulumi.runtime.test
    def program() -> Any:
        smoke = SmokeProof("smoke-proof", SPEC, access=ClusterAccess("apiVersion: v1\nkind: Config\n", None))
        lab = LabProof("lab-proof", LAB_SPEC, access=ClusterAccess(None, None))

        def check(values: list[Any]) -> None:
            smoke_urn, lab_urn, secret = values
            assert smoke_urn.endswith("$kai-gpu-fractions:index:SmokeProof::smoke-proof"), smoke_urn
            assert lab_urn.endswith("$kai-gpu-fractions:index:LabProof::lab-proof"), lab_urn
            assert secret is True, "the kubeconfig contents never reach the state in plain text"

        kubeconfig: pulumi.Output[str] = smoke.kubeconfig  # type: ignore[attr-defined]
        secret: Awaitable[bool] = kubeconfig.is_secret()
        is_secret: pulumi.Output[bool] = pulumi.Output.from_input(secret)
        return pulumi.Output.all(smoke.urn, lab.urn, is_secret).apply(check)

    program()


def test_the_allocatable_wait_retries_until_the_device_plugin_advertises_every_gpu() -> None:
    advertised = iter(["0", "0", "8"])

    class Advertising(FakeCluster):
        """The device plugin advertises the next count at each look."""

        def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]:
            self.stored("nodes", "n0")["status"]["allocatable"]["nvidia.com/gpu"] = next(advertised)
            return super().list_nodes(label_selector)

    cluster = Advertising()
    cluster.put("nodes", {"metadata": {"name": "n0"}, "status": {"allocatable": {}}})
    ticks = iter(range(100))
    clock = Clock(now=lambda: float(next(ticks)), sleep=lambda _seconds: None)
    spec = AllocatableSpec(gpu_count=8, nodes=("n0",), timeout_seconds=10)
    (result,) = wait_for_allocatable(cluster, spec, clock=clock)
    assert result.passed, f"the third poll sees 8 GPUs: {result.detail}"


def test_a_retry_that_never_passes_makes_its_last_attempt_on_the_deadline() -> None:
    class FakeTime:
        t = 0.0

        def sleep(self, seconds: float) -> None:
            self.t += seconds

    fake = FakeTime()
    attempts: list[float] = []

    def attempt() -> CheckResult:
        attempts.append(fake.t)
        return CheckResult("never", False, "not yet")

    assert not retry(Clock(now=lambda: fake.t, sleep=fake.sleep), 12.0, attempt).passed
    assert attempts[-1] == 12.0, f"the last attempt at {attempts[-1]} s, not after the 12 s deadline"


def test_a_kai_namespace_without_a_cap_fails_even_beside_two_capped_ones() -> None:
    listing = text("namespace-list-shared.txt")
    listing += "kai_0c1d2e3f4a5b6c7d_8e9f0a1b2c3d4e5f6a7b   shared   Ready          unlimited             100.00\n"
    result = decide_namespaces(parse_namespace_list(listing), pods=2, fraction=0.5)
    assert not result.passed
    assert "kai_0c1d2e3f4a5b6c7d_8e9f0a1b2c3d4e5f6a7b at 100.0" in result.detail, "the uncapped namespace is named"


def test_other_pods_namespaces_at_other_shares_are_fine() -> None:
    listing = text("namespace-list-shared.txt")
    listing += "kai_0c1d2e3f4a5b6c7d_8e9f0a1b2c3d4e5f6a7b   shared   Ready          unlimited             25.00\n"
    assert decide_namespaces(parse_namespace_list(listing), pods=2, fraction=0.5).passed, "a quarter-GPU tenant"


def test_a_shared_pod_counted_as_a_whole_gpu_is_not_a_fraction() -> None:
    result = decide_queue_allocation(2.0, "default-queue", whole_gpus=1, fraction=0.5)
    assert not result.passed and "counts as 1 whole GPU" in result.detail, result.detail
