"""STAND-IN for gpu-fractioning's operator and the kubelet's handling of its mpsd pods.

While the chart's `gpu-fractioning` Deployment exists it reconciles GpuFractioningConfig `default`
as the real controller does: it adds its finalizer; refuses a GPU Operator older than the chart's
minimum (Ready=False, GPUOperatorVersionUnsupported, no daemons); after the `gpu-fractioning`
delay creates the `gpu-fractioning-mpsd` and `-fractiond` DaemonSets (owned by the config, on its
nodeSelector, with its runtimeClassName); writes MpsdReady, FractiondReady and Ready; sets each
node's `gpu-fractioning.nvidia.com/Ready` condition and, as mpsd does at start, the driver-major
label; and serves the mpsd pods' log. When the config is deleted it clears the node condition and
label, then its finalizer; without the operator the finalizer stays, as it does for real.

Independently of the operator, mpsd pods stop slowly (the `mpsd-stop` delay), and each stop is
recorded in ConfigMap kube-system/kgf-stand-in-record with whether the operator still ran, so a
test can tell that the chart was uninstalled only after the daemons were gone.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from standins.operators.cluster import (
    STRATEGIC_PATCH,
    Cluster,
    Condition,
    FirstSeen,
    Json,
    daemonset_ready,
    deleting,
    ensure,
    merge_conditions,
    name_of,
    path,
    pod_ready,
    pods_by_node,
    same_conditions,
)
from standins.operators.fractioning_daemons import DEPLOY_CLIENT_CHOICES, UPGRADE_STATE_LABEL, daemonset
from standins.operators.hardware import labels
from standins.operators.knobs import NAMESPACE, Knobs

CONFIG = path("gpu-fractioning.kai.scheduler/v1alpha1", "gpufractioningconfigs", name="default")
FINALIZER = "gpu-fractioning.nvidia.com/cleanup-node-conditions"
NODE_CONDITION = "gpu-fractioning.nvidia.com/Ready"
DRIVER_LABEL = "gpu-fractioning.kai.scheduler/nvidia-driver-version.major"
MINIMUM_DRIVER_MAJOR = 615
COMPONENTS = ("mpsd", "fractiond")
MANAGED = "app.kubernetes.io/managed-by=gpu-fractioning"
MPSD_SELECTOR = f"{MANAGED},app.kubernetes.io/component=mpsd"
STOP_FINALIZER = "stand-in.kai-gpu-fractions/mps-shutdown"
RECORD = "kgf-stand-in-record"


def version_tuple(raw: str) -> tuple[int, ...]:
    parts = raw.lstrip("v").split("-")[0].split(".")
    return tuple(int(p) for p in parts) + (0,) * (3 - len(parts))


# What mpsd prints, as recorded from its source: both of slog's formats (see the file's provenance).
MPSD_LOG_LINES = yaml.safe_load(
    (Path(__file__).parents[1] / "upstream/gpu-fractioning/mpsd-log-lines.yaml").read_text()
)


def mpsd_log(node: Json, log_format: str) -> str:
    """What an mpsd pod prints at start: the control daemon's multi-user server, then mpsd's own lines."""
    driver = labels(node).get("nvidia.com/cuda.driver-version.full", "")
    stamp = "2026-11-30T00:00:00.000000000Z stdout F "
    attributes = {"driverVersion": driver, "driverMajor": driver.split(".")[0]}
    labelled = "labeled node with NVIDIA driver major version"
    lines = [
        MPSD_LOG_LINES["multiuser_server"],
        json.dumps({"level": "INFO", "msg": labelled, **attributes})
        if log_format == "json"
        else f'level=INFO msg="{labelled}" ' + " ".join(f"{k}={v}" for k, v in attributes.items()),
        MPSD_LOG_LINES["default_cap"][log_format],
    ]
    return "".join(stamp + line + "\n" for line in lines)


class GpuFractioningOperator:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.first_seen = FirstSeen()
        self.stopping = FirstSeen()
        # The mpsd pods (by UID) whose log is served: a pod's Logs object is made once, as a
        # kubelet starts writing a container's log once, not looked up again at every round.
        self.serving: set[str] = set()

    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None:
        operators = [
            d
            for d in cluster.list(path("apps/v1", "deployments"), "app.kubernetes.io/name=gpu-fractioning")
            if name_of(d) == "gpu-fractioning"
        ]
        self._stop_mpsd_pods(cluster, knobs, now, operator_runs=bool(operators))
        delay = knobs.delay("gpu-fractioning")
        config = cluster.get(CONFIG)
        if delay is None or not operators or config is None:
            return
        if deleting(config):
            self._delete(cluster, config)
            return
        if FINALIZER not in (config["metadata"].get("finalizers") or []):
            finalizers = [*(config["metadata"].get("finalizers") or []), FINALIZER]
            cluster.patch(CONFIG, {"metadata": {"finalizers": finalizers}})
        operator = operators[0]
        container = operator["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
        unsupported = gpu_operator_unsupported(cluster, env.get("GPU_OPERATOR_MINIMUM_VERSION", ""))
        if unsupported:
            refused = Condition("Ready", "False", "GPUOperatorVersionUnsupported", unsupported)
            self._conditions(cluster, config, [refused, driver_upgrade(cluster)])
            return
        namespace = str(operator["metadata"]["namespace"])
        daemonsets: dict[str, Json | None] = {}
        if self.first_seen.reached(config, now, delay):
            deploy_client = knobs.choice("gpu-fractioning-deploy-client-selector", DEPLOY_CLIENT_CHOICES) == "present"
            for component in COMPONENTS:
                body = daemonset(component, namespace, config, env, deploy_client)
                daemonsets[component] = ensure(cluster, path("apps/v1", "daemonsets", namespace), body)
        conditions = readiness(daemonsets, gpu_operator_not_ready(cluster))
        self._conditions(cluster, config, [*conditions, driver_upgrade(cluster)])
        self._nodes(cluster, config, namespace, knobs.choice("mpsd-log-format", ("json", "text")))

    def _nodes(self, cluster: Cluster, config: Json, namespace: str, log_format: str) -> None:
        selector = ",".join(f"{k}={v}" for k, v in ((config.get("spec") or {}).get("nodeSelector") or {}).items())
        pods = pods_by_node(cluster.list(path("v1", "pods", namespace), MANAGED))
        for node in cluster.list(path("v1", "nodes"), selector):
            on_node = pods.get(name_of(node), [])
            mpsd = [p for p in on_node if p["metadata"]["labels"].get("app.kubernetes.io/component") == "mpsd"]
            if mpsd and pod_ready(mpsd[0]):
                self._serve_log(cluster, mpsd[0], node, log_format)
                major = labels(node).get("nvidia.com/cuda.driver-version.major")
                if major and labels(node).get(DRIVER_LABEL) != major:
                    cluster.patch(
                        path("v1", "nodes", name=name_of(node)), {"metadata": {"labels": {DRIVER_LABEL: major}}}
                    )
            set_node_condition(cluster, node, node_condition(node, on_node))

    def _serve_log(self, cluster: Cluster, pod: Json, node: Json, log_format: str) -> None:
        if pod["metadata"]["uid"] in self.serving:
            return
        log = self.workdir / f"{name_of(pod)}.log"
        if not log.exists():
            log.write_text(mpsd_log(node, log_format))
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Logs",
            "metadata": {"name": name_of(pod), "namespace": pod["metadata"]["namespace"]},
            "spec": {"logs": [{"containers": ["mpsd"], "logsFile": str(log)}]},
        }
        ensure(cluster, path("kwok.x-k8s.io/v1alpha1", "logs", pod["metadata"]["namespace"]), body)
        self.serving.add(pod["metadata"]["uid"])

    @staticmethod
    def _conditions(cluster: Cluster, config: Json, conditions: list[Condition]) -> None:
        old = (config.get("status") or {}).get("conditions") or []
        merged = merge_conditions(old, conditions, config["metadata"].get("generation"))
        if not same_conditions(old, merged):
            status = {"conditions": merged, "observedGeneration": config["metadata"].get("generation")}
            cluster.patch(f"{CONFIG}/status", {"status": status})

    @staticmethod
    def _delete(cluster: Cluster, config: Json) -> None:
        """The operator's cleanup: node conditions and labels first, then its finalizer."""
        selector = ",".join(f"{k}={v}" for k, v in ((config.get("spec") or {}).get("nodeSelector") or {}).items())
        for node in cluster.list(path("v1", "nodes"), selector):
            set_node_condition(cluster, node, None)
            if DRIVER_LABEL in labels(node):
                cluster.patch(path("v1", "nodes", name=name_of(node)), {"metadata": {"labels": {DRIVER_LABEL: None}}})
        finalizers = [f for f in config["metadata"].get("finalizers") or [] if f != FINALIZER]
        cluster.patch(CONFIG, {"metadata": {"finalizers": finalizers or None}})

    def _stop_mpsd_pods(self, cluster: Cluster, knobs: Knobs, now: float, operator_runs: bool) -> None:
        """The kubelet's part: an mpsd pod exits about a minute after it is told to stop."""
        stop_after = knobs.delay("mpsd-stop") or 0.0
        for pod in cluster.list(path("v1", "pods"), MPSD_SELECTOR):
            finalizers = pod["metadata"].get("finalizers") or []
            pod_path = path("v1", "pods", pod["metadata"]["namespace"], name_of(pod))
            if not deleting(pod):
                if STOP_FINALIZER not in finalizers:
                    cluster.patch(pod_path, {"metadata": {"finalizers": [*finalizers, STOP_FINALIZER]}})
            elif STOP_FINALIZER in finalizers and self.stopping.reached(pod, now, stop_after):
                rest = [f for f in finalizers if f != STOP_FINALIZER]
                cluster.patch(pod_path, {"metadata": {"finalizers": rest or None}})
                record_mpsd_stop(cluster, operator_runs)


