"""The a100 smoke proof under the real engine, on kwok pods whose GPU evidence is chosen by the test.

kwok serves the kubelet API of the fake node: `exec` runs the command on this machine, where
standins/node-tools stands in for nvidia-smi and nvidia-cuda-mps-control and prints the
guide-shaped fixture the test names in a kwok Exec object; pod logs come from kwok Logs objects.
A stand-in binder (a mutating webhook, so the annotations are there before the pod runs, as the
real binder writes them before it binds) annotates the smoke pods, and a stand-in mpsd pod answers
the namespace list.
So this proves the proof's plumbing end to end (engine, dynamic provider, cluster access from a
secret kubeconfig, exec through the API server, logs, outputs, a failed proof failing the update);
it proves nothing about GPUs, which only a real GPU cluster can.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.proofs.smoke import DEVICE_QUERY_POD, SMOKE_POD_NAMES
from tests.integration.conftest import leftovers
from tests.integration.stand_ins import StandInMutatingWebhook, cri_log
from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import REPO, Workspace, kubectl, kubectl_json
from tests.proof_evidence import parse_annotation_grep

pytestmark = pytest.mark.integration

EVIDENCE = REPO / "tests" / "fixtures" / "proof"
NAMESPACE = "default"
AGENTS_NAMESPACE = "gpu-fractioning"
# What the gpu-fractioning NRI plugin injects into a half-GPU pod of a 40 GiB A100, per the guide.
INJECTED = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=19968M"}


# The evidence of a correctly capped half-GPU pod: fixture names under tests/fixtures/proof.
CAPPED_EVIDENCE: dict[str, Any] = {
    "memory_total": "memory-total-capped.txt",
    "device_query": "devicequery-half.txt",
    "injected": INJECTED,
    "namespace_list": "namespace-list-shared.txt",
}


def envs(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in values.items()]


def binder_annotations(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The fork binder's annotations for a smoke pod, from the guide-shaped fixtures."""
    name = pod.get("metadata", {}).get("name")
    if name not in SMOKE_POD_NAMES:
        return []
    found = parse_annotation_grep((EVIDENCE / f"annotations-{name}.txt").read_text())
    return [
        {"op": "add", "path": "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1"), "value": value}
        for key, value in found.items()
    ]


class StandInNode(StandInMutatingWebhook):
    """Test double for the GPU node and the fork's binder, as the smoke proof observes them.

    It annotates each smoke pod as the binder would and tells kwok what each exec and log returns;
    the mpsd pod is the stand-in operator's.
    """

    def __init__(self, workdir: Path) -> None:
        super().__init__("stand-in-kai-binder", binder_annotations, workdir, NAMESPACE)
        self.calls = workdir / "stand-in-calls.log"

    def show(self, *, memory_total: str, device_query: str, injected: dict[str, str], namespace_list: str) -> None:
        """Sets the evidence: fixture names under tests/fixtures/proof, and the env the pods see."""
        tools = {"KGF_STANDIN_LOG": str(self.calls)}
        smoke = {**tools, **injected, "KGF_STANDIN_NVIDIA_SMI": str(EVIDENCE / memory_total)}
        mpsd = {**tools, "KGF_STANDIN_NVIDIA_CUDA_MPS_CONTROL": str(EVIDENCE / namespace_list)}
        device_query_log = cri_log(EVIDENCE / device_query, self.workdir / f"{device_query}.cri.log")
        objects: list[dict[str, Any]] = [
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "Exec",
                "metadata": {"name": pod, "namespace": NAMESPACE},
                "spec": {"execs": [{"local": {"envs": envs(smoke)}}]},
            }
            for pod in SMOKE_POD_NAMES
        ]
        objects += [
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "ClusterExec",
                "metadata": {"name": "mpsd-stand-in"},
                "spec": {
                    "selector": {"matchNamespaces": [AGENTS_NAMESPACE]},
                    "execs": [{"local": {"envs": envs(mpsd)}}],
                },
            },
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "Logs",
                "metadata": {"name": DEVICE_QUERY_POD, "namespace": NAMESPACE},
                "spec": {"logs": [{"logsFile": str(device_query_log)}]},
            },
        ]
        kubectl("apply", "-f", "-", input_text=yaml.safe_dump_all(objects))

    def calls_made(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def __exit__(self, *_: object) -> None:
        super().__exit__()
        for kind in ("execs.kwok.x-k8s.io", "logs.kwok.x-k8s.io"):
            kubectl("delete", kind, "--all", "-n", NAMESPACE, check=False)
        kubectl("delete", "clusterexecs.kwok.x-k8s.io", "mpsd-stand-in", check=False)


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, StandInNode]]:
    base = tmp_path_factory.mktemp("proof")
    workspace = Workspace.create(base)
    config = a100_config()
    config["smokeTest"] = {"prove": True}
    workspace.new_stack("proof", config, secrets={"registryPassword": PASSWORD})
    with StandInNode(base) as node:
        yield workspace, node
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="proof")
    assert leftovers() == {}, "destroy must leave nothing for the next tests"


