"""SmokePods: two half-GPU pods that must land on one GPU, each in its own MPS namespace."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import SmokeTestConfig
from components.proofs.smoke import SMOKE_POD_NAMES, smoke_pod_manifest


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