def readiness(daemonsets: dict[str, Json | None], gpu_operator: str | None) -> list[Condition]:
    conditions = []
    for component in COMPONENTS:
        kind = f"{component.capitalize()}Ready"
        found = daemonsets.get(component)
        status = (found or {}).get("status") or {}
        desired, ready = int(status.get("desiredNumberScheduled", 0)), int(status.get("numberReady", 0))
        if found is None:
            conditions.append(Condition(kind, "False", "RolloutInProgress", "daemon set not created yet"))
        elif daemonset_ready(found) and desired == 0:
            conditions.append(Condition(kind, "True", "NoTargetNodes", "no target nodes found"))
        elif daemonset_ready(found):
            conditions.append(Condition(kind, "True", "AllPodsReady", f"{ready} of {desired} pods ready"))
        else:
            reason = "RolloutInProgress" if ready == 0 else "PartiallyAvailable"
            conditions.append(Condition(kind, "False", reason, f"{ready} of {desired} pods ready"))
    not_ready = [c.type for c in conditions if c.status != "True"]
    if not_ready:
        ready_condition = Condition("Ready", "False", "ComponentNotReady", f"not ready: {', '.join(not_ready)}")
        if gpu_operator:
            ready_condition = Condition("Ready", "False", "GPUOperatorNotReady", gpu_operator)
    else:
        ready_condition = Condition("Ready", "True", "AllComponentsReady", "all components are healthy")
    return [*conditions, ready_condition]


