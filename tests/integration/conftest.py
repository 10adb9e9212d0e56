"""Integration tier: the real Pulumi engine and provider plugins against the local control plane."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cluster.waiting import Clock, Deadline, poll
from components.vocabulary import fractioning, kai, nvidia
from standins.operators.cluster import JSON_PATCH, MERGE_PATCH, name_of, path
from standins.operators.cluster import webhooks_off_the_machine as off_the_machine
from standins.operators.gpu_fractioning import RECORD
from standins.operators.kai_webhooks import recorded_configurations
from standins.operators.knobs import CONFIGMAP, NAMESPACE
from standins.operators.node_daemons import gfd_labels
from tests.integration import processes
from tests.integration.workspace import Workspace, api, kubectl, require_env

NODE = "gpu-node-0"
NODE_PATH = path("v1", "nodes", name=NODE)
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="session", autouse=True)
def no_process_outlives_the_tier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fails the run when a process the tier started is still alive at its end (kills it first):
    anything working under pytest's tmp folder, where every workspace lives, or left in this
    session. Set up before the tier's other fixtures, so it looks after all of them are torn down."""
    before = {process.key for process in processes.running()}
    yield
    processes.fail_on_leftovers(before, tmp_path_factory.getbasetemp())


@pytest.fixture(scope="session", autouse=True)
def engine_ready(no_process_outlives_the_tier: None) -> None:
    """Fails, never skips, when the tier runs without its toolchain and control plane."""
    require_env("KGF_ENGINE_VENV")
    require_env("KUBECONFIG")
    for tool in ("pulumi", "kubectl"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not on PATH: run the integration tier through scripts/test.sh")
    kubectl("get", "node", NODE)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path)


@pytest.fixture(scope="module", autouse=True)
def fresh_gpu_node() -> Iterator[None]:
    """Each test module starts with the GPU node as a new machine has it, before any GPU software:
    what earlier modules' stand-in operators wrote to it (as real ones would, and leave) is gone.
    After it, no webhook left registered may send the API server off this machine."""
    reset_gpu_node()
    for configmap in (CONFIGMAP, RECORD):
        api().delete(path("v1", "configmaps", NAMESPACE, configmap))
    yield
    assert webhooks_off_the_machine() == []


def webhooks_off_the_machine() -> list[str]:
    """Every webhook registered in the test cluster that the API server would call anywhere but on
    loopback (standins.operators.cluster.webhooks_off_the_machine)."""
    return [
        found
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for configuration in api().list(path("admissionregistration.k8s.io/v1", kind))
        for found in off_the_machine(configuration)
    ]


def gpu_node() -> dict[str, Any]:
    node = api().get(NODE_PATH)
    assert node is not None, f"the control plane has no node {NODE}: see standins/nodes/"
    return node


def reset_gpu_node() -> None:
    node = gpu_node()
    added = [
        key
        for key in node["metadata"].get("labels", {})
        if key.startswith(("nvidia.com/", "gpu-fractioning.kai.scheduler/"))
    ]
    marks = [key for key in node["metadata"].get("annotations", {}) if key.startswith("stand-in.kai-gpu-fractions/")]
    if added or marks:
        removed = {"labels": dict.fromkeys(added), "annotations": dict.fromkeys(marks)}
        api().patch(NODE_PATH, {"metadata": removed})
    status = node.get("status") or {}
    removals = [
        {"op": "remove", "path": f"/status/{field}/nvidia.com~1gpu"}
        for field in ("capacity", "allocatable")
        if GPU in (status.get(field) or {})
    ]
    removals += [
        {"op": "remove", "path": f"/status/conditions/{index}"}
        for index, condition in reversed(list(enumerate(status.get("conditions") or [])))
        if condition["type"].startswith("gpu-fractioning.")
    ]
    if removals:
        api().patch(f"{NODE_PATH}/status", removals, JSON_PATCH)


