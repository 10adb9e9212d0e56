"""Pods that ask for a GPU fraction run non-root and unprivileged, outside the node's IPC and PID namespaces."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from .facts import SYSTEM_NAMESPACE_LABEL, SYSTEM_NAMESPACE_VALUE
from .kube import Container, PodView
from .pods import Findings, PodSweep
from .props import Unknown, peek, quoted


def _effective(pod: PodView, container: Container, key: str) -> tuple[Any, str]:
    """A security setting as the container runs with it, and where it comes from; the container's wins."""
    if isinstance(container.security_context, Unknown):
        return container.security_context, f"securityContext.{key}"
    value = peek(container.security_context, key)
    if value is not None:
        return value, f"securityContext.{key}"
    return pod.value("securityContext", key), pod.field(f"securityContext.{key}")


def _is_uid_zero(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def _root_violations(pod: PodView, container: Container, found: Findings) -> None:
    subject = f"Container {container.name!r} of a pod that asks for a GPU fraction"
    non_root, source = _effective(pod, container, "runAsNonRoot")
    if found.known(non_root, f"{source} of container {container.name!r}") and non_root is not True:
        if non_root is None and pod.partial:
            found.cannot_check(f"runAsNonRoot of container {container.name!r}, which the patch leaves as it is")
        else:
            found.fail(
                f"{subject} may run as root; set {pod.field('securityContext.runAsNonRoot')}: true "
                "(or runAsNonRoot: true on every container)."
            )
    uid, source = _effective(pod, container, "runAsUser")
    if found.known(uid, f"{source} of container {container.name!r}") and _is_uid_zero(uid):
        found.fail(f"{subject} runs as UID 0 through {source}; run it as a non-zero UID.")


def _privilege_violations(pod: PodView, container: Container, found: Findings) -> None:
    subject = f"Container {container.name!r} of a pod that asks for a GPU fraction"
    context = container.security_context
    if not found.known(context, f"securityContext of container {container.name!r}"):
        return
    if peek(context, "privileged") is True:
        found.fail(f"{subject} is privileged; remove securityContext.privileged: true.")
    escalation = peek(context, "allowPrivilegeEscalation")
    if found.known(escalation, f"allowPrivilegeEscalation of container {container.name!r}") and escalation is not False:
        if escalation is None and pod.partial:
            found.cannot_check(f"allowPrivilegeEscalation of container {container.name!r}, which the patch leaves")
        else:
            found.fail(f"{subject} allows privilege escalation; set securityContext.allowPrivilegeEscalation: false.")
    added = peek(context, "capabilities", "add")
    if found.known(added, f"capabilities.add of container {container.name!r}") and added:
        names = [str(name) for name in added] if not isinstance(added, str) else [added]
        found.fail(
            f"{subject} adds the capabilities {quoted(names)}; remove securityContext.capabilities.add (and drop "
            "ALL): an added capability widens what the container may do to the node and its MPS server."
        )


# gpu-fractioning hands each pod its own MPS pipe through NRI, so a fractional pod never needs these.
HOST_NAMESPACES = (
    ("hostIPC", "the node's IPC namespace, where the MPS server and other pods' MPS clients share memory"),
    ("hostPID", "the node's process namespace, where it can see and signal the MPS daemons"),
)


def check_non_root_fractions(pod: PodView, config: Mapping[str, Any], found: Findings) -> None:
    """Kubernetes allows privilege escalation unless told otherwise, so an absent setting is a violation."""
    for key, what in HOST_NAMESPACES:
        value = pod.value(key)
        if found.known(value, pod.field(key)) and value is True:
            found.fail(f"A pod that asks for a GPU fraction joins {what}; remove {pod.field(key)}: true.")
    if isinstance(pod.containers, Unknown):
        found.cannot_check("the containers")
        return
    for container in pod.containers:
        _root_violations(pod, container, found)
        _privilege_violations(pod, container, found)


policy = StackValidationPolicy(
    name="gpu-pod-require-non-root-fractions",
    description=(
        "Pods that ask for a GPU fraction run as non-root, unprivileged, without privilege escalation or added "
        "capabilities and without hostIPC or hostPID, so they cannot raise their own MPS limits or delete a "
        "neighbour's MPS namespace."
    ),
    validate=PodSweep(check_non_root_fractions).validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "In every pod or pod template with a fraction annotation (gpu-fraction, gpu-memory, "
        "gpu-fraction-num-devices or nvidia.com/container.<name>.gpu-memory.*), set "
        "spec.securityContext.runAsNonRoot: true with a non-zero runAsUser, and on every container, init "
        "container and ephemeral container set securityContext.allowPrivilegeEscalation: false, no "
        "privileged: true, no capabilities.add and no runAsNonRoot: false or runAsUser: 0 of its own; leave "
        "spec.hostIPC and spec.hostPID unset. This holds in every namespace, a system namespace of this stack "
        f'({SYSTEM_NAMESPACE_LABEL}: "{SYSTEM_NAMESPACE_VALUE}") included: no system daemon is a fractional pod.'
    ),
)
