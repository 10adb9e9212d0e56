"""Shared Helm release plumbing: chart sources and namespaces owned by the stack."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config import ChartSource

RELEASE_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class PullSecret:
    """Registry credentials for a private registry, as a docker config JSON (a Pulumi secret)."""

    name: str
    docker_config: pulumi.Output[str]

    @staticmethod
    def for_registry(name: str, host: str, username: str, password: pulumi.Output[str]) -> PullSecret:
        auth = {"auths": {host: {"username": username, "password": password}}}
        return PullSecret(name, pulumi.Output.secret(pulumi.Output.json_dumps(auth)))


PRIVILEGED_NAMESPACE_LABELS = {"pod-security.kubernetes.io/enforce": "privileged"}


def release(
    resource_name: str,
    *,
    release_name: str,
    namespace: pulumi.Input[str],
    source: ChartSource | None,
    local_chart: pulumi.Input[str] | None,
    values: pulumi.Input[dict[str, Any]],
    opts: pulumi.ResourceOptions,
    skip_await: bool = False,
) -> k8s.helm.v3.Release:
    """A Helm release of `source`, or of a chart directory produced by another resource."""
    chart: pulumi.Input[str]
    if source is not None:
        chart, version, repo = source.chart, source.version, source.repo
    elif local_chart is not None:
        chart, version, repo = local_chart, None, None
    else:
        raise ValueError(f"{release_name}: no chart source")
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name,
        namespace=namespace,
        chart=chart,
        version=version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo else None,
        values=values,
        create_namespace=False,
        skip_await=skip_await,
        timeout=RELEASE_TIMEOUT_SECONDS,
        opts=opts,
    )


def namespace(
    resource_name: str, name: str, opts: pulumi.ResourceOptions, privileged: bool = False
) -> k8s.core.v1.Namespace:
    """A namespace the stack owns, so it is created before and deleted after its release."""
    return k8s.core.v1.Namespace(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, labels=PRIVILEGED_NAMESPACE_LABELS if privileged else None),
        opts=opts,
    )


def pull_secret(
    resource_name: str, secret: PullSecret, namespace: pulumi.Input[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    return k8s.core.v1.Secret(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=secret.name, namespace=namespace),
        type="kubernetes.io/dockerconfigjson",
        string_data={".dockerconfigjson": secret.docker_config},
        opts=opts,
    )


def adopt(
    resource_name: str, api_version: str, kind: str, name: str, opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """Takes ownership of an object a chart creates but never deletes (or deletes too late).

    Server-side apply upserts, and sending no spec leaves the chart the only source of its
    fields; owning the object makes `pulumi destroy` delete it. Pass the release in `opts`'
    depends_on so the object is deleted before the release is uninstalled.
    """
    return k8s.apiextensions.CustomResource(
        resource_name, api_version=api_version, kind=kind, metadata={"name": name}, opts=opts
    )
