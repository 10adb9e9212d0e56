"""LabPods: a whole-GPU pod that must run, and a shared pod that stops at the reservation-pod boundary."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import GpuProfile
from components.vocabulary.kai import DEFAULT_QUEUE, SCHEDULER_NAME
from components.vocabulary.nvidia import RUNTIME_CLASS

WHOLE_GPU_POD = "kai-whole-gpu"
SHARED_POD = "gpu-sharing-with-isolation"
# Pulumi otherwise waits for a pod to be ready; the shared pod never is on fake GPUs.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
# The lab's pods only sleep; pinned, as every image this stack runs is.
IMAGE = "busybox:1.37"

BOUNDARY_NOT_OBSERVED = (
    "not observed: lab.prove is false, so nothing looked at the shared pod. On fake GPUs KAI accounts it, but "
    "its GPU reservation pod cannot load NVML (ERROR_LIBRARY_NOT_FOUND), so it is expected to stay Pending; "
    "set lab.prove to true to check what happens on this cluster"
)


def whole_gpu_pod_manifest(await_ready: bool) -> dict[str, Any]:
    return {
        "metadata": {
            "name": WHOLE_GPU_POD,
            "labels": {"kai.scheduler/queue": DEFAULT_QUEUE},
            "annotations": None if await_ready else SKIP_AWAIT,
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "runtimeClassName": RUNTIME_CLASS,
            "containers": [
                {
                    "name": "app",
                    "image": IMAGE,
                    "command": ["sleep", "3600"],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
    }


def shared_pod_manifest(profile: GpuProfile) -> dict[str, Any]:
    """Half of one GPU's memory, no GPU resource: KAI reserves the fraction.

    CUDA_DISABLE_CONTROL keeps HAMi-core from aborting on the missing CUDA driver. The pod is
    non-root and names the RuntimeClass KAI's admission would add anyway.
    """
    return {
        "metadata": {
            "name": SHARED_POD,
            "labels": {"kai.scheduler/queue": DEFAULT_QUEUE},
            "annotations": {"gpu-memory": str(profile.memory_mib // 2), **SKIP_AWAIT},
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "runtimeClassName": RUNTIME_CLASS,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": "gpu-workload",
                    "image": IMAGE,
                    "command": ["sleep", "3600"],
                    "env": [{"name": "CUDA_DISABLE_CONTROL", "value": "true"}],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


class LabPods(pulumi.ComponentResource):
    """Creates both lab pods in `default`; waits for the whole-GPU pod only."""

    names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, profile: GpuProfile, await_ready: bool, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kai-gpu-fractions:lab:LabPods", name, None, opts)
        pods = [
            k8s.core.v1.Pod(f"{name}-{role}", **manifest, opts=pulumi.ResourceOptions(parent=self))
            for role, manifest in (
                ("whole-gpu", whole_gpu_pod_manifest(await_ready)),
                ("shared", shared_pod_manifest(profile)),
            )
        ]
        self.names = pulumi.Output.all(*[pod.metadata.name for pod in pods])
        self.register_outputs({"names": self.names})
