"""STAND-IN for KAI-Scheduler's operator (v0.17.0, and the NvFractions fork's dependency check).

While the chart's `kai-operator` Deployment exists it reconciles Config `kai-config`: after the
`kai-operator` delay it creates the service Deployments in `spec.namespace`, owned by the Config,
and one scheduler Deployment per SchedulingShard, owned by the shard, each running the image its
Config block names. It writes the Config's conditions: Reconciling, Deployed, Available,
DependenciesFulfilled (with NvFractions: False until the `default` GpuFractioningConfig is
Ready=True, with the fork's message) and Ready. In the same reconcile it registers KAI's four
webhook configurations, which its Deployments' pods answer a little later (standins/operators/kai_webhooks.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from standins.operators.cluster import (
    Cluster,
    Condition,
    FirstSeen,
    Json,
    apply,
    deleting,
    deployment_available,
    merge_conditions,
    name_of,
    owned_by,
    path,
    same_conditions,
)
from standins.operators.kai_webhooks import KaiWebhooks
from standins.operators.knobs import Knobs

CONFIG = path("kai.scheduler/v1", "configs", name="kai-config")
SHARDS = path("kai.scheduler/v1", "schedulingshards")
FRACTIONING_CONFIG = path("gpu-fractioning.kai.scheduler/v1alpha1", "gpufractioningconfigs", name="default")
# Deployment name → the Config block that describes it.
SERVICES = {
    "admission": "admission",
    "binder": "binder",
    "pod-grouper": "podGrouper",
    "podgroup-controller": "podGroupController",
    "queue-controller": "queueController",
}


# Deployment name → the operand that reports it (its Name() upstream), as in Available's message
# (standins/upstream/kai-scheduler/kai-config-status.yaml).
OPERANDS = {
    "admission": "KAIAdmission",
    "binder": "Binder",
    "pod-grouper": "PodGrouper",
    "podgroup-controller": "PodGroupController",
    "queue-controller": "QueueController",
}


def image(block: dict[str, Any], fallback_repository: str, fallback_tag: str, name: str) -> str:
    found = ((block.get("service") or {}).get("image")) or {}
    repository = found.get("repository") or fallback_repository
    return f"{repository}/{found.get('name') or name}:{found.get('tag') or fallback_tag}"


def fractioning_dependency(cluster: Cluster) -> str | None:
    """The fork's check, in its words: None when gpu-fractioning is ready."""
    found = cluster.get(FRACTIONING_CONFIG)
    prefix = "Gpu Fractioning is not ready."
    if found is None:
        return f"{prefix} GpuFractioningConfig not found"
    conditions = (found.get("status") or {}).get("conditions")
    if not conditions:
        return f"{prefix} GpuFractioningConfig conditions not found"
    ready = next((c for c in conditions if c["type"] == "Ready"), None)
    if ready is None:
        return f"{prefix} Ready condition not found"
    if ready["status"] != "True":
        return f"{prefix} Ready={ready['status']}, reason={ready.get('reason')}, message={ready.get('message')}"
    return None


class KaiOperator:
    def __init__(self, workdir: Path) -> None:
        self.first_seen = FirstSeen()
        self.webhooks = KaiWebhooks(workdir)
        self.namespace: str | None = None

    def step(self, cluster: Cluster, knobs: Knobs, now: float) -> None:
        delay = knobs.delay("kai-operator")
        operator = cluster.list(path("apps/v1", "deployments"), "app=kai-operator")
        config = cluster.get(CONFIG)
        # The webhook servers are the Deployments' pods: they run (or stop) without the operator.
        self.webhooks.serve(cluster, knobs, now, self.namespace)
        if delay is None or not operator or config is None or deleting(config):
            return
        env = {
            e["name"]: e.get("value", "")
            for e in operator[0]["spec"]["template"]["spec"]["containers"][0].get("env", [])
        }
        repository, tag = env.get("MS_REPOSITORY", ""), env.get("MS_TAG", "")
        spec = config.get("spec") or {}
        namespace = str(spec.get("namespace") or operator[0]["metadata"]["namespace"])
        self.namespace = namespace
        deployments: list[Json | None] = []
        if self.first_seen.reached(config, now, delay):
            url = path("apps/v1", "deployments", namespace)
            for name, block in SERVICES.items():
                body = spec.get(block) or {}
                args = []
                if name == "binder":
                    runtime_class = (body.get("resourceReservation") or {}).get("runtimeClassName")
                    if runtime_class:
                        args.append(f"--runtime-class-name={runtime_class}")
                # Reconciled, not only created: a new image (a KAI pin bump) rolls the Deployment.
                deployments.append(
                    apply(cluster, url, deployment(name, namespace, image(body, repository, tag, name), args, config))
                )
            scheduler = image(spec.get("scheduler") or {}, repository, tag, "scheduler")
            for shard in cluster.list(SHARDS):
                name = f"kai-scheduler-{name_of(shard)}"
                deployments.append(apply(cluster, url, deployment(name, namespace, scheduler, [], shard)))
            self.webhooks.register(cluster, config, namespace)
        self._status(cluster, config, deployments, spec)

    @staticmethod
    def _status(cluster: Cluster, config: Json, deployments: list[Json | None], spec: Json) -> None:
        deployed = bool(deployments) and all(d is not None for d in deployments)
        unavailable = [name_of(d) for d in deployments if d is not None and not deployment_available(d)]
        available = deployed and not unavailable
        missing = None
        if ((spec.get("global") or {}).get("gpuSharingMode")) == "NvFractions":
            missing = fractioning_dependency(cluster)
        conditions = [
            Condition("Reconciling", "False", "reconciled", "Reconciliation completed successfully")
            if deployed
            else Condition("Reconciling", "True", "reconciling", "Reconciliation in progress"),
            Condition("Deployed", "True", "deployed", "Resources deployed")
            if deployed
            else Condition("Deployed", "False", "deployed", "Resources not deployed yet"),
            Condition("Available", "True", "available", "System available")
            if available
            else Condition(
                "Available",
                "False",
                "available",
                "\n".join(
                    f"{OPERANDS.get(n, 'SchedulerForShard')}: Deployment [{n}] is not available\n"
                    f"{OPERANDS.get(n, 'SchedulerForShard')}: not available"
                    for n in unavailable
                )
                or "System not available",
            ),
            Condition("DependenciesFulfilled", "False", "dependencies_missing", missing)
            if missing
            else Condition("DependenciesFulfilled", "True", "dependencies_fulfilled", "Dependencies are fulfilled"),
            Condition("Ready", "True", "ready", "System is ready")
            if available
            else Condition("Ready", "False", "not_ready", "System not ready"),
        ]
        old = (config.get("status") or {}).get("conditions") or []
        merged = merge_conditions(old, conditions, config["metadata"].get("generation"))
        if not same_conditions(old, merged):
            cluster.patch(f"{CONFIG}/status", {"status": {"conditions": merged}})


def deployment(name: str, namespace: str, image: str, args: list[str], owner: Json) -> Json:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**labels, "app.kubernetes.io/managed-by": "kai-operator"},
            "ownerReferences": owned_by(owner),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": image, "args": args}]},
            },
        },
    }
