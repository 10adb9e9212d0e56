"""The guide's verification after each install, run as a gate: `up` waits until it holds, printing
progress, and fails the update before the next step starts when it does not hold in time.

Each step's checks live in a module of their own, reads and decisions side by side
(`gpu_operator.py`, `kai.py`, `fractioning.py`, `admission.py`); this module is their table, the
wait, and the StepGate resource that runs it during `up`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi

from components.cluster.checking import CheckProvider
from components.cluster.client import KubeClient
from components.cluster.engine import (
    CheckResource,
    ClusterAccess,
    report_failures_without_traceback,
    show_progress,
)
from components.cluster.protocol import Cluster
from components.cluster.results import CheckResult, ReportedFailure, failures, format_results
from components.cluster.waiting import Clock, Deadline, poll
from components.gates.admission import check_fraction_admission
from components.gates.fractioning import check_gpu_fractioning
from components.gates.gpu_operator import check_gpu_operator
from components.gates.kai import check_kai_scheduler
from components.gates.spec import GateSpec, Step

report_failures_without_traceback()

PROGRESS_EVERY_SECONDS = 60.0


@dataclass(frozen=True)
class GateStep:
    """One step's gate: what it waits for, the config key of its timeout, and its checks. A new
    check is a read in that step's module and its decision beside it; a new step is a module, a
    row here, its name in Step (spec.py), and its spec in components/stack.py."""

    title: str
    timeout_key: str
    checks: Callable[[Cluster, GateSpec], list[CheckResult]]


STEPS: dict[Step, GateStep] = {
    "gpu-operator": GateStep("GPU Operator ready", "gpuOperator.readyTimeoutSeconds", check_gpu_operator),
    "kai-scheduler": GateStep("KAI-Scheduler ready", "kai.readyTimeoutSeconds", check_kai_scheduler),
    "gpu-fractioning": GateStep(
        "gpu-fractioning node agents ready", "gpuFractioning.readyTimeoutSeconds", check_gpu_fractioning
    ),
    "fraction-admission": GateStep(
        "fractional-pod admission policy in force", "admission.readyTimeoutSeconds", check_fraction_admission
    ),
}


class GateTimedOut(ReportedFailure):
    """A step's verification did not hold in time: the next step was not started."""


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return (
        f"{seconds}s"
        if seconds < 60
        else f"{seconds // 60} min {seconds % 60}s"
        if seconds % 60
        else f"{seconds // 60} min"
    )


def wait_for_gate(
    cluster: Cluster,
    spec: GateSpec,
    clock: Clock | None = None,
    progress: Callable[[str], None] = show_progress,
) -> list[CheckResult]:
    """The gate's results once every check holds; raises GateTimedOut naming what did not."""
    clock = clock or Clock()
    step = STEPS[spec.step]
    title = step.title
    start = clock.now()
    last_said, said_at = "", start

    def say_what_it_waits_for(results: list[CheckResult]) -> None:
        nonlocal last_said, said_at
        waiting = waiting_for(results)
        if waiting != last_said or clock.now() - said_at >= PROGRESS_EVERY_SECONDS:
            progress(f"{title}: waiting, {minutes(clock.now() - start)} of {minutes(spec.timeout_seconds)}: {waiting}")
            last_said, said_at = waiting, clock.now()

    results = poll(
        lambda: step.checks(cluster, spec),
        lambda results: not failures(results),
        Deadline(clock, start + spec.timeout_seconds),
        between=say_what_it_waits_for,
    )
    elapsed = clock.now() - start
    if waiting := waiting_for(results):
        raise GateTimedOut(
            f"{title}: not after {minutes(elapsed)} ({step.timeout_key} is {spec.timeout_seconds}); "
            f"the next step was not started. Waiting for: {waiting}\n{format_results(results, title)}"
        )
    progress(f"{title}: all {len(results)} checks hold after {minutes(elapsed)}")
    return results


def waiting_for(results: list[CheckResult]) -> str:
    return "; ".join(f"{r.check}: {r.detail}" for r in failures(results))


class StepGateProvider(CheckProvider):
    spec_type = GateSpec
    kind = "StepGate"
    report_title = "Checks"

    def verify(self, cluster: KubeClient, spec: GateSpec) -> list[CheckResult]:
        return wait_for_gate(cluster, spec)


class StepGate(CheckResource, handler=StepGateProvider):
    """Waits, during `up`, until what the guide verifies after a step holds; fails the update, naming
    what is missing, when it does not in time. Resources of the next step depend on it. A change of
    `triggers` (the release's revision) waits again.
    """

    def __init__(
        self,
        name: str,
        spec: GateSpec,
        *,
        access: ClusterAccess,
        triggers: pulumi.Input[Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(name, spec, access, opts, triggers=triggers)
