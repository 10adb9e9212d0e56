"""How a check runs inside the Pulumi engine: as a resource of this package's own provider plugin
(provider/, served by components/plugin.py) whose inputs are its cluster access and its spec, whose
outputs are its results and report, and whose failures reach the operator as findings rather than
crashes. The gates, the proofs and the teardown waits stand on it.

Stacks deployed before the plugin hold these resources as Python dynamic resources, whose providers
are pickled into the state by module path (components/checks/). Each resource names that type as an
alias, and the plugin answers that replacing the dynamic provider replaces nothing, so the next `up`
moves them to the plugin as they are: no check runs again, no destroy-time wait runs.
"""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import pulumi
from pulumi.dynamic import ResourceProvider
from pydantic import TypeAdapter

from components.cluster.results import ReportedFailure

Spec = TypeVar("Spec")

PACKAGE = "kai-gpu-fractions"

# Inputs that only say how to reach the cluster: a change of them alone is no change of the resource.
ACCESS_KEYS = frozenset({"__provider", "kubeconfig", "context"})


@dataclass(frozen=True)
class ClusterAccess:
    """How the program reaches the cluster: a kubeconfig (a path, or the contents as a secret) and a
    context, both None for the ambient configuration. The stack builds one and hands it to the
    Kubernetes provider and to every resource that reads the cluster itself."""

    kubeconfig: pulumi.Input[str] | None
    context: str | None


def cluster_props(access: ClusterAccess, **props: Any) -> dict[str, Any]:
    """The resource's inputs: cluster access, with the kubeconfig as a secret, then its own."""
    secret = pulumi.Output.secret(access.kubeconfig) if access.kubeconfig is not None else None
    return {"kubeconfig": secret, "context": access.context, **props}


def spec_props(spec: Any) -> dict[str, Any]:
    """A spec dataclass's fields as the resource's inputs."""
    return dataclasses.asdict(spec)


def spec_from_props(spec_type: type[Spec], props: Mapping[str, Any]) -> Spec:
    """The spec back from the inputs the engine hands the provider (numbers may arrive as floats)."""
    names = {field.name for field in dataclasses.fields(spec_type)}  # type: ignore[arg-type]
    return TypeAdapter(spec_type).validate_python({k: v for k, v in props.items() if k in names})


def resource_type(kind: str) -> str:
    return f"{PACKAGE}:index:{kind}"


def dynamic_type(kind: str) -> str:
    """The type a stack deployed before the plugin holds the resource under."""
    return f"pulumi-python:dynamic/{PACKAGE}:{kind}"


class PackageResource(pulumi.CustomResource):
    """A resource whose create, update and delete the plugin runs with `handler`, a provider with
    the interface of a Python dynamic provider (which is how older stacks still load it)."""

    kind: ClassVar[str]
    handler: ClassVar[type[ResourceProvider]]

    def __init_subclass__(cls, *, handler: type[ResourceProvider] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if handler is not None:
            cls.kind, cls.handler = cls.__name__, handler

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None) -> None:
        moved = pulumi.ResourceOptions(
            additional_secret_outputs=["kubeconfig"], aliases=[pulumi.Alias(type_=dynamic_type(self.kind))]
        )
        super().__init__(resource_type(self.kind), name, props, pulumi.ResourceOptions.merge(opts, moved))


def _to_stderr(line: str) -> None:
    # The engine shows a dynamic provider's stderr as it comes, under the stack's diagnostics.
    print(line, file=sys.stderr, flush=True)


# Where a running check's progress goes. The engine hides a provider plugin's output, so the plugin
# points this at the engine's log, under the resource; a stack's dynamic providers write to stderr.
progress_sink: ContextVar[Callable[[str], None]] = ContextVar("progress_sink", default=_to_stderr)


def show_progress(line: str) -> None:
    progress_sink.get()(line)


def report_failures_without_traceback() -> None:
    """The dynamic provider server answers every exception with `traceback.format_exc()`, so a
    failed proof would reach the operator under a dozen lines of Python frames (pulumi/pulumi#10416).
    Called where the providers are defined; it changes the formatting of ReportedFailure only."""
    original = traceback.format_exc
    if getattr(original, "reports_failures_plainly", False):
        return

    def format_exc(limit: int | None = None, chain: bool = True) -> str:
        error = sys.exc_info()[1]
        return str(error) if isinstance(error, ReportedFailure) else original(limit, chain)

    format_exc.reports_failures_plainly = True  # type: ignore[attr-defined]
    traceback.format_exc = format_exc


class CheckResource(PackageResource):
    results: pulumi.Output[list[dict[str, Any]]]
    report: pulumi.Output[str]
    # What the check last ran for: an input the outputs echo once it held.
    triggers: pulumi.Output[Any]

    def __init__(
        self, name: str, spec: Any, access: ClusterAccess, opts: pulumi.ResourceOptions | None, **extra: Any
    ) -> None:
        # The outputs start empty.
        super().__init__(name, cluster_props(access, **spec_props(spec), **extra, results=None, report=None), opts)
