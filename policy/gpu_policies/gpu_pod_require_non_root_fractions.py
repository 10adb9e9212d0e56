"""Pods that ask for a GPU fraction run non-root and unescalated, outside the node's IPC and PID namespaces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from .kube import EXEMPT_NAMESPACES, Container, PodView, pod_view
from .props import config_schema, dig, resource_validation


def _effective(pod: PodView, container: Container, key: str) -> tuple[Any, str]:
    """A security setting as the container runs with it, and where it comes from; the container's wins."""
    value = dig(container.security_context, key)
    if value is not None:
        return value, f"securityContext.{key}"
    return dig(pod.spec, "securityContext", key), pod.field(f"securityContext.{key}")


def _root_violations(pod: PodView, container: Container) -> list[str]:
    subject = f"Container {container.name!r} of a pod that asks for a GPU fraction"
    violations = []
    if _effective(pod, container, "runAsNonRoot")[0] is not True:
        violations.append(
            f"{subject} may run as root; set {pod.field('securityContext.runAsNonRoot')}: true "
            "(or runAsNonRoot: true on every container)."
        )
    uid, source = _effective(pod, container, "runAsUser")
    if uid == 0:
        violations.append(f"{subject} runs as UID 0 through {source}; run it as a non-zero UID.")
    if dig(container.security_context, "privileged") is True:
        violations.append(f"{subject} is privileged; remove securityContext.privileged: true.")
    if dig(container.security_context, "allowPrivilegeEscalation") is not False:
        violations.append(
            f"{subject} allows privilege escalation; set securityContext.allowPrivilegeEscalation: false."
        )
    return violations


# gpu-fractioning hands each pod its own MPS pipe through NRI, so a fractional pod never needs these.
HOST_NAMESPACES = (
    ("hostIPC", "the node's IPC namespace, where the MPS server and other pods' MPS clients share memory"),
    ("hostPID", "the node's process namespace, where it can see and signal the MPS daemons"),
)


def _host_namespace_violations(pod: PodView) -> list[str]:
    return [
        f"A pod that asks for a GPU fraction joins {what}; remove {pod.field(key)}: true."
        for key, what in HOST_NAMESPACES
        if dig(pod.spec, key) is True
    ]


def check_non_root_fractions(resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """Kubernetes allows privilege escalation unless told otherwise, so an absent setting is a violation."""
    pod = pod_view(resource_type, props)
    if pod is None or not pod.asks_for_fraction or pod.is_exempt(config):
        return []
    per_container = [violation for container in pod.containers for violation in _root_violations(pod, container)]
    return _host_namespace_violations(pod) + per_container


policy = ResourceValidationPolicy(
    name="gpu-pod-require-non-root-fractions",
    description=(
        "Pods that ask for a GPU fraction run as non-root, unprivileged, without privilege escalation and "
        "without hostIPC or hostPID, so they cannot raise their own MPS limits, delete a neighbour's MPS "
        "namespace or reach the MPS server outside their own pipe."
    ),
    validate=resource_validation(check_non_root_fractions),
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=config_schema(EXEMPT_NAMESPACES),
    remediation_steps=(
        "In every pod or pod template with a gpu-fraction or gpu-memory annotation, set "
        "spec.securityContext.runAsNonRoot: true with a non-zero runAsUser, and on every container set "
        "securityContext.allowPrivilegeEscalation: false and no privileged: true; leave spec.hostIPC and "
        "spec.hostPID unset. System daemons that must "
        "run as root belong in one of the exemptNamespaces."
    ),
)
