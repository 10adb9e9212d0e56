"""kai-config, KAI's Config object, as both the KAI and the gpu-fractioning gates read it."""

from __future__ import annotations

from components.cluster.objects import Json
from components.cluster.protocol import Cluster
from components.vocabulary import kai


def read_kai_config(cluster: Cluster) -> Json | None:
    return cluster.read_cluster_object(kai.CONFIG_GROUP, kai.CONFIG_VERSION, kai.CONFIG_PLURAL, kai.CONFIG_NAME)


def kai_config_look(namespace: str) -> str:
    return f"kubectl get config.kai.scheduler kai-config -o yaml; kubectl -n {namespace} logs deploy/kai-operator"


def dependencies_detail(dependencies: Json) -> str:
    return f"DependenciesFulfilled={dependencies.get('status')} ({dependencies.get('message')})"
