"""SmokePods: two half-GPU pods that must land on one GPU, each in its own MPS namespace."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import SmokeTestConfig, StackConfig
from components.proofs.smoke import SMOKE_POD_NAMES, smoke_pod_manifest
from components.proofs.smoke_decisions import SmokeSpec

# The driver the pods were started on: a driver rollout drains every fractional pod, these included,
# so a new driver starts them again (after the rollout and the gates, which they wait for).
DRIVER_ANNOTATION = "kai-gpu-fractions/started-on-driver"


class SmokePods(pulumi.ComponentResource):
    """Creates the two smoke pods and waits for them to run; the checks on them are separate."""

    names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, config: SmokeTestConfig, driver: str, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kai-gpu-fractions:smoke:SmokePods", name, None, opts)
        pods = []
        for pod_name in SMOKE_POD_NAMES:
            manifest = smoke_pod_manifest(pod_name, config)
            manifest["metadata"]["annotations"][DRIVER_ANNOTATION] = driver
            replaced = pulumi.ResourceOptions(
                parent=self, replace_on_changes=["metadata.annotations"], delete_before_replace=True
            )
            pods.append(k8s.core.v1.Pod(f"{name}-{pod_name.rsplit('-', 1)[1]}", **manifest, opts=replaced))
        self.names = pulumi.Output.all(*[pod.metadata.name for pod in pods])
        self.register_outputs({"names": self.names})


def smoke_spec(config: StackConfig) -> SmokeSpec:
    """What the smoke proof checks of these pods, on the stack's GPUs."""
    smoke = config.smoke_test
    return SmokeSpec(
        pods=SMOKE_POD_NAMES,
        gpu_memory_mib=config.nodes.gpu_memory_mib,
        gpu_fraction=smoke.gpu_fraction,
        namespace=smoke.namespace,
        queue=smoke.queue,
        agents_namespace=config.gpu_fractioning.namespace,
    )
