"""The stack's profiles as components a Pulumi program in any language creates: the whole GPU stack,
the laptop lab, and the admission policy alone. Each validates its inputs into the same StackConfig
that stack config is read into, and registers the same graph (components/stack.py deploy) under
itself; its outputs are the stack outputs of the top-level program.

No `from __future__ import annotations` here: the schema is inferred from the annotations at run time.
"""

import contextlib
import dataclasses
import types
import typing
from collections.abc import Iterator, Mapping
from typing import Any, NotRequired, Required, TypedDict

import pulumi
from pulumi.errors import InputPropertiesError
from pydantic.alias_generators import to_snake

from components.cluster.engine import ClusterAccess, resource_type
from components.cluster.results import CheckResult
from components.config.load import PROFILE_KEYS, ConfigError, parse_config
from components.package.args import SECTIONS, as_config, plain_type
from components.preflight.decisions import Finding
from components.stack import deploy


def record(name: str, shape: type, doc: str) -> type:
    """A dataclass's fields as a TypedDict of plain values (enums as their text)."""
    hints = {name: plain_type(hint) for name, hint in typing.get_type_hints(shape).items()}
    fields = {
        field.name: str if typing.get_origin(hints[field.name]) is typing.Literal else hints[field.name]
        for field in dataclasses.fields(shape)
    }
    made = types.new_class(name, (TypedDict,), {}, lambda ns: ns.update(__annotations__=fields))
    made.__module__ = __name__
    made.__doc__ = doc
    return made


PreflightFinding = record(
    "PreflightFinding",
    Finding,
    "A prerequisite that did not pass: the row, where, its outcome, what was seen, the fix.",
)
ProofCheck = record("ProofCheck", CheckResult, "One check of a proof: whether it held, and what was measured.")


def args_type(name: str, profile: str, password: bool) -> type:
    """The component's inputs: the config sections its profile reads, then how to reach the cluster."""
    read = {to_snake(key) for key in PROFILE_KEYS[profile]} - {"profile", "cluster"}
    fields: dict[str, Any] = {key: hint for key, hint in SECTIONS.items() if key in read}
    fields["kubeconfig"] = NotRequired[pulumi.Input[str]]  # type: ignore[misc]
    fields["context"] = NotRequired[str]
    if password:
        fields["registry_password"] = NotRequired[pulumi.Input[str]]  # type: ignore[misc]
        # The forks' images are pushed to it and pulled from it.
        fields["registry"] = Required[typing.get_args(SECTIONS["registry"])[0]]
    made = types.new_class(name, (TypedDict,), {}, lambda ns: ns.update(__annotations__=fields))
    made.__module__ = __name__
    return made


GpuStackArgs = args_type("GpuStackArgs", "fork", password=True)
LabArgs = args_type("LabArgs", "lab", password=False)
AdmissionPolicyArgs = args_type("AdmissionPolicyArgs", "admission", password=False)

ACCESS_INPUTS = frozenset({"kubeconfig", "context", "registry_password"})


def raw_config(profile: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs as stack config would hold them."""
    raw: dict[str, Any] = as_config({key: value for key, value in args.items() if key not in ACCESS_INPUTS})
    raw.setdefault("profile", profile)
    if args.get("context"):
        raw["cluster"] = {"context": args["context"]}
    if profile == "lab" and args.get("kubeconfig") is not None:
        # A cluster the consumer gives is the lab's cluster: no kind cluster is made unless asked for.
        raw["lab"] = {"kind": None, **raw.get("lab", {})}
    return raw


def input_errors(component: str, error: ConfigError) -> InputPropertiesError:
    """The model's reasons, one per input path, as the engine shows bad inputs."""
    rows = [line.removeprefix("  - kai-gpu-fractions:") for line in str(error).splitlines()[1:]]
    found = [row.split(": ", 1) for row in rows if ": " in row]
    return InputPropertiesError(
        f"invalid inputs of {component}",
        [{"property_path": path, "reason": reason} for path, reason in found],
    )


@contextlib.contextmanager
def children_of(component: pulumi.ComponentResource) -> Iterator[None]:
    """Resources registered without a parent while inside are the component's children: the stack
    registers its graph as a program does, with the program's root as the default parent."""
    token = pulumi.runtime.settings.ROOT.set(component)
    try:
        yield
    finally:
        pulumi.runtime.settings.ROOT.reset(token)


def build(component: pulumi.ComponentResource, profile: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Validates the inputs as stack config, then registers the profile's graph under `component`."""
    try:
        config = parse_config(raw_config(profile, args))
    except ConfigError as error:
        raise input_errors(type(component).__name__, error) from None
    kubeconfig = args.get("kubeconfig")
    access = ClusterAccess(pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None, args.get("context"))
    password = args.get("registry_password")
    with children_of(component):
        outputs = deploy(config, pulumi.Output.secret(password) if password is not None else None, access)
    for key, value in outputs.items():
        setattr(component, to_snake(key), value)
    return outputs


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
        self.register_outputs(build(self, "fork", args))


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
        self.register_outputs(build(self, "lab", args))


class AdmissionPolicy(pulumi.ComponentResource):
    """Only the fractional-pod admission policy, for a cluster whose GPU software is installed some
    other way: fractional pods without the MPS RuntimeClass, or running as root, are refused."""

    admission: pulumi.Output[str]

    def __init__(self, name: str, args: AdmissionPolicyArgs, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
        super().__init__(resource_type("AdmissionPolicy"), name, {}, opts)
        self.register_outputs(build(self, "admission", args))


COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (GpuStack, Lab, AdmissionPolicy)
