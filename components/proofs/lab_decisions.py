"""The lab proof's decisions: allocatable GPUs, the queue's fractional allocation, the isolator's
injection and the reservation-pod boundary, each from plain evidence."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from components.cluster.facts import parse_quantity
from components.cluster.results import CheckResult
from components.vocabulary.nvidia import GPU_RESOURCE, RUNTIME_CLASS


def decide_allocatable(allocatable: Mapping[str, Mapping[str, str]], expected: int) -> CheckResult:
    """Every lab GPU node advertises the profile's count of whole GPUs (8, not 80)."""
    check = "allocatable-gpus"
    wrong = {node: values.get(GPU_RESOURCE) for node, values in allocatable.items()}
    wrong = {node: value for node, value in wrong.items() if value != str(expected)}
    if not allocatable:
        return CheckResult(check, False, "no lab GPU node found")
    if wrong:
        shown = ", ".join(f"{node}: {value or 'absent'}" for node, value in wrong.items())
        return CheckResult(check, False, f"allocatable {GPU_RESOURCE} is not {expected} on {shown}")
    return CheckResult(check, True, f"{', '.join(allocatable)}: allocatable {GPU_RESOURCE} {expected}")


def queue_allocated_gpus(queue: Mapping[str, Any]) -> float | None:
    """A KAI Queue's status.allocated GPUs (fractions included), e.g. "1510m" → 1.51."""
    allocated = (queue.get("status") or {}).get("allocated") or {}
    raw = allocated.get(GPU_RESOURCE, allocated.get("gpu"))
    return parse_quantity(str(raw)) if raw is not None else None


def parse_queue_division_log(text: str, queue: str) -> float | None:
    """The scheduler's `Resource division result for queue <q>: ... GPU: requested: <r>, allocated: <a>` line."""
    pattern = (
        rf"Resource division result for queue <{re.escape(queue)}>:.*?GPU: requested: <[^>]*>, allocated: <([\d.]+)>"
    )
    found = re.findall(pattern, text, re.I)
    return float(found[-1]) if found else None


def decide_queue_allocation(allocated: float | None, queue: str, whole_gpus: int, fraction: float) -> CheckResult:
    """The queue's allocation counts the whole-GPU pod and the shared pod's slice (1.51 in the lab)."""
    check = "queue-allocation"
    if allocated is None:
        return CheckResult(check, False, f"queue {queue} reports no allocated GPU")
    slice_ = allocated - whole_gpus
    if slice_ >= 1:
        return CheckResult(
            check,
            False,
            f"queue {queue} allocated {allocated:g} GPU: the shared pod counts as {slice_:g} whole GPU(s), "
            f"not a {fraction:g} share",
        )
    if slice_ + 0.005 < fraction:
        return CheckResult(
            check,
            False,
            f"queue {queue} allocated {allocated:g} GPU: {whole_gpus} whole and no {fraction:g} slice for the "
            "shared pod",
        )
    return CheckResult(
        check, True, f"queue {queue} allocated {allocated:g} GPU: {whole_gpus} whole + {slice_:.2f} shared"
    )


def decide_isolator_injection(pod: Mapping[str, Any]) -> CheckResult:
    """The isolator's webhook mounted HAMi-core (/usr/local/vgpu, /etc/ld.so.preload) and set RuntimeClass nvidia."""
    check = "isolator-injection"
    spec = pod.get("spec") or {}
    mounts = {m.get("mountPath") for c in spec.get("containers") or [] for m in c.get("volumeMounts") or []}
    env = {e.get("name"): e.get("value") for c in spec.get("containers") or [] for e in c.get("env") or []}
    missing = [path for path in ("/etc/ld.so.preload", "/usr/local/vgpu") if path not in mounts]
    if spec.get("runtimeClassName") != RUNTIME_CLASS:
        missing.append(f"runtimeClassName: {RUNTIME_CLASS}")
    if missing:
        return CheckResult(
            check, False, "the shared pod lacks " + ", ".join(missing) + " (is the isolator's webhook up?)"
        )
    extra = f", CONTAINER_VGPU_MOUNT={env['CONTAINER_VGPU_MOUNT']}" if "CONTAINER_VGPU_MOUNT" in env else ""
    return CheckResult(check, True, f"/etc/ld.so.preload and /usr/local/vgpu mounted, runtimeClassName nvidia{extra}")


RESERVATION_SIGNATURES = ("ERROR_LIBRARY_NOT_FOUND", "failed waiting for GPU reservation pod")


def decide_reservation_boundary(phase: str | None, reservation_logs: str, events: Sequence[str]) -> CheckResult:
    """The shared pod stops at KAI's reservation pod, which cannot load NVML on a fake GPU: expected, reported."""
    check = "reservation-boundary"
    if phase is None:
        return CheckResult(check, False, "the shared pod does not exist")
    if phase == "Running":
        return CheckResult(check, True, "the shared pod runs: the reservation pod claimed a GPU (no fake-GPU boundary)")
    evidence = [s for s in RESERVATION_SIGNATURES if s in reservation_logs or any(s in e for e in events)]
    if evidence:
        return CheckResult(
            check,
            True,
            "expected limit of fake GPUs: KAI's reservation pod cannot load NVML "
            f"({' / '.join(evidence)}), so the shared pod stays {phase}; crossing it needs a real GPU "
            "or the container toolkit/CDI against the mock driver root",
        )
    return CheckResult(
        check,
        False,
        f"the shared pod is {phase} without the reservation-pod signature "
        "(no ERROR_LIBRARY_NOT_FOUND log, no BindingError event): something else blocks it",
    )
