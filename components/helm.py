"""Shared Helm release plumbing: chart sources and namespaces owned by the stack."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config.model import ChartSource
from components.vocabulary.fractions import SYSTEM_NAMESPACE_LABELS

RELEASE_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class PullSecret:
    """An image pull secret each release's namespace gets: its name, and a docker config JSON (a
    Pulumi secret)."""

    name: str
    docker_config: pulumi.Output[str]


PRIVILEGED_NAMESPACE_LABELS = {"pod-security.kubernetes.io/enforce": "privileged"}
# Deleting the namespace returns at once; a NamespacesGone the component depends on waits for it.
DELETION_AWAITED_ELSEWHERE = {"pulumi.com/skipAwait": "true"}


def stack_namespace(
    resource_name: str,
    name: str,
    opts: pulumi.ResourceOptions,
    *,
    privileged: bool = False,
    deletion_awaited_elsewhere: bool = False,
) -> k8s.core.v1.Namespace:
    """A namespace the stack creates (`deletion_awaited_elsewhere`: components/teardown/waits.py,
    NamespacesGone). Each holds a system daemon: the fractional-pod policy skips it."""
    labels = {**SYSTEM_NAMESPACE_LABELS, **(PRIVILEGED_NAMESPACE_LABELS if privileged else {})}
    annotations = DELETION_AWAITED_ELSEWHERE if deletion_awaited_elsewhere else None
    return k8s.core.v1.Namespace(
        resource_name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, labels=labels, annotations=annotations),
        opts=opts,
    )


def install(
    parent: pulumi.Resource,
    name: str,
    *,
    release_name: str,
    namespace: str,
    values: pulumi.Input[dict[str, Any]],
    source: ChartSource | None,
    local_chart: pulumi.Input[str] | None = None,
    privileged: bool = False,
    pull_secret: PullSecret | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    deletion_awaited_elsewhere: bool = False,
) -> k8s.helm.v3.Release:
    """A Helm release of `source` (or of a chart directory another resource produced) in a
    namespace the stack owns, so the namespace is created before and deleted after the release."""
    chart: pulumi.Input[str]
    if source is not None:
        chart, version, repo = source.chart, source.version, source.repo
    elif local_chart is not None:
        chart, version, repo = local_chart, None, None
    else:
        raise ValueError(f"{release_name}: no chart source")
    child = pulumi.ResourceOptions(parent=parent)
    ns = stack_namespace(
        f"{name}-namespace",
        namespace,
        child,
        privileged=privileged,
        deletion_awaited_elsewhere=deletion_awaited_elsewhere,
    )
    dependencies = list(depends_on)
    if pull_secret is not None:
        dependencies.append(
            k8s.core.v1.Secret(
                f"{name}-pull-secret",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=pull_secret.name, namespace=ns.metadata.name),
                type="kubernetes.io/dockerconfigjson",
                string_data={".dockerconfigjson": pull_secret.docker_config},
                opts=child,
            )
        )
    return k8s.helm.v3.Release(
        f"{name}-release",
        name=release_name,
        namespace=ns.metadata.name,
        chart=chart,
        version=version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo else None,
        values=values,
        create_namespace=False,
        timeout=RELEASE_TIMEOUT_SECONDS,
        # The chart only names the pull secret; its pods must not start before the secret exists.
        # `depends_on` adds what the caller's chart needs outside the cluster first.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=dependencies),
    )
