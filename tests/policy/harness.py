"""Runs policies the way the SDK's analyzer server does, without the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpu_policies import POLICIES
from pulumi_policy import (
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

# The SDK has no public name for what `args.not_applicable()` raises; its server catches this class.
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import unknown_checking_proxy

from tests.policy.golden import Resource


@dataclass
class Outcome:
    violations: list[str] = field(default_factory=list)
    urns: list[str | None] = field(default_factory=list)
    not_applicable: str | None = None


def urn_of(resource_type: str, name: str) -> str:
    return f"urn:pulumi:dev::kai-gpu-fractions::{resource_type}::{name}"


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def _run(policy: Policy, args: ResourceValidationArgs | StackValidationArgs) -> Outcome:
    outcome = Outcome()

    def report(message: str, urn: str | None = None) -> None:
        outcome.violations.append(message)
        outcome.urns.append(urn)

    try:
        result = policy.validate(args, report)  # type: ignore[attr-defined]
    except _NotApplicableError as skipped:
        outcome.not_applicable = skipped.reason
        return outcome
    assert result is None, "every policy in the pack validates synchronously"
    return outcome


def run_resource(
    policy: Policy,
    resource_type: str,
    props: Mapping[str, Any],
    config: Mapping[str, Any] | None = None,
    name: str = "under-test",
) -> Outcome:
    """Validates one resource's inputs, wrapped in the proxy the engine puts around them; a stack policy
    sees a stack of that one resource."""
    if isinstance(policy, StackValidationPolicy):
        return run_stack(policy, [Resource(resource_type, name, dict(props))], config)
    assert isinstance(policy, ResourceValidationPolicy), f"{policy.name} is not a resource policy"
    args = ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(dict(props)),
        urn_of(resource_type, name),
        name,
        _options(),
        None,
        config,
    )
    return _run(policy, args)


# The resource whose outputs feed the properties `fed` names.
_SOURCE = PolicyResource(
    "kubernetes:core/v1:ConfigMap",
    {},
    urn_of("kubernetes:core/v1:ConfigMap", "source"),
    "source",
    _options(),
    None,
    None,
    [],
    {},
)


def policy_resources(
    resources: Sequence[Resource],
    parents: Mapping[str, str] | None = None,
    fed: Mapping[str, Mapping[str, str | None]] | None = None,
) -> list[PolicyResource]:
    """Stack resources as the engine hands them, each wrapped in the proxy; `parents` maps a child's name
    to its parent's (a v4 Chart's rendered objects), and `fed` a resource's name to its properties that
    depend on another resource's outputs, each to that resource's name (None: a resource outside the stack)."""
    built = {
        resource.name: PolicyResource(
            resource.type,
            unknown_checking_proxy(resource.props),
            urn_of(resource.type, resource.name),
            resource.name,
            _options(),
            None,
            None,
            [],
            {},
        )
        for resource in resources
    }
    for child, parent in (parents or {}).items():
        built[child].parent = built[parent]
    for name, props in (fed or {}).items():
        for prop, source in props.items():
            built[name].property_dependencies[prop] = [_SOURCE if source is None else built[source]]
    return list(built.values())


def run_stack(
    policy: Policy,
    resources: Sequence[Resource],
    config: Mapping[str, Any] | None = None,
    parents: Mapping[str, str] | None = None,
    fed: Mapping[str, Mapping[str, str | None]] | None = None,
) -> Outcome:
    """Validates a stack whose outputs echo the golden inputs, each wrapped like the engine does."""
    assert isinstance(policy, StackValidationPolicy), f"{policy.name} is not a stack policy"
    return _run(policy, StackValidationArgs(policy_resources(resources, parents, fed), config))


def pack_violations(resources: Sequence[Resource]) -> dict[str, list[str]]:
    """Every violation the whole pack reports for a stack, keyed by policy name, as a preview would."""
    found: dict[str, list[str]] = {}
    for policy in POLICIES:
        if isinstance(policy, StackValidationPolicy):
            outcomes = [run_stack(policy, resources)]
        else:
            outcomes = [run_resource(policy, resource.type, resource.props) for resource in resources]
        messages = [message for outcome in outcomes for message in outcome.violations]
        if messages:
            found[policy.name] = messages
    return found
