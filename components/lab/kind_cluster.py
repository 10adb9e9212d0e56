"""KindCluster: the lab's single-node kind cluster, created and deleted with the stack."""

from __future__ import annotations

import pulumi
from pulumi_command import local

from components.config.model import KindClusterConfig

# An existing cluster of the same name is refused rather than adopted: destroying the stack
# must delete only what the stack created.
CREATE_SCRIPT = """set -eu
if kind get clusters 2>/dev/null | grep -qx "$KIND_CLUSTER"; then
  echo "a kind cluster named $KIND_CLUSTER already exists; delete it, or set lab.kind to null and" \\
       "cluster.context to kind-$KIND_CLUSTER to use it as it is" >&2
  exit 1
fi
kind create cluster --name "$KIND_CLUSTER" >&2
kind get kubeconfig --name "$KIND_CLUSTER"
"""
DELETE_SCRIPT = 'kind delete cluster --name "$KIND_CLUSTER"'


class KindCluster(pulumi.ComponentResource):
    """Creates the kind cluster and exposes its kubeconfig (a secret: it holds a client key)."""

    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, config: KindClusterConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:lab:KindCluster", name, None, opts)
        cluster = local.Command(
            f"{name}-kind",
            create=CREATE_SCRIPT,
            delete=DELETE_SCRIPT,
            environment={"KIND_CLUSTER": config.name},
            triggers=[config.name],
            # stdout is the kubeconfig, credentials included: it must not reach the update's log.
            logging=local.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout"]),
        )
        self.kubeconfig = pulumi.Output.secret(cluster.stdout)
        self.register_outputs({"kubeconfig": self.kubeconfig})
