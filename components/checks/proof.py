"""What every proof shares: its results, the cluster reads it needs, patient polling, and failing
the update when a check does not hold."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from components.checks.dynamic import ReportedFailure


def poll_delays(first: float = 0.5, longest: float = 5.0, steady_for: float = 10.0) -> Iterator[float]:
    """The waits between two looks at the cluster: every half second for the first 10 s, since most
    of what the checks wait for is there within seconds (a back-off from the start would notice a
    step ready at 2.5 s only at 4 s), then half as long again each time up to `longest`, so a wait
    of minutes polls the API no more than every 5 s."""
    waited = 0.0
    while waited < steady_for:
        yield first
        waited += first
    delay = first
    while True:
        delay = min(longest, delay * 1.5)
        yield delay


@dataclass(frozen=True)
class ProofResult:
    check: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_proof(results: Iterable[ProofResult], title: str = "Proof") -> str:
    results = list(results)
    passed = sum(r.passed for r in results)
    lines = [f"{title}: {passed} of {len(results)} checks passed"]
    lines += [f"  {'PASS' if r.passed else 'FAIL'} {r.check}: {r.detail}" for r in results]
    return "\n".join(lines)


def failures(results: Iterable[ProofResult]) -> list[ProofResult]:
    return [r for r in results if not r.passed]


class ProofCluster(Protocol):
    """The few reads and execs the proofs need, as plain JSON-shaped dicts."""

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_pods(self, namespace: str, label_selector: str = "", field_selector: str = "") -> list[dict[str, Any]]: ...

    def exec(self, namespace: str, pod: str, container: str | None, command: list[str]) -> str: ...

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> None: ...

    def delete_pod(self, namespace: str, name: str, wait: bool = True) -> None: ...

    def pod_logs(self, namespace: str, name: str, container: str | None = None) -> str: ...

    def read_node(self, name: str) -> dict[str, Any] | None: ...

    def list_nodes(self, label_selector: str = "") -> list[dict[str, Any]]: ...

    def read_cluster_object(self, group: str, version: str, plural: str, name: str) -> dict[str, Any] | None: ...

    def events_for(self, namespace: str, name: str) -> list[str]: ...


@dataclass
class Clock:
    """Time, injectable so the polling is testable without waiting."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def default_container(pod: Mapping[str, Any]) -> str | None:
    """The container `kubectl exec` would pick: the annotated default, else the first."""
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
    if annotated:
        return str(annotated)
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0]["name"]) if containers else None


def phase(pod: Mapping[str, Any] | None) -> str | None:
    return str((pod.get("status") or {}).get("phase")) if pod else None


def guarded(check: str, decide: Callable[[], ProofResult]) -> ProofResult:
    """Evidence that cannot be gathered fails its check with the reason, instead of hiding the others."""
    try:
        return decide()
    except Exception as error:  # any API or exec failure is that check's failure
        return ProofResult(check, False, f"could not gather the evidence: {error}")


def pause(clock: Clock, delays: Iterator[float], deadline: float) -> None:
    """Sleeps until the next look, or until the deadline if that comes first: the last look falls
    on the deadline, not up to a poll interval after it."""
    clock.sleep(min(next(delays), max(0.0, deadline - clock.now())))


def wait_for(clock: Clock, deadline: float, probe: Callable[[], Any]) -> Any:
    delays = poll_delays()
    while True:
        found = probe()
        if found is not None or clock.now() >= deadline:
            return found
        pause(clock, delays, deadline)


def retry(clock: Clock, seconds: float, attempt: Callable[[], ProofResult]) -> ProofResult:
    deadline = clock.now() + seconds
    delays = poll_delays()
    while True:
        result = attempt()
        if result.passed or clock.now() >= deadline:
            return result
        pause(clock, delays, deadline)


def raise_on_failure(kind: str, results: Sequence[ProofResult]) -> None:
    failed = failures(results)
    if failed:
        named = "; ".join(f"{r.check}: {r.detail}" for r in failed)
        raise ProofFailed(f"{kind} failed {len(failed)} of {len(results)} checks: {named}\n{format_proof(results)}")


class ProofFailed(ReportedFailure):
    """A proof check failed: the caps are not shown to be enforced."""
