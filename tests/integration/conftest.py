"""Integration tier: the real Pulumi engine and provider plugins against the local control plane."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.workspace import Workspace, kubectl, kubectl_json, require_env

FINALIZER = "gpu-fractioning.nvidia.com/cleanup-node-conditions"


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


class StandInOperator:
    """Test double for the gpu-fractioning operator's finalizer handling.

    The real operator clears the finalizer of a deleted GpuFractioningConfig after stopping the
    MPS daemons; it can do so only while it is installed. This double clears it only while the
    chart's operator Deployment exists, so a destroy in the wrong order leaves the object stuck.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.cleared: list[str] = []

    def __enter__(self) -> StandInOperator:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            operator = kubectl("-n", "gpu-fractioning", "get", "deploy", "gpu-fractioning-operator", check=False)
            if operator.returncode != 0:
                continue
            configs = kubectl("get", "gpufractioningconfigs", "-o", "json", check=False)
            if configs.returncode != 0:
                continue
            import json

            for item in json.loads(configs.stdout)["items"]:
                metadata = item["metadata"]
                if metadata.get("deletionTimestamp") and FINALIZER in metadata.get("finalizers", []):
                    kubectl(
                        "patch",
                        "gpufractioningconfig",
                        metadata["name"],
                        "--type=merge",
                        "-p",
                        '{"metadata":{"finalizers":null}}',
                        check=False,
                    )
                    self.cleared.append(metadata["name"])


@pytest.fixture
def stand_in_operator() -> Iterator[StandInOperator]:
    with StandInOperator() as operator:
        yield operator


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
