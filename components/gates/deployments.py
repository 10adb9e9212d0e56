"""Deployments Available, as the KAI and gpu-fractioning gates read them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from components.cluster.objects import Json, conditions, name, template_seen
from components.cluster.results import CheckResult


def _available(deployment: Json) -> bool:
    """Available on its latest template (a pin bump's new image is not rolled until it is seen)."""
    status = deployment.get("status") or {}
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    return (
        template_seen(deployment)
        and conditions(deployment).get("Available", {}).get("status") == "True"
        and status.get("updatedReplicas", 0) == wanted
    )


def decide_deployments(deployments: Sequence[Json], expected: Iterable[str], namespace: str) -> CheckResult:
    """Every Deployment in the namespace Available, and the expected ones among them."""
    check = "deployments"
    present = {name(d): d for d in deployments}
    missing = [e for e in expected if e not in present]
    unavailable = sorted(n for n, d in present.items() if not _available(d))
    if missing or unavailable or not present:
        parts = []
        if missing:
            parts.append(f"not created yet: {', '.join(missing)}")
        if unavailable:
            parts.append(f"not Available: {', '.join(unavailable)}")
        if not present and not missing:
            parts.append("no Deployment in the namespace")
        look = f"kubectl -n {namespace} get deploy,pods"
        return CheckResult(check, False, f"{'; '.join(parts)} ({look})")
    return CheckResult(check, True, f"{len(present)} Available: {', '.join(sorted(present))}")
