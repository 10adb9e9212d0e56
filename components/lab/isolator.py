"""Isolator: HAMi's kai-resource-isolator (libvgpu injection) and the `nvidia` RuntimeClass shim."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import helm
from components.config.model import IsolatorConfig
from components.teardown.waits import NamespacesGone, waited_by
from components.vocabulary.nvidia import RUNTIME_CLASS


def isolator_values() -> dict[str, Any]:
    return {"monitor": {"enabled": True}}


class Isolator(pulumi.ComponentResource):
    """Installs the isolator and a RuntimeClass `nvidia` with handler `runc`.

    KAI's admission adds `runtimeClassName: nvidia` to fraction pods, and kind has no nvidia
    runtime: without the shim those pods are rejected.
    """

    runtime_class: k8s.node.v1.RuntimeClass
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: IsolatorConfig,
        namespaces_gone: NamespacesGone | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:lab:Isolator", name, None, waited_by(opts, namespaces_gone))
        release = helm.install(
            self,
            name,
            release_name="kai-resource-isolator",
            namespace=config.namespace,
            values=isolator_values(),
            source=config.chart,
            privileged=True,
            deletion_awaited_elsewhere=namespaces_gone is not None,
        )
        self.runtime_class = k8s.node.v1.RuntimeClass(
            f"{name}-runtime-class",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=RUNTIME_CLASS),
            handler="runc",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.status = release.status.status
        self.register_outputs({"status": self.status})
