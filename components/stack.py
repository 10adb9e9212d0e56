"""The fork deployment as one graph: images → GPU Operator → KAI → gpu-fractioning → smoke pods."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.config import StackConfig
from components.forks import GPU_FRACTIONING, KAI_SCHEDULER, ForkRecipe
from components.gpu_fractioning import GpuFractioning, gpu_fractioning_values
from components.gpu_operator import GpuOperator
from components.kai_scheduler import KaiScheduler, kai_fork_values
from components.smoke_pods import SmokePods


@dataclass(frozen=True)
class ForkOutputs:
    tag: pulumi.Output[str]
    digests: pulumi.Output[dict[str, str]]
    chart: pulumi.Output[str] | None


def cluster_provider(config: StackConfig) -> k8s.Provider:
    kubeconfig = config.cluster.kubeconfig
    return k8s.Provider(
        "cluster",
        # The provider takes a path or the file's contents; `~` is not expanded for a path.
        kubeconfig=os.path.expanduser(kubeconfig) if kubeconfig else None,
        context=config.cluster.context,
    )


def deploy_forks(config: StackConfig, registry_password: pulumi.Output[str] | None) -> dict[str, Any]:
    """Registers every resource of the fork stack and returns the stack outputs."""
    provider = cluster_provider(config)
    in_cluster = pulumi.ResourceOptions(providers={"kubernetes": provider})
    tag = config.forks.image_tag
    pull_secret = None
    if registry_password is not None and config.registry.username:
        pull_secret = helm.PullSecret.for_registry(
            config.registry.pull_secret_name,
            config.registry.host,
            config.registry.username,
            registry_password,
        )
    pull_secret_name = pull_secret.name if pull_secret else None

    kai_fork = fork_outputs(config, KAI_SCHEDULER, registry_password, needs_chart=config.kai.chart is None)
    agents_fork = fork_outputs(
        config, GPU_FRACTIONING, registry_password, needs_chart=config.gpu_fractioning.chart is None
    )

    operator = (
        GpuOperator("gpu-operator", config.gpu_operator, opts=in_cluster) if config.gpu_operator.enabled else None
    )
    kai = KaiScheduler(
        "kai-scheduler",
        config.kai,
        values=kai_fork.tag.apply(
            lambda t: kai_fork_values(
                config.kai, f"{config.registry.server}/{KAI_SCHEDULER.image_path}", t, pull_secret_name
            )
        ),
        chart=kai_fork.chart,
        pull_secret=pull_secret,
        # KAI reads what the GPU Operator sets up (RuntimeClass, GPU labels) from the cluster, not from outputs.
        opts=pulumi.ResourceOptions.merge(
            in_cluster, pulumi.ResourceOptions(depends_on=[operator] if operator else [])
        ),
    )
    agents = GpuFractioning(
        "gpu-fractioning",
        config.gpu_fractioning,
        values=agents_fork.tag.apply(
            lambda t: gpu_fractioning_values(
                config.gpu_fractioning,
                config.registry.server,
                t,
                config.nodes.gpus_per_node,
                pull_secret_name,
            )
        ),
        chart=agents_fork.chart,
        pull_secret=pull_secret,
        # The node agents serve KAI's annotations and KAI's operator waits for their config.
        opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[kai])),
    )
    outputs: dict[str, Any] = {
        "imageTag": tag,
        "imageDigests": pulumi.Output.all(kai=kai_fork.digests, agents=agents_fork.digests).apply(
            lambda d: {KAI_SCHEDULER.key: d["kai"], GPU_FRACTIONING.key: d["agents"]}
        ),
        "releases": pulumi.Output.all(
            **{
                "gpu-operator": operator.status if operator else "not managed by this stack",
                "kai-scheduler": kai.status,
                "gpu-fractioning": agents.status,
            }
        ),
    }
    if config.smoke_test.enabled:
        smoke = SmokePods(
            "smoke-test",
            config.smoke_test,
            # Fractional pods need the node agents running; nothing in the release's outputs says so.
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[agents])),
        )
        outputs["smokePods"] = smoke.names
    return outputs


def fork_outputs(
    config: StackConfig, recipe: ForkRecipe, registry_password: pulumi.Output[str] | None, needs_chart: bool
) -> ForkOutputs:
    """Checks out and builds one fork as far as the configuration asks."""
    mode = config.forks.images
    pin = recipe.pin(config.forks)
    checkout = None
    if needs_chart or mode == "build":
        # Imported here: the command provider is needed only when a fork is checked out.
        from components.fork_checkout import ForkCheckout

        checkout = ForkCheckout(f"{recipe.key}-source", recipe, pin, config.forks.workdir)
    if mode == "prebuilt":
        return ForkOutputs(
            pulumi.Output.from_input(config.forks.image_tag),
            pulumi.Output.from_input({}),
            checkout.chart_path if checkout else None,
        )
    from components.fork_images import ForkImages

    images = ForkImages(
        f"{recipe.key}-images",
        recipe,
        commit=pin.commit,
        registry=config.registry,
        registry_password=registry_password,
        tag=config.forks.image_tag,
        platform=config.forks.platform,
        mode=mode,
        checkout_path=checkout.path if checkout else None,
    )
    return ForkOutputs(images.tag, images.digests, checkout.chart_path if checkout else None)
