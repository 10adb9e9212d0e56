"""GpuFractioning: the fork's node agents (operator, mpsd, fractiond, metricsd) and their uninstall order."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.cluster.engine import ClusterAccess
from components.config.model import GpuFractioningConfig
from components.forks.recipes import GPU_FRACTIONING
from components.owned import own_chart_leftover
from components.teardown.waits import NamespacesGone, PodsGoneBeforeUninstall, waited_by
from components.vocabulary.fractioning import (
    CONFIG_API_VERSION,
    CONFIG_KIND,
    MPSD_SELECTOR,
    OPERATOR_DEPLOYMENT,
    RUNTIME_SOCKETS,
    mpsd_memory_limit_mib,
)

# The guide waits this long for the mpsd pods to terminate; they take about a minute.
MPSD_STOP_TIMEOUT_SECONDS = 180


def memory_quantity(mib: int) -> str:
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def gpu_fractioning_values(
    config: GpuFractioningConfig,
    repo_base: str,
    tag: pulumi.Input[str],
    gpus_per_node: int,
    pull_secret: str | None,
) -> dict[str, Any]:
    """Every image gets its repository AND tag: an empty tag silently deploys the chart's appVersion."""
    values: dict[str, Any] = {
        "images": {image: {"repository": f"{repo_base}/{image}", "tag": tag} for image in GPU_FRACTIONING.images},
        "gpuOperator": {"minimumVersion": config.minimum_gpu_operator_version},
        "mpsDaemon": {"resources": {"limits": {"memory": memory_quantity(mpsd_memory_limit_mib(gpus_per_node))}}},
    }
    if sockets := RUNTIME_SOCKETS[config.node_runtime]:
        values["fractioningAgent"] = dict(sockets)
    if pull_secret:
        values["imagePullSecrets"] = [{"name": pull_secret}]
    return values


def configuration_warnings(config: GpuFractioningConfig) -> list[str]:
    warnings = []
    if config.minimum_gpu_operator_version == "v26.7.0":
        warnings.append(
            "gpuFractioning.minimumGpuOperatorVersion is v26.7.0: the memory cap then rests only on "
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, an environment variable a process in the container can change. "
            "Use GPU Operator v26.7.1 for a driver-enforced cap."
        )
    if config.node_runtime == "microk8s":
        warnings.append(
            "gpuFractioning.nodeRuntime is microk8s: on every GPU node, symlink the CRI socket first: "
            "mkdir -p /opt/kai-runtime && ln -sf /var/snap/microk8s/common/run/containerd.sock "
            "/opt/kai-runtime/containerd.sock"
        )
    return warnings


class GpuFractioning(pulumi.ComponentResource):
    """Installs the gpu-fractioning chart and takes ownership of its `default` GpuFractioningConfig.

    Owning that object makes `pulumi destroy` delete it, and wait for the operator to clear its
    finalizer, then for the mpsd pods to be gone, before the chart (and so the operator) is
    uninstalled. Uninstalled the other way round, the finalizer can never be removed.
    """

    release: k8s.helm.v3.Release
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: GpuFractioningConfig,
        values: pulumi.Input[dict[str, Any]],
        local_chart: pulumi.Input[str] | None,
        access: ClusterAccess,
        pull_secret: helm.PullSecret | None = None,
        namespaces_gone: NamespacesGone | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:gpu:GpuFractioning", name, None, waited_by(opts, namespaces_gone))
        for warning in configuration_warnings(config):
            pulumi.log.warn(warning, resource=self)
        self.release = helm.install(
            self,
            name,
            release_name="gpu-fractioning",
            namespace=config.namespace,
            values=values,
            source=config.chart,
            local_chart=local_chart,
            privileged=True,
            pull_secret=pull_secret,
            deletion_awaited_elsewhere=namespaces_gone is not None,
        )
        # Destroy runs this backwards: the config goes, then the mpsd pods, then the release.
        daemons_stopped = PodsGoneBeforeUninstall(
            f"{name}-mpsd-stopped",
            access=access,
            namespace=config.namespace,
            label_selector=MPSD_SELECTOR,
            timeout_seconds=MPSD_STOP_TIMEOUT_SECONDS,
            fix=f"The operator stops them once the default {CONFIG_KIND} is deleted: check "
            f"`kubectl -n {config.namespace} logs deploy/{OPERATOR_DEPLOYMENT}`, or delete the pods.",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        self.default_config = own_chart_leftover(
            f"{name}-default-config",
            CONFIG_API_VERSION,
            CONFIG_KIND,
            "default",
            pulumi.ResourceOptions(parent=self, depends_on=[daemons_stopped]),
        )
        self.status = self.release.status.status
        self.register_outputs({"status": self.status})
