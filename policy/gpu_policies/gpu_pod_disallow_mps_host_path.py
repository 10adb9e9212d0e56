"""Pods that ask for a GPU fraction mount no hostPath that reaches the node's MPS pipe directory."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from .facts import MPS_PIPE_DIRECTORIES
from .kube import PodView, is_list
from .pods import Findings, PodSweep
from .props import peek


def is_canonical(path: str) -> bool:
    """Absolute, no `//`, no `.` or `..` segment, no trailing `/` (but `/` itself): the only paths whose
    relation to the pipe directory can be read from the text (the API server takes a relative path,
    which the kubelet resolves from wherever it runs)."""
    if path == "/":
        return True
    return (
        path.startswith("/") and "//" not in path and not path.endswith("/") and not {".", ".."} & set(path.split("/"))
    )


def reaches_pipe_directory(path: str) -> str | None:
    """How a canonical path reaches an MPS pipe directory (is it, is inside it, or holds it), or None."""
    for directory in MPS_PIPE_DIRECTORIES:
        if path == directory:
            return f"which is the MPS pipe directory {directory}"
        if path.startswith(f"{directory}/"):
            return f"which is inside the MPS pipe directory {directory}"
        if path == "/" or directory.startswith(f"{path}/"):
            return f"which holds the MPS pipe directory {directory}"
    return None


def check_mps_host_paths(pod: PodView, config: Mapping[str, Any], found: Findings) -> None:
    volumes = pod.value("volumes")
    if not found.known(volumes, pod.field("volumes")) or not is_list(volumes):
        return
    for index, volume in enumerate(volumes):
        path = peek(volume, "hostPath", "path")
        field = pod.field(f"volumes[{index}].hostPath.path")
        if not found.known(path, field) or not isinstance(path, str):
            continue
        why = (
            reaches_pipe_directory(path)
            if is_canonical(path)
            else "which is not a canonical path (relative, a '//', a '.' or '..' segment, or a trailing '/'), "
            f"so it may reach the MPS pipe directory {MPS_PIPE_DIRECTORIES[0]}"
        )
        if why is not None:
            name = peek(volume, "name")
            found.fail(
                f"Volume {name!r} of a pod that asks for a GPU fraction mounts hostPath {path!r} ({field}), {why}; "
                "remove the volume: gpu-fractioning hands each pod its own MPS pipe, and the node's pipe "
                "directory reaches the MPS server of every pod on the node."
            )


policy = StackValidationPolicy(
    name="gpu-pod-disallow-mps-host-path",
    description=(
        "Pods that ask for a GPU fraction mount no hostPath that is, holds or lies inside the node's MPS pipe "
        "directory, so they reach the MPS server only through their own pipe."
    ),
    validate=PodSweep(check_mps_host_paths).validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        f"Remove hostPath volumes of {' or '.join(MPS_PIPE_DIRECTORIES)}, of anything inside them, and of "
        "their parents (/, /run, /var, /var/run) from every pod or pod template with a fraction annotation, "
        "and write every hostPath path canonically (absolute, no '//', '.' or '..' segments, no trailing '/'); "
        "gpu-fractioning mounts each pod's own MPS pipe itself."
    ),
)
