"""KaiScheduler: the KAI-Scheduler release, in the fork's NvFractions mode or the lab's HAMi-core mode."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.cluster.engine import ClusterAccess
from components.config.model import ChartSource, KaiConfig
from components.owned import own_chart_leftover
from components.teardown.waits import KeptObjectsDeleted, NamespacesGone, waited_by
from components.vocabulary.kai import (
    CHART_KEPT_QUEUES,
    QUEUE_API_VERSION,
    QUEUE_GROUP,
    QUEUE_PLURAL,
    QUEUE_VERSION,
    RESERVATION_NAMESPACE,
    SHARD_API_VERSION,
    SHARD_GROUP,
    SHARD_PLURAL,
    SHARD_VERSION,
)


def kai_fork_values(
    config: KaiConfig, image_registry: str, tag: pulumi.Input[str], pull_secret: str | None
) -> dict[str, Any]:
    """Values for the fork chart: NvFractions (case-sensitive), the fork images, and the nvidia
    RuntimeClass for reservation pods, which call NVML.

    Only the tag may be unknown at preview, so policies can still read every other value.
    """
    global_values: dict[str, Any] = {
        "gpuSharingMode": "NvFractions",
        "registry": image_registry,
        "tag": tag,
        # `true` would install the upstream gpu-fractioning subchart instead of the fork.
        "nvFractions": {"set": False},
    }
    if pull_secret:
        global_values["imagePullSecrets"] = [{"name": pull_secret}]
    values: dict[str, Any] = {
        "global": global_values,
        "binder": {"runtimeClassName": config.binder_runtime_class},
    }
    if config.render_config_inline:
        values |= {"kaiConfig": {"render": True}, "kaiConfigDeployer": {"enabled": False}}
    return values


def kai_lab_values(config: KaiConfig) -> dict[str, Any]:
    """Values for the public v0.17.0 chart with HAMi-core memory isolation."""
    values: dict[str, Any] = {
        "global": {"gpuSharing": True},
        "binder": {
            "plugins": {"hamicore": {"enabled": True}},
            "runtimeClassName": config.binder_runtime_class,
        },
    }
    if config.render_config_inline:
        values |= {"kaiConfig": {"render": True}, "kaiConfigDeployer": {"enabled": False}}
    return values


class KaiScheduler(pulumi.ComponentResource):
    """Installs KAI-Scheduler into its namespace (with the image pull secret, if any) and waits
    until every workload of the release is ready.

    It also owns the reservation namespace, which the chart leaves behind on uninstall. The CRDs
    stay, as Helm leaves them: other workloads may use them.
    """

    release: k8s.helm.v3.Release
    status: pulumi.Output[str]
    resource_name: str

    def __init__(
        self,
        name: str,
        config: KaiConfig,
        values: pulumi.Input[dict[str, Any]],
        source: ChartSource | None,
        local_chart: pulumi.Input[str] | None,
        access: ClusterAccess,
        pull_secret: helm.PullSecret | None = None,
        namespaces_gone: NamespacesGone | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:kai:KaiScheduler", name, None, waited_by(opts, namespaces_gone))
        awaited_elsewhere = namespaces_gone is not None
        self.resource_name = name
        self.release = helm.install(
            self,
            name,
            release_name="kai-scheduler",
            namespace=config.namespace,
            values=values,
            source=source,
            local_chart=local_chart,
            pull_secret=pull_secret,
            deletion_awaited_elsewhere=awaited_elsewhere,
        )
        # The chart keeps it on uninstall; the stack owns it so destroy leaves a clean cluster.
        helm.stack_namespace(
            f"{name}-reservation-namespace",
            RESERVATION_NAMESPACE,
            pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
            deletion_awaited_elsewhere=awaited_elsewhere,
        )
        # KaiKeptObjects owns these only once KAI's gate holds; if it never does, destroy still
        # deletes them, or the next install meets Queues no release owns.
        KeptObjectsDeleted(
            f"{name}-kept-objects-deleted",
            access=access,
            objects=[(QUEUE_GROUP, QUEUE_VERSION, QUEUE_PLURAL, q) for q in CHART_KEPT_QUEUES]
            + [(SHARD_GROUP, SHARD_VERSION, SHARD_PLURAL, "default")],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        self.status = self.release.status.status
        self.register_outputs({"status": self.status})


class KaiKeptObjects(pulumi.ComponentResource):
    """The objects KAI's chart creates and keeps on uninstall, owned by the stack so that destroy
    leaves a clean cluster: the default queues named in `kept_queues`, and the `default`
    SchedulingShard, whose scheduler Deployment would otherwise outlive the release.

    Owning a Queue patches it, and KAI's Queue webhook (`failurePolicy: Fail`) refuses that until
    queue-controller answers: pass KAI's gate in `opts`' depends_on. They were children of
    KaiScheduler before; the aliases keep their URNs, so existing stacks do not replace them.
    """

    def __init__(
        self,
        kai: KaiScheduler,
        kept_queues: tuple[str, ...] = CHART_KEPT_QUEUES,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        name = kai.resource_name
        super().__init__("kai-gpu-fractions:kai:KaiKeptObjects", f"{name}-kept", None, opts)
        child = pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(parent=kai)])
        for queue in kept_queues:
            own_chart_leftover(f"{name}-{queue}", QUEUE_API_VERSION, "Queue", queue, child)
        own_chart_leftover(f"{name}-default-shard", SHARD_API_VERSION, "SchedulingShard", "default", child)
        self.register_outputs({})
