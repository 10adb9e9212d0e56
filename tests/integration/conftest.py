"""Integration tier: the real Pulumi engine and provider plugins against the local control plane."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path

import pytest
import yaml

from components.cluster.waiting import Clock, Deadline, poll
from standins.operators.cluster import name_of
from standins.operators.cluster import webhooks_off_the_machine as off_the_machine
from standins.operators.gpu_fractioning import RECORD
from standins.operators.kai_webhooks import recorded_configurations
from standins.operators.knobs import CONFIGMAP, NAMESPACE
from standins.operators.node_daemons import gfd_labels
from tests.integration import processes
from tests.integration.workspace import Workspace, kubectl, kubectl_json, require_env

NODE = "gpu-node-0"
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
    kubectl("-n", NAMESPACE, "delete", "configmap", CONFIGMAP, RECORD, "--ignore-not-found")
    yield
    assert webhooks_off_the_machine() == []


def webhooks_off_the_machine() -> list[str]:
    """Every webhook registered in the test cluster that the API server would call anywhere but on
    loopback (standins.operators.cluster.webhooks_off_the_machine)."""
    return [
        found
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
        for configuration in kubectl_json("get", kind)["items"]
        for found in off_the_machine(configuration)
    ]


def reset_gpu_node() -> None:
    node = kubectl_json("get", "node", NODE)
    added = [
        key
        for key in node["metadata"].get("labels", {})
        if key.startswith(("nvidia.com/", "gpu-fractioning.kai.scheduler/"))
    ]
    marks = [key for key in node["metadata"].get("annotations", {}) if key.startswith("stand-in.kai-gpu-fractions/")]
    if added:
        kubectl("label", "node", NODE, *(f"{key}-" for key in added))
    if marks:
        kubectl("annotate", "node", NODE, *(f"{key}-" for key in marks))
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
        kubectl("patch", "node", NODE, "--subresource=status", "--type=json", "-p", json.dumps(removals))


def label_as_the_gpu_operator_would() -> None:
    """The GPU node as a GPU Operator that someone else installed leaves it: GFD's labels and the
    device plugin's GPUs, for a cluster where this stack does not install the operator."""
    node = kubectl_json("get", "node", NODE)
    labels = {"nvidia.com/gpu.present": "true", **gfd_labels(node, "615.71.09", "single")}
    kubectl("label", "--overwrite", "node", NODE, *(f"{k}={v}" for k, v in labels.items()))
    gpus = {GPU: "8"}
    patch = {"status": {"capacity": gpus, "allocatable": gpus}}
    kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", json.dumps(patch))


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
        kubectl("-n", NAMESPACE, "delete", "configmap", CONFIGMAP, "--ignore-not-found")


def mpsd_stops() -> list[str]:
    """One line per mpsd pod that stopped: whether gpu-fractioning's operator still ran then."""
    found = kubectl("-n", NAMESPACE, "get", "configmap", RECORD, "-o", "json", check=False)
    if found.returncode != 0:
        return []
    return [line for line in json.loads(found.stdout).get("data", {}).get("mpsd-stopped", "").splitlines() if line]


def leftovers(wait_seconds: float = 60, clock: Clock | None = None) -> dict[str, list[str]]:
    """Objects of this project's kinds and namespaces still in the API server, once the garbage
    collector has had `wait_seconds` to remove what the operators owned (looking every 2 s)."""
    return poll(_leftovers, lambda found: not found, Deadline.after(wait_seconds, clock), repeat(2.0))


def _leftovers() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    namespaces = {n["metadata"]["name"] for n in kubectl_json("get", "namespaces")["items"]}
    found["namespaces"] = sorted(
        namespaces
        & {"gpu-operator", "kai-scheduler", "gpu-fractioning", "kai-resource-reservation", "kai-resource-isolator"}
    )
    for kind in (
        "gpufractioningconfigs",
        "queues.scheduling.run.ai",
        "schedulingshards.kai.scheduler",
        "configs.kai.scheduler",
        "clusterpolicies.nvidia.com",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
    ):
        result = kubectl("get", kind, "-o", "name", check=False)
        found[kind] = sorted(result.stdout.split()) if result.returncode == 0 else []
    found["pods"] = sorted(kubectl("get", "pods", "-n", "default", "-o", "name").stdout.split())
    # KAI's operator registers them, owned by kai-config; any left would refuse every Queue and
    # kai-scheduler pod of the next install (failurePolicy Fail).
    kai_webhooks = {name_of(c) for c in recorded_configurations()}
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        names = {name_of(c) for c in kubectl_json("get", kind)["items"]} & kai_webhooks
        if names:
            found[kind] = sorted(names)
    found["runtimeclasses"] = sorted(kubectl("get", "runtimeclasses", "-o", "name").stdout.split())
    return {kind: names for kind, names in found.items() if names}
