"""Cluster objects the stack owns without creating them: what a chart creates but never deletes (or
deletes too late), taken over so that `pulumi destroy` removes it."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def own_chart_leftover(
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
