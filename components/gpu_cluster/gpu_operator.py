"""GpuOperator: the NVIDIA GPU Operator release that provides the r615 driver, toolkit and GFD labels."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.config.model import GpuOperatorConfig


def gpu_operator_values(config: GpuOperatorConfig) -> dict[str, Any]:
    """The chart's default driver (595.x) has no MPS `namespace` support, so r615 is pinned;
    nodes with a host-installed r615 driver turn the driver container off instead."""
    if config.driver.source == "host":
        return {"driver": {"enabled": False}}
    return {"driver": {"enabled": True, "version": config.driver.version}}


class GpuOperator(pulumi.ComponentResource):
    """Installs the GPU Operator chart into its own privileged namespace.

    The operator itself creates the `nvidia` RuntimeClass and the GPU node labels.
    """

    release: k8s.helm.v3.Release
    status: pulumi.Output[str]

    def __init__(self, name: str, config: GpuOperatorConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:gpu:GpuOperator", name, None, opts)
        self.release = helm.install(
            self,
            name,
            release_name="gpu-operator",
            namespace=config.namespace,
            values=gpu_operator_values(config),
            source=config.chart,
            privileged=True,
        )
        self.status = self.release.status.status
        self.register_outputs({"status": self.status})
