"""What the dynamic resources that read the cluster themselves (proofs, waits) share: their cluster
access as inputs, their spec as inputs, and failures reported as findings rather than crashes."""

from __future__ import annotations

import dataclasses
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi
from pydantic import TypeAdapter

Spec = TypeVar("Spec")

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


def with_secret_kubeconfig(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))


class ReportedFailure(Exception):
    """A finding for the operator (a failed proof, pods that did not stop), not a bug: the dynamic
    provider server reports it as its message alone."""


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
