"""The stack's profiles as components a Pulumi program in any language creates: the whole GPU stack,
the laptop lab, and the admission policy alone; each registers the graph the top-level program
registers for that profile (components/stack.py deploy).

No `from __future__ import annotations` here: the schema is inferred from the annotations at run time.
"""

from typing import Any

import pulumi

from components.cluster.engine import resource_type
from components.config.load import PROFILE_KEYS
from components.package.component import PreflightFinding, ProofCheck, args_type, build
from components.stack import deploy


def profile_args(name: str, profile: str) -> type:
    return args_type(name, PROFILE_KEYS[profile] - {"profile", "cluster", "registryPassword"})


GpuStackArgs = profile_args("GpuStackArgs", "fork")
LabArgs = profile_args("LabArgs", "lab")
AdmissionPolicyArgs = profile_args("AdmissionPolicyArgs", "admission")


class GpuStack(pulumi.ComponentResource):
    """The build guide's stack on a GPU cluster: the forks built from their pinned commits and pushed,
    the GPU Operator with the r615 driver, KAI in NvFractions mode and the gpu-fractioning node agents,
    each gated on its verification, then proved with two half-GPU smoke pods."""

    preflight: pulumi.Output[list[PreflightFinding]]  # type: ignore[valid-type]
    rollout_plan: pulumi.Output[list[str]]
    image_tag: pulumi.Output[str]
    image_digests: pulumi.Output[dict[str, Any]]
    releases: pulumi.Output[dict[str, Any]]
    smoke_pods: pulumi.Output[list[str]] | None
    proof: pulumi.Output[list[ProofCheck]] | None  # type: ignore[valid-type]
    proof_report: pulumi.Output[str] | None
    proved_on: pulumi.Output[dict[str, Any]] | None

    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("GpuStack"), name, {}, opts)
        self.register_outputs(build(self, "fork", args, deploy))


class Lab(pulumi.ComponentResource):
    """The laptop lab: nvml-mock's fake GPUs, KAI with HAMi-core and the kai-resource-isolator, on a kind
    cluster it creates or, when `kubeconfig` is given, on that cluster."""

    preflight: pulumi.Output[list[PreflightFinding]]  # type: ignore[valid-type]
    gpu_profile: pulumi.Output[dict[str, Any]]
    gpu_nodes: pulumi.Output[list[str]]
    releases: pulumi.Output[dict[str, Any]]
    lab_pods: pulumi.Output[list[str]]
    proof: pulumi.Output[list[ProofCheck]] | None  # type: ignore[valid-type]
    proof_report: pulumi.Output[str] | None
    proved_on: pulumi.Output[dict[str, Any]] | None
    shared_pod_boundary: pulumi.Output[str]

    def __init__(self, name: str, args: LabArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("Lab"), name, {}, opts)
        self.register_outputs(build(self, "lab", args, deploy))


class AdmissionPolicy(pulumi.ComponentResource):
    """Only the fractional-pod admission policy, for a cluster whose GPU software is installed some
    other way: fractional pods without the MPS RuntimeClass, or running as root, are refused."""

    admission: pulumi.Output[str]

    def __init__(self, name: str, args: AdmissionPolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("AdmissionPolicy"), name, {}, opts)
        self.register_outputs(build(self, "admission", args, deploy))


COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (GpuStack, Lab, AdmissionPolicy)
