"""What every component of the package does with its inputs: they are sections of stack config
(components/package/args.py), validated into the same StackConfig that stack config is read into, and
the graph made from it registers under the component; its outputs are the stack outputs of the
top-level program. The components themselves: stacks.py (the profiles) and pieces.py (the steps).

No `from __future__ import annotations` here: the schema is inferred from the annotations at run time.
"""

import contextlib
import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NotRequired, Required, TypedDict

import pulumi
from pulumi.errors import InputPropertiesError
from pydantic.alias_generators import to_snake

from components.cluster.engine import ClusterAccess
from components.cluster.results import CheckResult
from components.config.load import ConfigError, parse_config
from components.config.model import StackConfig
from components.package.args import SECTIONS, as_config, plain_type
from components.preflight.decisions import Finding


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


def args_type(name: str, sections: Iterable[str], cluster: bool = True) -> type:
    """The component's inputs: the config sections (camelCase keys) it reads, then how it reaches
    the cluster and, when it reads `registry`, the registry's password."""
    read = {to_snake(key) for key in sections}
    fields: dict[str, Any] = {key: hint for key, hint in SECTIONS.items() if key in read}
    if cluster:
        fields["kubeconfig"] = NotRequired[pulumi.Input[str]]  # type: ignore[misc]
        fields["context"] = NotRequired[str]
    if "registry" in read:
        fields["registry_password"] = NotRequired[pulumi.Input[str]]  # type: ignore[misc]
        # The forks' images are pushed to it and pulled from it.
        fields["registry"] = Required[typing.get_args(SECTIONS["registry"])[0]]
    made = types.new_class(name, (TypedDict,), {}, lambda ns: ns.update(__annotations__=fields))
    made.__module__ = __name__
    return made


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


# What a component registers: its graph from the config, the registry password, and the cluster.
Graph = Callable[[StackConfig, pulumi.Output[str] | None, ClusterAccess], dict[str, Any]]


def build(
    component: pulumi.ComponentResource,
    profile: str,
    args: Mapping[str, Any],
    graph: Graph,
    needs_registry: bool | None = None,
) -> dict[str, Any]:
    """Validates the inputs as stack config (of `profile`, which says whether a registry is needed
    unless `needs_registry` does), then registers `graph` under `component`."""
    try:
        config = parse_config(raw_config(profile, args), needs_registry=needs_registry)
    except ConfigError as error:
        raise input_errors(type(component).__name__, error) from None
    kubeconfig = args.get("kubeconfig")
    access = ClusterAccess(pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None, args.get("context"))
    password = args.get("registry_password")
    with children_of(component):
        outputs = graph(config, pulumi.Output.secret(password) if password is not None else None, access)
    for key, value in outputs.items():
        setattr(component, to_snake(key), value)
    return outputs
