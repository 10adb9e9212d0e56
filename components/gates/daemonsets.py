"""DaemonSets rolled out, as the GPU Operator and gpu-fractioning gates read them: an operator's own
status can read ready from before its operands' new template reached every node."""

from __future__ import annotations

from components.cluster.objects import Json, template_seen


def rollout_gap(daemonset: Json) -> str:
    """What a RollingUpdate DaemonSet still lacks to be rolled out ("" when nothing): its controller
    has seen its latest template, and every pod it wants runs that template and is available."""
    if not template_seen(daemonset):
        return "its new template not picked up yet"
    status = daemonset.get("status") or {}
    desired = int(status.get("desiredNumberScheduled", 0))
    updated, available = int(status.get("updatedNumberScheduled", 0)), int(status.get("numberAvailable", 0))
    if updated < desired:
        return f"{updated} of {desired} pods on its new template"
    return f"{available} of {desired} pods available" if available < desired else ""
