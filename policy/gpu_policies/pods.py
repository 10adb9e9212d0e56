"""Runs a pod rule over every pod and pod template of a stack, skipping the namespaces the stack exempts.

The pod policies are stack policies because only the whole stack shows whether a pod's namespace is
a system namespace of this stack. A value unknown during preview skips only the checks that read it:
a known-bad value is still refused, and a check that would need the unknown value is not made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, StackValidationArgs

from .kube import Exemptions, PodView, pod_view
from .props import Unknown, Violation


@dataclass
class Findings:
    """What one rule found on one pod: violations, and what it could not check during preview."""

    violations: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.violations.append(message)

    def cannot_check(self, what: str) -> None:
        self.unchecked.append(what)

    def known(self, value: Any, what: str) -> bool:
        """False (and noted) when `value` is unknown during preview."""
        if isinstance(value, Unknown):
            self.cannot_check(what)
            return False
        return True


PodRule = Callable[[PodView, Mapping[str, Any], Findings], None]
StackRule = Callable[[Sequence[PolicyResource], Mapping[str, Any], Findings], list[Violation]]


@dataclass(frozen=True)
class PodSweep:
    """Applies `rule` to each pod the stack creates; `exemptable` rules skip exempt namespaces."""

    rule: PodRule
    exemptable: bool = True
    fractional_only: bool = True
    # Checks of non-pod resources of the same policy (such as KAI's reservation pods' RuntimeClass).
    extra: StackRule | None = None

    def check(
        self, resources: Sequence[PolicyResource], config: Mapping[str, Any]
    ) -> tuple[list[Violation], list[str]]:
        exemptions = Exemptions.of(resources)
        violations: list[Violation] = []
        unchecked: list[str] = []
        for resource in resources:
            pod = pod_view(resource.resource_type, resource.props)
            if pod is None:
                continue
            found = Findings()
            if self.fractional_only:
                fractional = pod.is_fractional
                if isinstance(fractional, Unknown):
                    unchecked.append(f"whether {resource.name} asks for a GPU fraction")
                    continue
                if not fractional:
                    continue
            self.rule(pod, config, found)
            exempt = exemptions.exempts(pod.namespace) if self.exemptable else False
            if exempt is True:
                continue
            if isinstance(exempt, Unknown) and found.violations:
                unchecked.append(f"whether the namespace of {resource.name} is a system namespace of this stack")
                continue
            violations.extend(Violation(message, resource.urn) for message in found.violations)
            unchecked.extend(f"{what} of {resource.name}" for what in found.unchecked)
        if self.extra is not None:
            found = Findings()
            violations.extend(self.extra(resources, config, found))
            unchecked.extend(found.unchecked)
        return violations, unchecked

    def validate(self, args: StackValidationArgs, report_violation: ReportViolation) -> None:
        violations, unchecked = self.check(args.resources, args.get_config())
        for violation in violations:
            report_violation(violation.message, violation.urn)
        if unchecked and not violations:
            args.not_applicable(f"Not checked during preview: {'; '.join(unchecked)} can't be known yet.")