def test_up_ends_with_the_proof_as_outputs(proved: tuple[Workspace, StandInNode]) -> None:
    workspace, node = proved
    node.show(**CAPPED_EVIDENCE)
    workspace.pulumi("up", "--yes", "--skip-preview", stack="proof", timeout=1200)

    outputs = workspace.outputs("proof")
    results = {r["check"]: r for r in outputs["proof"]}
    assert list(results) == ["binder-annotations", "injected-env", "mps-namespaces", "memory-view", "sm-share"]
    assert all(r["passed"] for r in results.values()), results
    assert "54 of 108 SMs" in results["sm-share"]["detail"]
    assert "19968" in results["memory-view"]["detail"]
    for check in results:
        assert check in outputs["proofReport"]
    # The guide's commands reached the node tools, the memory query under the hostile override.
    calls = node.calls_made()
    assert "nvidia-cuda-mps-control -p 3 namespace list --server=shared CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=" in calls
    assert "nvidia-smi --query-gpu=memory.total --format=csv,noheader CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100" in calls
    assert kubectl("get", "pod", DEVICE_QUERY_POD, "-n", NAMESPACE, check=False).returncode != 0, (
        "the deviceQuery pod is removed after the measurement"
    )


def test_uncapped_evidence_fails_the_update_naming_each_check(proved: tuple[Workspace, StandInNode]) -> None:
    workspace, node = proved
    node.show(
        memory_total="memory-total-physical.txt",
        device_query="devicequery-uncapped.txt",
        injected={},
        namespace_list="namespace-list-shared.txt",
    )
    state = json.loads(workspace.pulumi("stack", "export", stack="proof").stdout)
    (urn,) = [r["urn"] for r in state["deployment"]["resources"] if r["urn"].endswith("::smoke-proof")]

    # Re-proving an installed stack is a replacement of the proof resource.
    result = workspace.pulumi("up", "--yes", "--skip-preview", "--replace", urn, stack="proof", check=False)

    assert result.returncode != 0, "a failed proof must fail the update"
    assert "SmokeProof failed 3 of 5 checks" in result.output
    for check in ("injected-env", "memory-view", "sm-share"):
        assert f"{check}:" in result.output, f"the failure must name {check}"
    assert "108 of 108 SMs" in result.output
    assert "Traceback" not in result.output, "a failed proof is a finding for the operator, not a crash"
    before = {r["check"]: r["passed"] for r in workspace.outputs("proof")["proof"]}
    assert all(before.values()), "a failed re-proof leaves the last good proof in the outputs"
    assert kubectl_json("get", "pod", "fraction-smoke-a", "-n", NAMESPACE)["status"]["phase"] == "Running"
