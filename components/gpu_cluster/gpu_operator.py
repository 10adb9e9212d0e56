"""GpuOperator: the NVIDIA GPU Operator release that provides the r615 driver, toolkit and GFD labels."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.cluster.engine import ClusterAccess
from components.config.model import GpuOperatorConfig
from components.proofs.smoke_decisions import SmokeSpec
from components.rollout.driver import ROLLOUT_TAINT, RolloutSpec
from components.rollout.run import DriverRollout

# The chart's toleration for every operand (values.yaml daemonsets.tolerations), and one for the
# rollout's taint: the driver, toolkit, validator and the rest stay on a node whose driver is replaced.
OPERAND_TOLERATIONS = [
    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": ROLLOUT_TAINT["key"], "operator": "Exists", "effect": ROLLOUT_TAINT["effect"]},
]


def gpu_operator_values(config: GpuOperatorConfig) -> dict[str, Any]:
    """The chart's default driver (595.x) has no MPS `namespace` support, so r615 is pinned;
    nodes with a host-installed r615 driver turn the driver container off instead.

    The operator's own driver upgrade controller is off: it would label every GPU node at once (which
    evicts the node agents everywhere) and it drains no fractional pod, so the unload fails under them
    (../shared/reference/day2-upstream.md 1.2-1.6). components/rollout/ takes a new driver to the nodes
    instead, and its taint must not evict the operands. Both are set at install, so that the first
    driver change already runs that way.
    """
    if config.driver.source == "host":
        return {"driver": {"enabled": False}}
    return {
        "driver": {"enabled": True, "version": config.driver.version, "upgradePolicy": {"autoUpgrade": False}},
        "daemonsets": {"tolerations": OPERAND_TOLERATIONS},
    }


def rollout_spec(config: GpuOperatorConfig, agents_namespace: str, proof: SmokeSpec | None = None) -> RolloutSpec:
    """How the driver reaches the nodes; `proof` is what each node must pass once uncordoned, when
    gpuOperator.rollout.proveEachNode is on."""
    rollout = config.rollout
    return RolloutSpec(
        namespace=config.namespace,
        driver_version=config.driver.version,
        agents_namespace=agents_namespace,
        max_nodes_at_once=rollout.max_nodes_at_once,
        drain_grace_seconds=rollout.drain_grace_seconds,
        node_timeout_seconds=rollout.node_timeout_seconds,
        proof=proof if rollout.prove_each_node else None,
    )


class GpuOperator(pulumi.ComponentResource):
    """Installs the GPU Operator chart into its own privileged namespace, and takes a new driver to
    the GPU nodes node by node (components/rollout/run.py); what depends on this component waits for both.

    The operator itself creates the `nvidia` RuntimeClass and the GPU node labels.
    """

    release: k8s.helm.v3.Release
    status: pulumi.Output[str]
    rollout: DriverRollout | None

    def __init__(
        self,
        name: str,
        config: GpuOperatorConfig,
        access: ClusterAccess,
        agents_namespace: str,
        opts: pulumi.ResourceOptions | None = None,
        proof: SmokeSpec | None = None,
    ) -> None:
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
        self.rollout = None
        if config.driver.source == "operator":
            self.rollout = DriverRollout(
                f"{name}-driver-rollout",
                rollout_spec(config, agents_namespace, proof),
                access=access,
                triggers=self.release.status.revision,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
            )
        self.status = self.release.status.status
        self.register_outputs({"status": self.status})
