"""Inputs shared by the dynamic resources that read the cluster themselves (proofs, teardown waits)."""

from __future__ import annotations

from typing import Any

import pulumi

# Inputs that only say how to reach the cluster: a change of them alone is no change of the resource.
ACCESS_KEYS = frozenset({"__provider", "kubeconfig", "context"})


def cluster_props(kubeconfig: pulumi.Input[str] | None, context: str | None, **props: Any) -> dict[str, Any]:
    """The resource's inputs: cluster access, with the kubeconfig as a secret, then its own."""
    secret = pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None
    return {"kubeconfig": secret, "context": context, **props}


def with_secret_kubeconfig(opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))
