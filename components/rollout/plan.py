"""Before an upgrade: what the running cluster has installed, read from the objects upstream writes,
and what a change of the GPU side will do to its nodes and fractional pods, decided by a pure
function, so that a preview names the rollout before `up` starts it.

What each kind of change does is recorded in ../shared/reference/day2-upstream.md (sections 1, 5
and 6); a new driver reaches the nodes through this program's own rollout (run.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pulumi

from components.cluster.client import KubeClient
from components.cluster.engine import ClusterAccess
from components.cluster.facts import is_gpu_node, node_facts
from components.cluster.objects import is_fractional, labels_of, name
from components.cluster.protocol import Cluster, Json
from components.config.model import RolloutConfig
from components.config.secrets import redact
from components.rollout.driver import ROLLOUT_ANNOTATION
from components.vocabulary.kai import RESERVATION_NAMESPACE
from components.vocabulary.nvidia import (
    CLUSTER_POLICY_GROUP,
    CLUSTER_POLICY_PLURAL,
    CLUSTER_POLICY_VERSION,
    DRIVER_FULL_LABEL,
)

CLUSTER_POLICY = "cluster-policy"
# Each line of the plan is logged after this, which the pull request summary looks for (tools/preview_summary).
LOG_PREFIX = "rollout plan: "
# The ClusterPolicy's chart version label (upstream-facts.md, clusterPolicy.deployCR).
CHART_VERSION_LABEL = "app.kubernetes.io/version"


@dataclass(frozen=True)
class Versions:
    """The GPU side, installed or wanted: None where it is not installed or not managed."""

    driver: str | None
    gpu_operator: str | None
    kai_tag: str | None
    agents_tag: str | None


@dataclass(frozen=True)
class NodeLoad:
    node: str
    fractional_pods: int
    reservation_pods: int
    # The driver GPU Feature Discovery reports on the node; None when it reports none.
    driver: str | None = None
    # Left cordoned by a driver rollout that stopped: the next one takes it first.
    stopped: bool = False


def _tag(deployments: list[Json]) -> str | None:
    for deployment in deployments:
        for container in deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
            image = str(container.get("image", ""))
            if ":" in image.rsplit("/", 1)[-1]:
                return image.rsplit(":", 1)[1]
    return None


def read_installed(cluster: Cluster, kai_namespace: str, agents_namespace: str) -> Versions:
    """What the cluster runs now: the ClusterPolicy's driver and chart version, and the image tags of
    KAI's and gpu-fractioning's operators."""
    policy = cluster.read_cluster_object(
        CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL, CLUSTER_POLICY
    )
    driver = ((policy or {}).get("spec", {}).get("driver") or {}).get("version")
    chart = ((policy or {}).get("metadata", {}).get("labels") or {}).get(CHART_VERSION_LABEL)
    return Versions(
        driver=str(driver) if driver else None,
        gpu_operator=str(chart) if chart else None,
        kai_tag=_tag(cluster.list_deployments(kai_namespace)),
        agents_tag=_tag(cluster.list_deployments(agents_namespace)),
    )


def read_loads(cluster: Cluster) -> list[NodeLoad]:
    """Each GPU node, with the running fractional pods and KAI reservation pods on it."""
    running = cluster.list_all_pods("status.phase=Running")
    fractional = Counter(p["spec"].get("nodeName") for p in running if is_fractional(p))
    reservations = Counter(
        p["spec"].get("nodeName") for p in running if p["metadata"].get("namespace") == RESERVATION_NAMESPACE
    )
    loads = []
    for node in sorted((n for n in cluster.list_nodes() if is_gpu_node(node_facts(n))), key=name):
        node_name, stopped = name(node), ROLLOUT_ANNOTATION in (node["metadata"].get("annotations") or {})
        driver = labels_of(node).get(DRIVER_FULL_LABEL)
        loads.append(NodeLoad(node_name, fractional[node_name], reservations[node_name], driver, stopped))
    return loads


def _behind(loads: list[NodeLoad], driver: str) -> list[NodeLoad]:
    """The nodes a stopped or interrupted rollout to `driver` has yet to take, in the order it takes them:
    those it left cordoned, then those reporting another driver (one reporting none yet is installing)."""
    behind = [n for n in loads if n.stopped or (n.driver is not None and n.driver != driver)]
    return sorted(behind, key=lambda n: (not n.stopped, n.node))


def _order(loads: list[NodeLoad]) -> str:
    return ", ".join(f"{n.node} ({n.fractional_pods} fractional, {n.reservation_pods} reservation)" for n in loads)


def plan_rollout(
    installed: Versions, wanted: Versions, loads: list[NodeLoad], pace: RolloutConfig | None = None
) -> list[str]:
    """What `up` will do to the running cluster, one line per kind of rollout, most disruptive first."""
    pace = pace or RolloutConfig()
    if installed == Versions(None, None, None, None):
        return ["first install: no GPU software of this stack is running yet"]
    fractional = sum(n.fractional_pods for n in loads)
    nodes = f"{len(loads)} GPU node{'' if len(loads) == 1 else 's'}"
    at_once = "one node" if pace.max_nodes_at_once == 1 else f"{pace.max_nodes_at_once} nodes"
    plan: list[str] = []
    if wanted.driver and installed.driver and wanted.driver != installed.driver:
        plan += [
            f"driver {installed.driver} -> {wanted.driver}: full driver reinstall on each of {nodes}, {at_once} at "
            f"a time (gpuOperator.rollout.maxNodesAtOnce), in this order: {_order(loads)}",
            f"  each node is cordoned, its fractional jobs get {pace.drain_grace_seconds}s to finish "
            "(gpuOperator.rollout.drainGraceSeconds), then they and KAI's reservation pods are deleted "
            f"({fractional} fractional pods in all), its driver pod is replaced, and it is uncordoned once the new "
            "driver, the validator and the node agents are Ready; the other nodes keep serving",
        ]
    elif wanted.driver and wanted.driver == installed.driver and (behind := _behind(loads, wanted.driver)):
        plan.append(
            f"driver {wanted.driver}: an unfinished rollout, {len(behind)} of {len(loads)} GPU nodes do not report it "
            f"yet; up takes them, {at_once} at a time, in this order: {_order(behind)}"
        )
    elif wanted.gpu_operator and installed.gpu_operator and wanted.gpu_operator != installed.gpu_operator:
        plan.append(
            f"GPU Operator chart {installed.gpu_operator} -> {wanted.gpu_operator}: operator roll and operand "
            f"restart on each of {nodes}; a chart with another driver-manager image or env reinstalls the driver "
            "on every node, as a driver change does"
        )
    if wanted.kai_tag and installed.kai_tag and wanted.kai_tag != installed.kai_tag:
        plan.append(
            f"KAI-Scheduler images {installed.kai_tag} -> {wanted.kai_tag}: control-plane roll (operator, "
            "scheduler, binder, admission), no node is drained; KAI's chart does not support helm rollback, so "
            "going back to an earlier pin later is a downgrade, not a rollback"
        )
    if wanted.agents_tag and installed.agents_tag and wanted.agents_tag != installed.agents_tag:
        plan.append(
            f"gpu-fractioning images {installed.agents_tag} -> {wanted.agents_tag}: node-agent roll, mpsd and "
            f"fractiond restart on each of {nodes} under {fractional} running fractional pods (mpsd re-creates "
            "their MPS namespaces from its state file)"
        )
    return plan or ["no GPU-side change: nothing rolls"]


def read_running(access: ClusterAccess, kai_namespace: str, agents_namespace: str) -> tuple[Versions, list[NodeLoad]]:
    """What the configured cluster runs and how loaded its GPU nodes are; raises when it cannot be read."""
    if not isinstance(access.kubeconfig, str | None):
        raise ValueError("the cluster is created by this update")
    cluster = KubeClient.connect(access.kubeconfig, access.context)
    return read_installed(cluster, kai_namespace, agents_namespace), read_loads(cluster)


def read_plan(
    access: ClusterAccess, wanted: Versions, kai_namespace: str, agents_namespace: str, pace: RolloutConfig
) -> list[str]:
    """The plan for the configured cluster, logged so that a preview shows it; a cluster that cannot be
    read yet gets no plan, said so."""
    if access.kubeconfig is not None and not isinstance(access.kubeconfig, str):
        lines = ["not planned: another resource of this update makes the cluster, so nothing runs on it yet"]
    else:
        try:
            installed, loads = read_running(access, kai_namespace, agents_namespace)
        except Exception as error:  # the client raises many types; all mean the same to the user
            lines = [f"not planned: the cluster could not be read ({type(error).__name__}: {redact(str(error))})"]
        else:
            lines = plan_rollout(installed, wanted, loads, pace)
    for line in lines:
        pulumi.log.info(redact(f"{LOG_PREFIX}{line}"))
    return lines