# The condition types the fork's operator writes and their steady statuses, as recorded.
CONFIG_CONDITIONS = yaml.safe_load(
    (Path(__file__).parents[1] / "upstream/gpu-fractioning/config-conditions.yaml").read_text()
)


def driver_upgrade(cluster: Cluster) -> Condition:
    """DriverUpgradeInProgress, written on every reconcile: True while a GPU node is in the GPU
    Operator's upgrade state machine (labelled, and not `upgrade-done`), False otherwise."""
    upgrading = sorted(
        name_of(node)
        for node in cluster.list(path("v1", "nodes"), UPGRADE_STATE_LABEL)
        if labels(node).get(UPGRADE_STATE_LABEL) not in ("", "upgrade-done")
    )
    if upgrading:
        message = f"the GPU driver is being upgraded on {', '.join(upgrading)}"
        return Condition("DriverUpgradeInProgress", "True", "DriverUpgradeInProgress", message)
    steady = CONFIG_CONDITIONS["steady_driver_upgrade"]
    return Condition("DriverUpgradeInProgress", "False", steady["reason"], steady["message"])


def cluster_policy(cluster: Cluster) -> Json | None:
    policies = cluster.list(path("nvidia.com/v1", "clusterpolicies"))
    return min(policies, key=lambda p: p["metadata"]["creationTimestamp"]) if policies else None


