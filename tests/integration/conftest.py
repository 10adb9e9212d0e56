"""Integration tier: the real Pulumi engine and provider plugins against the local control plane."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from components.gpu_cluster.node_agents import MPSD_SELECTOR
from tests.integration.stand_ins import PollingStandIn
from tests.integration.workspace import Workspace, kubectl, kubectl_json, require_env

FINALIZER = "gpu-fractioning.nvidia.com/cleanup-node-conditions"
CLEAR = '{"metadata":{"finalizers":null}}'
AGENTS = "gpu-fractioning"


@pytest.fixture(scope="session", autouse=True)
def engine_ready() -> None:
    """Fails, never skips, when the tier runs without its toolchain and control plane."""
    require_env("KGF_ENGINE_VENV")
    require_env("KUBECONFIG")
    for tool in ("pulumi", "kubectl"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not on PATH: run the integration tier through scripts/test.sh")
    kubectl("get", "node", "gpu-node-0")


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path)


class StandInOperator(PollingStandIn):
    """Test double for the gpu-fractioning operator's part in the uninstall.

    While its Deployment exists and the `default` GpuFractioningConfig is live, it runs one mpsd
    pod (with a finalizer, so it terminates slowly, as mpsd takes about a minute). When the config
    is deleted it stops the mpsd pods and clears the config's finalizer; the real operator can do
    either only while it is installed, so a destroy in the wrong order leaves the config stuck. When
    it finally lets an mpsd pod go it records whether the operator Deployment still existed, so a
    test can tell that the chart waited for the daemons.
    """

    MPSD_POD = "gpu-fractioning-mpsd-stand-in"
    MPSD_FINALIZER = "kai-gpu-fractions.test/mps-shutdown"
    MPSD_STOP_SECONDS = 8.0
    interval = 0.5

    def __init__(self) -> None:
        super().__init__()
        self.cleared: list[str] = []
        self.mpsd_started = False
        # One entry per mpsd pod let go: whether the operator Deployment still existed then.
        self.mpsd_stopped_with_operator: list[bool] = []
        self._stopping_since: float | None = None

    def __exit__(self, *_: object) -> None:
        super().__exit__()
        # Never leave the test finalizer behind: it would hold the namespace in Terminating.
        kubectl("-n", AGENTS, "patch", "pod", self.MPSD_POD, "--type=merge", "-p", CLEAR, check=False)

    @staticmethod
    def _operator_runs() -> bool:
        return kubectl("-n", AGENTS, "get", "deploy", "gpu-fractioning-operator", check=False).returncode == 0

    def step(self) -> None:
        self._finish_stopping_mpsd()
        configs = kubectl("get", "gpufractioningconfigs", "-o", "json", check=False)
        if not self._operator_runs() or configs.returncode != 0:
            return
        for item in json.loads(configs.stdout)["items"]:
            metadata = item["metadata"]
            if not metadata.get("deletionTimestamp"):
                self._run_mpsd()
            elif FINALIZER in metadata.get("finalizers", []):
                kubectl("-n", AGENTS, "delete", "pod", "-l", MPSD_SELECTOR, "--wait=false", check=False)
                kubectl("patch", "gpufractioningconfig", metadata["name"], "--type=merge", "-p", CLEAR, check=False)
                self.cleared.append(metadata["name"])

    def _run_mpsd(self) -> None:
        if self.mpsd_started or kubectl("get", "namespace", AGENTS, check=False).returncode != 0:
            return
        label, value = MPSD_SELECTOR.split("=")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.MPSD_POD,
                "namespace": AGENTS,
                "labels": {label: value},
                "finalizers": [self.MPSD_FINALIZER],
            },
            "spec": {"nodeName": "gpu-node-0", "containers": [{"name": "mpsd", "image": "stand-in"}]},
        }
        self.mpsd_started = kubectl("apply", "-f", "-", input_text=json.dumps(pod), check=False).returncode == 0

    def _finish_stopping_mpsd(self) -> None:
        found = kubectl("-n", AGENTS, "get", "pod", self.MPSD_POD, "-o", "json", check=False)
        if found.returncode != 0 or not json.loads(found.stdout)["metadata"].get("deletionTimestamp"):
            return
        self._stopping_since = self._stopping_since or time.monotonic()
        if time.monotonic() - self._stopping_since >= self.MPSD_STOP_SECONDS:
            operator_runs = self._operator_runs()
            if (
                kubectl(
                    "-n", AGENTS, "patch", "pod", self.MPSD_POD, "--type=merge", "-p", CLEAR, check=False
                ).returncode
                == 0
            ):
                self.mpsd_stopped_with_operator.append(operator_runs)
                self._stopping_since = None


def leftovers() -> dict[str, list[str]]:
    """Objects of this project's kinds and namespaces still in the API server."""
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
    ):
        result = kubectl("get", kind, "-o", "name", check=False)
        found[kind] = sorted(result.stdout.split()) if result.returncode == 0 else []
    found["pods"] = sorted(kubectl("get", "pods", "-n", "default", "-o", "name").stdout.split())
    found["runtimeclasses"] = sorted(kubectl("get", "runtimeclasses", "-o", "name").stdout.split())
    return {kind: names for kind, names in found.items() if names}
