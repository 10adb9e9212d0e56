"""Reading API objects as plain JSON: their name, labels and conditions, an operator's message on one
line, and what a pod asks of a GPU."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from components.vocabulary.fractions import CONTAINER_MEMORY_MARKER, FRACTION_ANNOTATIONS
from components.vocabulary.nvidia import GPU_RESOURCE_PATTERN

Json = Mapping[str, Any]


def conditions(obj: Json | None) -> dict[str, Json]:
    return {str(c.get("type")): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def name(obj: Json) -> str:
    return str(obj["metadata"]["name"])


def labels_of(obj: Json) -> dict[str, str]:
    return {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()}


def template_seen(obj: Json) -> bool:
    """Whether the object's controller has seen its latest spec: until then its status describes the
    one before (a Deployment or DaemonSet right after a new image still counts old pods as updated)."""
    seen = int((obj.get("status") or {}).get("observedGeneration", 0))
    return seen >= int(obj["metadata"].get("generation", 0))


def one_line(message: object) -> str:
    """An operator's multi-line message (KAI's joins one line per operand) as one line of progress."""
    return "; ".join(str(message or "").splitlines())


def is_fractional(pod: Json) -> bool:
    """Whether a pod asks KAI or NvFractions for a share of a GPU."""
    annotations = pod["metadata"].get("annotations") or {}
    return any(key in FRACTION_ANNOTATIONS or re.fullmatch(CONTAINER_MEMORY_MARKER, key) for key in annotations)


def asks_for_gpus(pod: Json) -> bool:
    """Whether a container of the pod asks for a whole, shared or MIG GPU resource."""
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    return any(
        re.match(GPU_RESOURCE_PATTERN, str(resource))
        for container in containers
        for kind in ("limits", "requests")
        for resource in ((container.get("resources") or {}).get(kind) or {})
    )


def pod_ready(pod: Json) -> bool:
    """Running, not being deleted, and its Ready condition True."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return conditions(pod).get("Ready", {}).get("status") == "True"


def qualified(obj: Json) -> str:
    return f"{obj['metadata'].get('namespace', '')}/{name(obj)}"
