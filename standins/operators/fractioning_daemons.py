"""STAND-IN: the DaemonSets gpu-fractioning's operator makes for mpsd and fractiond, scheduled as the
fork schedules them around a GPU Operator driver upgrade (see gpu_fractioning.py)."""

from __future__ import annotations

from typing import Any

from standins.operators.cluster import Json, owned_by

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
# The fork's daemons run only where the GPU Operator's upgrade state machine is absent or done, so the
# DaemonSet controller removes them from a node the moment it is labelled for a driver upgrade
# (driverupgrade.go driverUpgradeNodeAffinity, ../shared/reference/day2-upstream.md section 5.2).
UPGRADE_AFFINITY: Json = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": UPGRADE_STATE_LABEL, "operator": "DoesNotExist"}]},
                {"matchExpressions": [{"key": UPGRADE_STATE_LABEL, "operator": "In", "values": ["upgrade-done"]}]},
            ]
        }
    }
}
# Newer fork versions also select the nodes the GPU Operator labels `gpu.deploy.client`, so the
# driver-manager pauses them and waits for them before it unloads (driverupgrade.go DaemonNodeSelector,
# day2-upstream.md section 5.2); whether the pin has it is not known, so it is the knob
# `gpu-fractioning-deploy-client-selector`: absent (the default) or present.
DEPLOY_CLIENT_SELECTOR = {"nvidia.com/gpu.deploy.client": "true"}
DEPLOY_CLIENT_CHOICES = ("absent", "present")


def daemonset(component: str, namespace: str, config: Json, env: dict[str, str], deploy_client: bool = False) -> Json:
    spec = config.get("spec") or {}
    selector = {"app.kubernetes.io/managed-by": "gpu-fractioning", "app.kubernetes.io/component": component}
    image = f"{env.get(f'{component.upper()}_IMAGE_REPOSITORY')}:{env.get(f'{component.upper()}_IMAGE_TAG')}"
    containers: list[Json] = [{"name": component, "image": image}]
    if component == "fractiond" and (spec.get("metricsAgent") or {}).get("enabled"):
        metricsd = f"{env.get('METRICSD_IMAGE_REPOSITORY')}:{env.get('METRICSD_IMAGE_TAG')}"
        containers.append({"name": "metricsd", "image": metricsd})
    if component == "mpsd":
        limits = ((spec.get("mpsDaemon") or {}).get("resources") or {}).get("limits")
        if limits:
            containers[0]["resources"] = {"limits": limits}
    pod_spec: dict[str, Any] = {
        "nodeSelector": {**(spec.get("nodeSelector") or {}), **(DEPLOY_CLIENT_SELECTOR if deploy_client else {})},
        "affinity": UPGRADE_AFFINITY,
        "tolerations": spec.get("tolerations") or [],
        "hostPID": True,
        "containers": containers,
    }
    if spec.get("runtimeClassName"):
        pod_spec["runtimeClassName"] = spec["runtimeClassName"]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": f"gpu-fractioning-{component}",
            "namespace": namespace,
            "labels": selector,
            "ownerReferences": owned_by(config),
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": pod_spec},
        },
    }
