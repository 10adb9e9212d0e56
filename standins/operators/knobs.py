"""How long each stand-in takes, read from the ConfigMap kube-system/kgf-stand-in-operators.

Each key names a stand-in's slow part and holds seconds, or `never` for a stand-in that never does
its work (an operator that is not running, a driver that never loads); `mpsd-log-format` chooses
the format the stand-in mpsd logs in (`json`, the default, or `text`);
`gpu-fractioning-deploy-client-selector` whether the daemons also select `nvidia.com/gpu.deploy.client`
(`absent`, the default, as the pinned fork is assumed to be, or `present`, as newer forks are). Missing keys take the
defaults below: short, so the local deployment is quick, but never zero, so a gate that did not
wait would fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from standins.operators.cluster import Cluster, path

CONFIGMAP = "kgf-stand-in-operators"
NAMESPACE = "kube-system"

DEFAULTS = {
    # From the ClusterPolicy to a loaded driver: then GFD and the device plugin start.
    "gpu-operator": 2.0,
    # From kai-config to the operator's Deployments.
    "kai-operator": 1.0,
    # From the default GpuFractioningConfig to its DaemonSets.
    "gpu-fractioning": 1.0,
    # From an mpsd pod's deletion to its exit (the real daemon takes about a minute; every destroy
    # waits this out, so the default is short, and the driver rollout benchmark sets its own).
    "mpsd-stop": 1.0,
    # From the old driver unloaded to the new one loaded on a node (the real build takes minutes).
    "driver-install": 1.0,
    # From an nvml-mock pod running to its node labelled gpu.present.
    "nvml-mock": 1.0,
    # From KAI's serving Deployment existing to its webhooks answering (a pod's start).
    "kai-webhooks": 1.0,
}


@dataclass(frozen=True)
class Knobs:
    values: Mapping[str, str]

    @classmethod
    def read(cls, cluster: Cluster) -> Knobs:
        found = cluster.get(path("v1", "configmaps", NAMESPACE, CONFIGMAP))
        return cls((found or {}).get("data") or {})

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        """The knob's value among `choices`; the first when it is missing or not one of them."""
        raw = self.values.get(name, "").strip()
        return raw if raw in choices else choices[0]

    def delay(self, name: str) -> float | None:
        """Seconds the stand-in `name` takes, or None when it never does its work."""
        raw = self.values.get(name, "").strip()
        if raw == "never":
            return None
        try:
            return float(raw) if raw else DEFAULTS[name]
        except ValueError:
            return DEFAULTS[name]
