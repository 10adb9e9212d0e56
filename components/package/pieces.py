"""The GPU stack's steps as components of their own, for a team that installs some of the stack
another way or orders the steps around its own resources: the fork images, the GPU Operator, KAI,
the gpu-fractioning node agents and the smoke test. Each takes the stack config sections it reads,
registers the same step the whole stack registers (components/stack.py), gated on the same
verification, and is done when that verification holds; a program orders the pieces with
`dependsOn` as the whole stack orders its steps. Preflight and the rollout plan come with `GpuStack`
only.

No `from __future__ import annotations` here: the schema is inferred from the annotations at run time.
"""

import functools
from typing import Any

import pulumi

from components.cluster.engine import ClusterAccess, resource_type
from components.config.model import StackConfig
from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER
from components.forks.registry import RegistryCredentials
from components.forks.supply import fork_chart, supply_forks
from components.package.component import ProofCheck, args_type, build
from components.stack import (
    NOTHING_BELOW,
    Installed,
    in_cluster,
    install_gpu_fractioning,
    install_gpu_operator,
    install_kai,
    pull_secret,
    smoke_test,
)

Password = pulumi.Output[str] | None

ForkImagesArgs = args_type("ForkImagesArgs", ("forks", "registry"), cluster=False)
GpuOperatorArgs = args_type("GpuOperatorArgs", ("gpuOperator", "gpuFractioning", "nodes", "smokeTest"))
KaiSchedulerArgs = args_type("KaiSchedulerArgs", ("forks", "registry", "kai"))
GpuFractioningArgs = args_type("GpuFractioningArgs", ("forks", "registry", "gpuFractioning", "nodes", "kai"))
SmokeTestArgs = args_type("SmokeTestArgs", ("smokeTest", "nodes", "gpuFractioning", "gpuOperator"))


def step_outputs(step: Installed) -> dict[str, Any]:
    return {"release": step.status, "ready": step.ready.report if step.ready else None}


def fork_images(config: StackConfig, password: Password, _access: ClusterAccess) -> dict[str, Any]:
    forks = supply_forks(config, RegistryCredentials.of(config.fork_registry, password), charts=False)
    return {"imageTag": config.forks.image_tag, "imageDigests": forks.digests}


def gpu_operator(config: StackConfig, _password: Password, access: ClusterAccess) -> dict[str, Any]:
    return step_outputs(install_gpu_operator(config, access, in_cluster(access)))


def fork_chart_step(config: StackConfig, password: Password, access: ClusterAccess, kai: bool) -> dict[str, Any]:
    """KAI or the node agents from the fork's chart, pulling the images ForkImages pushed."""
    credentials = RegistryCredentials.of(config.fork_registry, password)
    if kai:
        fork, install = fork_chart(config, KAI_SCHEDULER, config.kai.chart is not None), install_kai
    else:
        configured = config.gpu_fractioning.chart is not None
        fork, install = fork_chart(config, GPU_FRACTIONING, configured), install_gpu_fractioning
    secret = pull_secret(config, credentials)
    return step_outputs(install(config, access, in_cluster(access), fork, secret, NOTHING_BELOW))


def smoke_pods_and_proof(config: StackConfig, _password: Password, access: ClusterAccess) -> dict[str, Any]:
    return smoke_test(config, access, in_cluster(access), NOTHING_BELOW, None)


class ForkImages(pulumi.ComponentResource):
    """Both forks' images built from their pinned commits, pushed to `registry` and verified there, as
    far as `forks.images` asks (build, verify, or prebuilt: nothing to do)."""

    image_tag: pulumi.Output[str]
    image_digests: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: ForkImagesArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("ForkImages"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, fork_images, needs_registry=True))


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator with the pinned driver (unless `gpuOperator.enabled` is false: then only
    its gate), done when the guide's verification of it holds."""

    release: pulumi.Output[str]
    ready: pulumi.Output[str]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("GpuOperator"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, gpu_operator, needs_registry=False))


class KaiScheduler(pulumi.ComponentResource):
    """KAI-Scheduler from the fork's chart and images in NvFractions mode, done when its verification
    holds. Order it after the GPU Operator and ForkImages."""

    release: pulumi.Output[str]
    ready: pulumi.Output[str]

    def __init__(self, name: str, args: KaiSchedulerArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("KaiScheduler"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, functools.partial(fork_chart_step, kai=True)))


class GpuFractioning(pulumi.ComponentResource):
    """The gpu-fractioning node agents (MPS v3 namespaces) from the fork's chart and images, done when
    every GPU node's agent is ready. Order it after KaiScheduler."""

    release: pulumi.Output[str]
    ready: pulumi.Output[str]

    def __init__(self, name: str, args: GpuFractioningArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("GpuFractioning"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, functools.partial(fork_chart_step, kai=False)))


class SmokeTest(pulumi.ComponentResource):
    """Two half-GPU smoke pods and, when `smokeTest.prove`, the proof of their SM and memory caps.
    Order it after GpuFractioning (and the admission policy)."""

    smoke_pods: pulumi.Output[list[str]] | None
    proof: pulumi.Output[list[ProofCheck]] | None  # type: ignore[valid-type]
    proof_report: pulumi.Output[str] | None
    proved_on: pulumi.Output[dict[str, Any]] | None

    def __init__(self, name: str, args: SmokeTestArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("SmokeTest"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, smoke_pods_and_proof, needs_registry=False))


PIECES: tuple[type[pulumi.ComponentResource], ...] = (ForkImages, GpuOperator, KaiScheduler, GpuFractioning, SmokeTest)