def label_as_the_gpu_operator_would() -> None:
    """The GPU node as a GPU Operator that someone else installed leaves it: GFD's labels and the
    device plugin's GPUs, for a cluster where this stack does not install the operator."""
    node = gpu_node()
    labels = {"nvidia.com/gpu.present": "true", **gfd_labels(node, "615.71.09", "single")}
    api().patch(NODE_PATH, {"metadata": {"labels": labels}})
    gpus = {GPU: "8"}
    api().patch(f"{NODE_PATH}/status", {"status": {"capacity": gpus, "allocatable": gpus}}, MERGE_PATCH)


@contextmanager
def stand_in_operators(**delays: str | float) -> Iterator[None]:
    """How long each stand-in operator takes in the block (standins/operators/knobs.py): seconds, or
    "never" for one that never does its work; `gpu_operator=30` sets the key `gpu-operator`."""
    data = {key.replace("_", "-"): str(value) for key, value in delays.items()}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE}}
    kubectl("apply", "-f", "-", input_text=yaml.safe_dump({**configmap, "data": data}))
    try:
        yield
    finally:
        api().delete(path("v1", "configmaps", NAMESPACE, CONFIGMAP))


def mpsd_stops() -> list[str]:
    """One line per mpsd pod that stopped: whether gpu-fractioning's operator still ran then."""
    record = api().get(path("v1", "configmaps", NAMESPACE, RECORD)) or {}
    return [line for line in (record.get("data") or {}).get("mpsd-stopped", "").splitlines() if line]


def leftovers(wait_seconds: float = 60, clock: Clock | None = None) -> dict[str, list[str]]:
    """Objects of this project's kinds and namespaces still in the API server, once the garbage
    collector has had `wait_seconds` to remove what the operators owned (looking every 2 s)."""
    return poll(_leftovers, lambda found: not found, Deadline.after(wait_seconds, clock), repeat(2.0))


# The cluster-wide kinds whose objects a stack makes or adopts, as (apiVersion, plural); a kind the
# API server does not serve (its CRD gone) lists empty.
LEFTOVER_KINDS = (
    (f"{fractioning.CONFIG_GROUP}/{fractioning.CONFIG_VERSION}", fractioning.CONFIG_PLURAL),
    (f"{kai.QUEUE_GROUP}/{kai.QUEUE_VERSION}", kai.QUEUE_PLURAL),
    (f"{kai.SHARD_GROUP}/{kai.SHARD_VERSION}", kai.SHARD_PLURAL),
    (f"{kai.CONFIG_GROUP}/{kai.CONFIG_VERSION}", kai.CONFIG_PLURAL),
    (f"{nvidia.CLUSTER_POLICY_GROUP}/{nvidia.CLUSTER_POLICY_VERSION}", nvidia.CLUSTER_POLICY_PLURAL),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings"),
    ("node.k8s.io/v1", "runtimeclasses"),
)


def _leftovers() -> dict[str, list[str]]:
    cluster = api()
    found: dict[str, list[str]] = {}
    namespaces = {name_of(n) for n in cluster.list(path("v1", "namespaces"))}
    found["namespaces"] = sorted(
        namespaces
        & {"gpu-operator", "kai-scheduler", "gpu-fractioning", "kai-resource-reservation", "kai-resource-isolator"}
    )
    for api_version, plural in LEFTOVER_KINDS:
        found[f"{plural}.{api_version}"] = sorted(map(name_of, cluster.list(path(api_version, plural))))
    found["pods"] = sorted(map(name_of, cluster.list(path("v1", "pods", "default"))))
    # KAI's operator registers them, owned by kai-config; any left would refuse every Queue and
    # kai-scheduler pod of the next install (failurePolicy Fail).
    kai_webhooks = {name_of(c) for c in recorded_configurations()}
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        names = {name_of(c) for c in cluster.list(path("admissionregistration.k8s.io/v1", kind))} & kai_webhooks
        if names:
            found[kind] = sorted(names)
    return {kind: names for kind, names in found.items() if names}
