"""LabQueues: the lab's KAI queue tree, `default` and its child `default-queue`, unlimited."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.vocabulary.kai import DEFAULT_QUEUE, QUEUE_API_VERSION

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def queue_spec(parent: pulumi.Input[str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {resource: dict(UNLIMITED) for resource in ("cpu", "memory", "gpu")}}
    if parent:
        spec["parentQueue"] = parent
    return spec


class LabQueues(pulumi.ComponentResource):
    """Creates the queues; KAI schedules no pod until the queue named in its label exists."""

    leaf: pulumi.Output[str]

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:lab:LabQueues", name, None, opts)
        parent = self._queue(f"{name}-default", "default", None)
        leaf = self._queue(f"{name}-default-queue", DEFAULT_QUEUE, parent)
        self.leaf = leaf.id
        self.register_outputs({"leaf": self.leaf})

    def _queue(
        self, resource_name: str, queue: str, parent: k8s.apiextensions.CustomResource | None
    ) -> k8s.apiextensions.CustomResource:
        return k8s.apiextensions.CustomResource(
            resource_name,
            api_version=QUEUE_API_VERSION,
            kind="Queue",
            # KAI's chart creates `default-queue` under its own parent; like the lab's
            # `kubectl apply`, these values win.
            metadata={"name": queue, "annotations": {"pulumi.com/patchForce": "true"}},
            spec=queue_spec(parent.id if parent else None),
            opts=pulumi.ResourceOptions(parent=self),
        )