def gpu_operator_unsupported(cluster: Cluster, minimum: str) -> str | None:
    policy = cluster_policy(cluster)
    if not minimum or policy is None:
        return None
    found = (policy["metadata"].get("labels") or {}).get("app.kubernetes.io/version", "")
    try:
        if version_tuple(found) >= version_tuple(minimum):
            return None
    except ValueError:
        pass
    return f"GPU Operator version {found or 'unknown'} is older than the minimum {minimum}"


def gpu_operator_not_ready(cluster: Cluster) -> str | None:
    policy = cluster_policy(cluster)
    if policy is None:
        return None
    status = policy.get("status") or {}
    if status.get("state") == "ready":
        return None
    error = next((c for c in status.get("conditions") or [] if c["type"] == "Error" and c["status"] == "True"), None)
    return str(error.get("message")) if error else "ClusterPolicy is not ready"


def node_condition(node: Json, pods: list[Json]) -> Condition:
    major = labels(node).get("nvidia.com/cuda.driver-version.major")
    if not major:
        return Condition(NODE_CONDITION, "False", "GPUDriverVersionMissing", "no NVIDIA driver version label")
    if not major.isdigit():
        return Condition(NODE_CONDITION, "False", "GPUDriverVersionInvalid", f"driver major {major!r}")
    if int(major) < MINIMUM_DRIVER_MAJOR:
        return Condition(
            NODE_CONDITION, "False", "GPUDriverVersionUnsupported", f"driver {major} < {MINIMUM_DRIVER_MAJOR}"
        )
    for component in COMPONENTS:
        found = [p for p in pods if p["metadata"]["labels"].get("app.kubernetes.io/component") == component]
        if not found or not pod_ready(found[0]):
            return Condition(NODE_CONDITION, "False", "NotReady", f"{component} pod is not ready: NotReady")
    return Condition(NODE_CONDITION, "True", "AllDaemonsReady", "all gpu-fractioning daemons are running")


def set_node_condition(cluster: Cluster, node: Json, condition: Condition | None) -> None:
    current = next((c for c in (node.get("status") or {}).get("conditions") or [] if c["type"] == NODE_CONDITION), None)
    url = path("v1", "nodes", name=name_of(node)) + "/status"
    if condition is None:
        if current is not None:
            cluster.patch(
                url, {"status": {"conditions": [{"type": NODE_CONDITION, "$patch": "delete"}]}}, STRATEGIC_PATCH
            )
        return
    (entry,) = merge_conditions([current] if current else [], [condition], None)
    if current is None or not same_conditions([current], [entry]):
        cluster.patch(url, {"status": {"conditions": [entry]}}, STRATEGIC_PATCH)


def record_mpsd_stop(cluster: Cluster, operator_runs: bool) -> None:
    url = path("v1", "configmaps", NAMESPACE)
    found = cluster.get(f"{url}/{RECORD}")
    line = "operator-running" if operator_runs else "operator-gone"
    if found is None:
        cluster.create(url, {"metadata": {"name": RECORD}, "data": {"mpsd-stopped": line}})
        return
    before = (found.get("data") or {}).get("mpsd-stopped", "")
    cluster.patch(f"{url}/{RECORD}", {"data": {"mpsd-stopped": f"{before}\n{line}".strip()}})
