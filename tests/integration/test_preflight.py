"""Preflight under the real engine: an unprepared cluster fails `pulumi preview` before any change."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from standins.operators.node_daemons import gfd_labels
from tests.integration.conftest import label_as_the_gpu_operator_would, reset_gpu_node
from tests.integration.stand_ins import check_pods_print, check_pods_print_nothing
from tests.integration.workspace import REPO, Workspace, kubectl

pytestmark = pytest.mark.integration

NODE_FIXTURE = REPO / "standins" / "nodes" / "gpu-node.yaml"
HOST_REPORTS = REPO / "tests" / "fixtures" / "proof" / "host"


def fork_stack_without_operator() -> dict[str, Any]:
    """The a100 stack on a cluster whose GPU Operator someone else installed: nothing it would
    set up (labels, RuntimeClass) may be taken for granted."""
    return {
        "cluster": {"kubeconfig": os.environ["KUBECONFIG"]},
        "registry": {"server": "registry.example.com/team/kai-fork"},
        "forks": {"images": "prebuilt"},
        "gpuOperator": {"enabled": False},
        "kai": {"chart": {"chart": "charts/kai-scheduler"}},
        "gpuFractioning": {"chart": {"chart": "charts/gpu-fractioning"}},
        "smokeTest": {"prove": False},
    }


def variant(name: str, *, drop_label: str | None = None, containerd: str | None = None) -> dict[str, Any]:
    """Another GPU node as the GPU Operator labels it, with one label missing or another containerd."""
    node = yaml.safe_load(NODE_FIXTURE.read_text())
    node = copy.deepcopy(node)
    node["metadata"]["name"] = name
    node["metadata"]["labels"]["kubernetes.io/hostname"] = name
    node["metadata"]["labels"] |= {"nvidia.com/gpu.present": "true", **gfd_labels(node, "615.71.09", "single")}
    if drop_label:
        del node["metadata"]["labels"][drop_label]
    if containerd:
        node["status"]["nodeInfo"]["containerRuntimeVersion"] = containerd
    return node


@pytest.fixture
def unprepared_nodes(tmp_path: Path) -> Iterator[None]:
    manifest = tmp_path / "nodes.yaml"
    nodes = [
        variant("gpu-node-no-memory-label", drop_label="nvidia.com/gpu.memory"),
        variant("gpu-node-containerd-17", containerd="containerd://1.7.22"),
    ]
    # Documents in JSON: YAML would leave a label value such as "09" unquoted, read back as a number.
    manifest.write_text("\n---\n".join(json.dumps(node) for node in nodes))
    kubectl("apply", "-f", str(manifest))
    yield
    kubectl("delete", "-f", str(manifest), "--wait=false")


def test_preview_fails_naming_each_unprepared_row(tmp_path: Path, unprepared_nodes: None) -> None:
    kubectl("delete", "runtimeclass", "nvidia", "--ignore-not-found")
    workspace = Workspace.create(tmp_path)
    workspace.new_stack("unprepared", fork_stack_without_operator())
    result = workspace.pulumi("preview", stack="unprepared", check=False)
    assert result.returncode != 0, "an unprepared cluster must stop the preview"
    output = result.output
    assert "Preflight failed; nothing was changed." in output
    assert "gpu-node-no-memory-label" in output and "nvidia.com/gpu.memory" in output
    assert "gpu-node-containerd-17" in output and "1.7.22" in output
    assert "runtime-class" in output
    assert "Traceback" not in output, "a user's cluster problem is reported, not a stack trace"


PREPARED_BY_SOMEONE_ELSE = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata:
  name: cluster-policy
  labels: {app.kubernetes.io/version: v26.7.1}
spec: {}
"""


@pytest.fixture
def prepared_cluster() -> Iterator[None]:
    cluster_policy_crd = REPO / "standins" / "charts" / "gpu-operator" / "crds" / "clusterpolicies.yaml"
    kubectl("apply", "-f", str(cluster_policy_crd))
    kubectl("wait", "--for=condition=Established", "-f", str(cluster_policy_crd))
    kubectl("apply", "-f", "-", input_text=PREPARED_BY_SOMEONE_ELSE)
    label_as_the_gpu_operator_would()
    yield
    kubectl("delete", "-f", "-", "--ignore-not-found", input_text=PREPARED_BY_SOMEONE_ELSE)
    reset_gpu_node()
    kubectl("delete", "-f", str(cluster_policy_crd), "--ignore-not-found")


def test_preview_passes_on_a_prepared_cluster(tmp_path: Path, prepared_cluster: None) -> None:
    workspace = Workspace.create(tmp_path)
    workspace.new_stack("prepared", fork_stack_without_operator())
    result = workspace.pulumi("preview", stack="prepared")
    assert "0 failing" in result.output
    assert "NOT CHECKED driver-version on node gpu-node-0" in result.output, (
        "host rows without node access are reported, never silently passed"
    )


@pytest.fixture
def check_pod_prints(tmp_path: Path) -> Iterator[Callable[[str], None]]:
    """Makes the preflight check pod "print" a host report from tests/fixtures/proof/host."""
    yield lambda report: check_pods_print(HOST_REPORTS / report, tmp_path)
    check_pods_print_nothing()


def with_check_pod(config: dict[str, Any]) -> dict[str, Any]:
    return {**config, "preflight": {"hostAccess": {"checkPod": {"timeoutSeconds": 60}}}}


def check_pods_left() -> list[str]:
    selector = "app.kubernetes.io/name=kai-gpu-fractions-preflight"
    return kubectl("get", "pods", "-n", "kube-system", "-l", selector, "-o", "name").stdout.split()


def test_a_check_pod_reads_the_host_rows_of_a_prepared_node(
    tmp_path: Path, prepared_cluster: None, check_pod_prints: Callable[[str], None]
) -> None:
    check_pod_prints("host-report-hgx.txt")
    workspace = Workspace.create(tmp_path)
    workspace.new_stack("host-checked", with_check_pod(fork_stack_without_operator()))
    result = workspace.pulumi("preview", stack="host-checked")
    assert "Preflight: 0 failing, 0 warning, 0 not checked" in result.output, result.output[-3000:]
    assert check_pods_left() == [], "the check pod is deleted after its report is read"


def test_a_check_pod_names_each_failing_host_row(
    tmp_path: Path, prepared_cluster: None, check_pod_prints: Callable[[str], None]
) -> None:
    check_pod_prints("host-report-unprepared.txt")
    workspace = Workspace.create(tmp_path)
    workspace.new_stack("host-unprepared", with_check_pod(fork_stack_without_operator()))
    result = workspace.pulumi("preview", stack="host-unprepared", check=False)
    assert result.returncode != 0, "an unprepared host must stop the preview"
    for row in ("driver-version", "mps-namespace", "nri-socket", "fabricmanager"):
        assert f"FAIL {row} on node gpu-node-0" in result.output, f"the preview must name {row}"
    assert "595.91.07" in result.output
    assert "Traceback" not in result.output
    assert check_pods_left() == []
