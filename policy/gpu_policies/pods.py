"""Runs a pod rule over every pod and pod template of a stack. Fractional pods are held to every rule in
every namespace; the one exemption (a system namespace of this stack) spares only pods that ask for
no fraction from the runtime class rule.

The pod policies are stack policies because only the whole stack shows whether a pod's namespace is
a system namespace of this stack. A value unknown during preview skips only the checks that read it:
a known-bad value is still refused, and a check that would need the unknown value is not made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, StackValidationArgs

from .facts import DEFAULT_NAMESPACE
from .kube import Exemptions, PodView, pod_views
from .props import UNKNOWN, Unknown, Violation, peek


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


def namespace_of(resource: PolicyResource, pod: PodView) -> str | Unknown:
    """The pod's namespace, or UNKNOWN where it may be one not known yet. During preview the kubernetes
    provider puts its own default namespace in place of an unknown one, so a namespace that reads as
    the provider's default, of an object not created yet (no metadata.uid) whose metadata comes from a
    system Namespace of this stack (as `namespace=system.id` does), may still be that namespace."""
    namespace = pod.namespace
    if not isinstance(namespace, str):
        return namespace
    provider = resource.provider.props if resource.provider is not None else {}
    if namespace != (peek(provider, "namespace") or DEFAULT_NAMESPACE) or peek(resource.props, "metadata", "uid"):
        return namespace
    sources = resource.property_dependencies.get("metadata") or []
    if any(not Exemptions.of([source]).is_empty() for source in sources):
        return UNKNOWN
    return namespace


PodRule = Callable[[PodView, Mapping[str, Any], Findings], None]
StackRule = Callable[[Sequence[PolicyResource], Mapping[str, Any], Findings], list[Violation]]


@dataclass(frozen=True)
class PodSweep:
    """Applies `rule` to each pod the stack creates. A fractional pod is held to every rule in every
    namespace; only an `exemptable` rule skips a pod that asks for no fraction in a system namespace
    of this stack (its daemons: KAI's GPU reservation pods, the GPU Operator's validators)."""

    rule: PodRule
    exemptable: bool = False
    fractional_only: bool = True
    # Checks of non-pod resources of the same policy (such as KAI's reservation pods' RuntimeClass).
    extra: StackRule | None = None

    def check(
        self, resources: Sequence[PolicyResource], config: Mapping[str, Any]
    ) -> tuple[list[Violation], list[str]]:
        exemptions = Exemptions.of(resources)
        violations: list[Violation] = []
        unchecked: list[str] = []
        for resource, pod in ((r, pod) for r in resources for pod in pod_views(r.resource_type, r.props)):
            found = Findings()
            fractional = pod.is_fractional
            if self.fractional_only:
                if isinstance(fractional, Unknown):
                    unchecked.append(f"whether {resource.name} asks for a GPU fraction")
                    continue
                if not fractional:
                    continue
            self.rule(pod, config, found)
            exempt: bool | Unknown = False
            if self.exemptable and fractional is not True:
                exempt = exemptions.exempts(namespace_of(resource, pod))
                if exempt is True and isinstance(fractional, Unknown):
                    exempt = UNKNOWN
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
