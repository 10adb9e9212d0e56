"""GpuNodeLabels: the GPU Feature Discovery labels nvml-mock does not set, on each lab GPU node."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import GpuProfile


def gpu_node_labels(profile: GpuProfile) -> dict[str, str]:
    return {
        "nvidia.com/gpu.memory": str(profile.memory_mib),
        "nvidia.com/gpu.product": profile.product,
        "nvidia.com/gpu.count": str(profile.count),
    }


class GpuNodeLabels(pulumi.ComponentResource):
    """Patches the labels onto existing nodes; destroy removes only these labels.

    KAI caches each GPU's memory when it first registers a node, so this must precede KAI:
    a label added later leaves memory at 0 and every shared pod Pending.
    """

    nodes: pulumi.Output[list[str]]

    def __init__(
        self, name: str, node_names: list[str], profile: GpuProfile, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("kai-gpu-fractions:lab:GpuNodeLabels", name, None, opts)
        patches = [
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node, labels=gpu_node_labels(profile)),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for node in node_names
        ]
        self.nodes = pulumi.Output.all(*[p.metadata.apply(lambda m: m["name"] if m else "") for p in patches])
        self.register_outputs({"nodes": self.nodes})
