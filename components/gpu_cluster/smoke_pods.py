"""SmokePods: two half-GPU pods that must land on one GPU, each in its own MPS namespace."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import SmokeTestConfig
from components.config.vocabulary import RUNTIME_CLASS

SMOKE_POD_NAMES = ("fraction-smoke-a", "fraction-smoke-b")
CONTAINER = "main"


def smoke_pod_manifest(name: str, config: SmokeTestConfig) -> dict[str, Any]:
    """A fractional pod as the build guide's smoke test defines it.

    It runs as a non-root user: MPS lets root clients raise their own cap or delete a
    neighbour's namespace. The compute-mode annotation names the container, so both must match.
    """
    return {
        "metadata": {
            "name": name,
            "namespace": config.namespace,
            "labels": {"app": "nvfractions-smoke", "kai.scheduler/queue": config.queue},
            "annotations": {
                "gpu-fraction": f"{config.gpu_fraction:g}",
                f"nvidia.com/container.{CONTAINER}.gpu-compute.mode": "sm-sharing",
            },
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "runtimeClassName": RUNTIME_CLASS,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
            "containers": [
                {
                    "name": CONTAINER,
                    "image": config.image,
                    # They live as long as the stack: a re-run of the proof finds them running.
                    "command": ["sleep", "infinity"],
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
        },
    }


class SmokePods(pulumi.ComponentResource):
    """Creates the two smoke pods and waits for them to run; the checks on them are separate."""

    names: pulumi.Output[list[str]]

    def __init__(self, name: str, config: SmokeTestConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:smoke:SmokePods", name, None, opts)
        pods = [
            k8s.core.v1.Pod(
                f"{name}-{pod_name.rsplit('-', 1)[1]}",
                **smoke_pod_manifest(pod_name, config),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for pod_name in SMOKE_POD_NAMES
        ]
        self.names = pulumi.Output.all(*[pod.metadata.name for pod in pods])
        self.register_outputs({"names": self.names})
