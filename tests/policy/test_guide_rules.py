"""The shared case table through the pack's policies directly: each case as the stack it registers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from gpu_policies import POLICIES
from pulumi_policy import StackValidationPolicy

from tests.guide_rules import GuideCase, cases
from tests.policy.golden import Resource
from tests.policy.guide_stack import Phase, StackResource, case_stack, engine_stacks
from tests.policy.harness import run_resource, run_stack

REPO = Path(__file__).resolve().parents[2]
# Chart paths in the table are relative to the program's directory, where the engine runs the pack.
CHART_LINKS = {
    "charts": REPO / "standins" / "charts",
    "guide-charts": REPO / "tests" / "fixtures" / "guide-rules" / "charts",
}
PACK_CASES = cases("pack")


@dataclass(frozen=True)
class Found:
    policy: str
    resource: str
    message: str


@pytest.fixture(scope="module")
def program_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("program")
    for name, target in CHART_LINKS.items():
        (root / name).symlink_to(target)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        yield


def pack_verdicts(case: GuideCase, phase: Phase) -> list[Found]:
    """Every violation the pack reports for the case's stack, with the resource it names."""
    return verdicts_of(case_stack(case, phase).resources)


def verdicts_of(stack: list[StackResource]) -> list[Found]:
    outputs = [Resource(r.type, r.name, r.outputs) for r in stack]
    parents = {r.name: r.parent for r in stack if r.parent}
    fed = {r.name: dict(r.depends) for r in stack if r.depends}
    found: list[Found] = []
    for policy in POLICIES:
        if isinstance(policy, StackValidationPolicy):
            outcome = run_stack(policy, outputs, parents=parents, fed=fed)
            found.extend(
                Found(policy.name, (urn or "").rsplit("::", 1)[-1], message)
                for message, urn in zip(outcome.violations, outcome.urns, strict=True)
            )
        else:
            for r in stack:
                outcome = run_resource(policy, r.type, r.inputs, name=r.name)
                found.extend(Found(policy.name, r.name, message) for message in outcome.violations)
    return found


def has_unknowns(case: GuideCase) -> bool:
    pulumi = case.pulumi
    return pulumi is not None and bool(pulumi.manifest_unknown or any(r.unknown for r in pulumi.resources))


def expected(case: GuideCase, phase: Phase) -> tuple[str, str | None]:
    if phase == "up" and case.pulumi is not None and case.pulumi.up_expect is not None:
        return case.pulumi.up_expect, case.pulumi.up_token
    return case.expect, case.token


BATCHES = [
    (name, members, phase)
    for phase, among in (("preview", PACK_CASES), ("up", [c for c in PACK_CASES if has_unknowns(c)]))
    for name, members in engine_stacks(among)
    if len(members) > 1
]


@pytest.mark.usefixtures("program_directory")
@pytest.mark.parametrize(("name", "members", "phase"), BATCHES, ids=[f"{phase}-{name}" for name, _, phase in BATCHES])
def test_cases_the_engine_tier_runs_together_are_judged_as_alone(
    name: str, members: list[GuideCase], phase: Phase
) -> None:
    """The engine tier batches cases into few previews. Batched, an allow case still gets no violation
    and a deny case is still refused on its resource with its token (its other messages may change:
    a wrong value is compared with more neighbours)."""
    verdicts = verdicts_of([r for case in members for r in case_stack(case, phase).resources])
    for case in members:
        names = {r.name for r in case_stack(case, phase).resources}
        batched = [v for v in verdicts if v.resource in names]
        expect, token = expected(case, phase)
        if expect == "allow":
            assert batched == [], f"{case.case} is refused in the {name} stack: {batched}"
        else:
            target, token = case_stack(case, phase).target, token or ""
            assert any(v.resource == target and token in v.message for v in batched), (
                f"{case.case} is no longer refused with {token!r} in the {name} stack"
            )


# The engine runs these on each resource as it is registered, before it is created; stack policies
# run once the update has created everything.
RESOURCE_POLICIES = frozenset(p.name for p in POLICIES if not isinstance(p, StackValidationPolicy))


def assert_verdict(case: GuideCase, phase: Phase) -> None:
    verdicts = pack_verdicts(case, phase)
    expect, token = expected(case, phase)
    target = case_stack(case, phase).target
    if expect == "allow":
        assert verdicts == [], f"{case.case} must pass at {phase}"
        return
    assert token is not None
    refusals = [v for v in verdicts if v.resource == target and token in v.message]
    assert refusals, f"{case.case} at {phase}: no violation on {target} containing {token!r}, only {verdicts}"
    if phase == "up" and case.pulumi is not None and case.pulumi.up_before_creation:
        assert any(v.policy in RESOURCE_POLICIES for v in refusals), (
            f"{case.case}: {target} is refused only by stack policies, which report after the update created it"
        )


@pytest.mark.usefixtures("program_directory")
@pytest.mark.parametrize("case", PACK_CASES, ids=lambda case: case.case)
def test_the_pack_gives_each_case_its_verdict_at_preview(case: GuideCase) -> None:
    assert_verdict(case, "preview")


@pytest.mark.usefixtures("program_directory")
@pytest.mark.parametrize("case", [c for c in PACK_CASES if has_unknowns(c)], ids=lambda case: case.case)
def test_the_pack_gives_each_case_with_unknown_values_its_verdict_at_up(case: GuideCase) -> None:
    assert_verdict(case, "up")


@pytest.mark.usefixtures("program_directory")
def test_every_deny_case_is_refused_by_a_policy_that_names_the_token_only_once_per_resource() -> None:
    """A refusal that two policies both report would say the same thing twice to the user."""
    for case in PACK_CASES:
        verdicts = pack_verdicts(case, "preview")
        seen = [(v.resource, v.message) for v in verdicts]
        assert len(seen) == len(set(seen)), f"{case.case} reports one message twice: {verdicts}"
