"""What every check shares, the step gates' and the proofs': its result, their report, evidence
that cannot be gathered failing its own check, and failing the update when a check does not hold
(patient polling is components/cluster/waiting.py's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


class ReportedFailure(Exception):
    """A finding for the operator (a failed proof, pods that did not stop), not a bug: the dynamic
    provider server reports it as its message alone."""


@dataclass(frozen=True)
class CheckResult:
    check: str
    """What was checked."""
    passed: bool
    """Whether it held."""
    detail: str
    """What was seen or measured."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def format_results(results: Iterable[CheckResult], title: str = "Proof") -> str:
    """A summary line, then each check with its verdict and detail."""
    results = list(results)
    passed = sum(r.passed for r in results)
    lines = [f"{title}: {passed} of {len(results)} checks passed"]
    lines += [f"  {'PASS' if r.passed else 'FAIL'} {r.check}: {r.detail}" for r in results]
    return "\n".join(lines)


def failures(results: Iterable[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.passed]


def default_container(pod: Mapping[str, Any]) -> str | None:
    """The container `kubectl exec` would pick: the annotated default, else the first."""
    annotated = ((pod.get("metadata") or {}).get("annotations") or {}).get("kubectl.kubernetes.io/default-container")
    if annotated:
        return str(annotated)
    containers = (pod.get("spec") or {}).get("containers") or []
    return str(containers[0]["name"]) if containers else None


def phase(pod: Mapping[str, Any] | None) -> str | None:
    return str((pod.get("status") or {}).get("phase")) if pod else None


def guarded(check: str, decide: Callable[[], CheckResult]) -> CheckResult:
    """Evidence that cannot be gathered fails its check with the reason, instead of hiding the others."""
    try:
        return decide()
    except Exception as error:  # any API or exec failure is that check's failure
        return CheckResult(check, False, f"could not gather the evidence: {error}")


def raise_on_failure(kind: str, results: Sequence[CheckResult]) -> None:
    failed = failures(results)
    if failed:
        named = "; ".join(f"{r.check}: {r.detail}" for r in failed)
        raise ProofFailed(f"{kind} failed {len(failed)} of {len(results)} checks: {named}\n{format_results(results)}")


class ProofFailed(ReportedFailure):
    """A proof check failed: the caps are not shown to be enforced."""
