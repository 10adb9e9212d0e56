"""The shared case table under the real engine: `pulumi preview --policy-pack policy`, and `pulumi up` for
the cases with values unknown during preview, each case's resources registered as a program would.

Pods and workloads share one preview through a provider of a cluster that does not exist, so no
cluster-side admission policy interferes; a case whose verdict depends on the rest of its stack
(releases, charts, builds, unknown namespaces) gets a stack of its own, previewed in parallel. The
verdicts come from the engine's event log: a deny case must be blocked by a mandatory violation on
its resource containing its token, an allow case must have no violation.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.guide_rules import GuideCase, PulumiResource, cases
from tests.integration.workspace import REPO, Result, Workspace
from tests.policy.guide_stack import engine_stacks, resource_name, resources_of, target_name

pytestmark = pytest.mark.integration
PROGRAM = Path(__file__).parent / "guide_program.py"
GUIDE_CHARTS = REPO / "tests" / "fixtures" / "guide-rules" / "charts"
POD_TYPES = ("kubernetes:core/v1:", "kubernetes:apps/v1:", "kubernetes:batch/v1:")
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PACK_CASES = cases("pack")
# Each preview runs a language host, a provider and the pack: more at once only queues on the CPUs.
PARALLEL = max(2, (os.cpu_count() or 2))


@dataclass
class Stack:
    """One stack of the tier: the cases it registers and the JSON spec guide_program.py reads."""

    name: str
    cases: list[GuideCase]
    resources: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Violation:
    resource: str
    policy: str
    level: str
    message: str


@dataclass
class Run:
    result: Result
    violations: list[Violation]
    seconds: float
    # The resources the update created, as (type, URN name), from the engine's event log: a chart's
    # ServiceAccount and Deployment of the same name share their URN name.
    created: set[tuple[str, str]] = field(default_factory=set)


def has_unknowns(case: GuideCase) -> bool:
    pulumi = case.pulumi
    return pulumi is not None and bool(pulumi.manifest_unknown or any(r.unknown for r in pulumi.resources))


def provider_of(case: GuideCase, resource: PulumiResource, up: bool) -> str:
    if resource.type.startswith("command:"):
        return ""
    if resource.type == "kubernetes:helm.sh/v4:Chart":
        return "render"
    if up:
        return "cluster" if resource.type == HELM_RELEASE else "render"
    namespace = case.pulumi.provider_namespace if case.pulumi else None
    return f"offline:{namespace}" if namespace else "offline"


def spec_resource(case: GuideCase, resource: PulumiResource, up: bool, index: int) -> dict[str, Any]:
    props = copy.deepcopy(dict(resource.props))
    if case.namespace is not None and "metadata" in props and resource.type.startswith(POD_TYPES):
        props["metadata"].setdefault("namespace", case.namespace.name)
    if up and resource.type == HELM_RELEASE:
        # Every release of the tier shares the control plane: give each a name of its own.
        props["name"] = f"g{index}-{props['name']}"[:53]
    spec = {
        "type": resource.type,
        "name": resource_name(case, resource),
        "props": props,
        "provider": provider_of(case, resource, up),
        "unknown": [list(path) for path in resource.unknown],
        "remote": resource.type == "kubernetes:helm.sh/v4:Chart",
    }
    if resource.type == "kubernetes:helm.sh/v3:Chart":
        # What the SDK-side Chart rendered, registered by the program as the component's children.
        spec["children"] = [
            {"type": c.type, "name": c.name, "props": dict(c.props), "provider": "render" if up else "offline"}
            for c in resource.children
        ]
    return spec


def stack_of(name: str, members: list[GuideCase], up: bool = False, index: int = 0) -> Stack:
    stack = Stack(name, members)
    namespaces: dict[str, dict[str, str]] = {}
    for case in members:
        if case.namespace is not None:
            namespaces[case.namespace.name] = dict(case.namespace.labels)
        for resource in resources_of(case):
            stack.resources.append(spec_resource(case, resource, up, index * 100 + len(stack.resources)))
    for namespace, labels in namespaces.items():
        props = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
        provider = "render" if up else "offline"
        stack.resources.insert(
            0,
            {
                "type": "kubernetes:core/v1:Namespace",
                "name": f"namespace-{namespace}",
                "props": props,
                "provider": provider,
            },
        )
    return stack


def violations_in(event_log: Path) -> list[Violation]:
    found = []
    for line in event_log.read_text().splitlines():
        event = json.loads(line).get("policyEvent")
        if event:
            found.append(
                Violation(
                    resource=event.get("resourceUrn", "").rsplit("::", 1)[-1],
                    policy=event["policyName"],
                    level=event["enforcementLevel"],
                    message=event["message"],
                )
            )
    return found


def created_in(event_log: Path) -> set[tuple[str, str]]:
    found = set()
    for line in event_log.read_text().splitlines():
        metadata = (json.loads(line).get("resOutputsEvent") or {}).get("metadata") or {}
        if metadata.get("op") in ("create", "create-replacement", "update"):
            # urn:pulumi:<stack>::<project>::<parent type>$<type>::<name>
            _, _, types, name = str(metadata.get("urn", "")).split("::", 3)
            found.add((types.rsplit("$", 1)[-1], name))
    return found


def target_type(case: GuideCase) -> str:
    """The type of the resource a case's deny names: one it registers, or an object its chart renders."""
    target = target_name(case)
    for resource in resources_of(case):
        if resource_name(case, resource) == target:
            return resource.type
        for child in resource.children:
            if f"{resource_name(case, resource)}:{child.name}" == target:
                return child.type
    raise AssertionError(f"{case.case}: no resource is named {target}")


def run(workspace: Workspace, stack: Stack, command: tuple[str, ...]) -> Run:
    spec = workspace.root / f"{stack.name}.json"
    render = workspace.root / "rendered" / stack.name
    source = "render" if command[0] == "up" else "offline"
    spec.write_text(
        json.dumps({"render_directory": str(render), "source_provider": source, "resources": stack.resources})
    )
    log = workspace.root / f"{stack.name}-{command[0]}.events.json"
    started = time.monotonic()
    policy = ("--policy-pack", str(REPO / "policy")) if command[0] in ("preview", "up") else ()
    result = workspace.pulumi(
        *command,
        *policy,
        "--event-log",
        str(log),
        stack=stack.name,
        check=False,
        env={"KGF_GUIDE_SPEC": str(spec), "PULUMI_DEBUG_COMMANDS": "true"},
    )
    found = (violations_in(log), created_in(log)) if log.exists() else ([], set())
    return Run(result, found[0], time.monotonic() - started, found[1])


def first_error(output: str) -> str:
    at = output.find("error")
    return output[max(0, at - 1500) : at + 1500] if at >= 0 else output[-3000:]


def verdict_errors(stack: Stack, outcome: Run, up: bool = False) -> list[str]:
    errors = []
    for case in stack.cases:
        expect, token = case.expect, case.token
        if up and case.pulumi is not None and case.pulumi.up_expect is not None:
            expect, token = case.pulumi.up_expect, case.pulumi.up_token
        names = {resource_name(case, r) for r in resources_of(case)}
        own = [v for v in outcome.violations if v.resource in names or v.resource.split(":", 1)[0] in names]
        target = target_name(case)
        if expect == "allow" and own:
            errors.append(f"{case.case}: expected no violation, got {own}")
        if expect == "deny" and not any(
            v.resource == target and v.level == "mandatory" and token and token in v.message for v in own
        ):
            errors.append(
                f"{case.case}: expected a mandatory violation on {target} containing {token!r}, got {own}; the "
                f"run's output from its first error:\n{first_error(outcome.result.output)}"
            )
        before = case.pulumi is not None and case.pulumi.up_before_creation
        if up and expect == "deny" and before and (target_type(case), target) in outcome.created:
            errors.append(f"{case.case}: {target} was created before its values were refused")
    return errors


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    workspace = Workspace.create(tmp_path_factory.mktemp("guide-rules"), program=PROGRAM)
    (workspace.root / "guide-charts").symlink_to(GUIDE_CHARTS)
    yield workspace


def in_parallel(workspace: Workspace, stacks: list[Stack], *commands: tuple[str, ...]) -> list[list[Run]]:
    def each(stack: Stack) -> list[Run]:
        workspace.pulumi("stack", "init", stack.name)
        return [run(workspace, stack, command) for command in commands]

    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(each, stacks))


def test_every_pack_case_gets_its_verdict_at_preview(workspace: Workspace) -> None:
    stacks = [stack_of(name, members) for name, members in engine_stacks(PACK_CASES)]
    started = time.monotonic()
    runs = in_parallel(workspace, stacks, ("preview",))
    elapsed = time.monotonic() - started
    errors = []
    for stack, (outcome,) in zip(stacks, runs, strict=True):
        if "error:" in outcome.result.output and not outcome.violations:
            errors.append(f"{stack.name} did not preview:\n{outcome.result.output[-6000:]}")
        errors.extend(verdict_errors(stack, outcome))
    slowest = ", ".join(f"{stack.name} {outcome.seconds:.0f}s" for stack, (outcome,) in zip(stacks, runs, strict=True))
    print(f"{len(PACK_CASES)} cases in {len(stacks)} previews: {elapsed:.1f}s ({slowest})")  # noqa: T201
    assert errors == [], "\n".join(errors)


def test_the_cases_with_unknown_values_get_their_verdicts_at_up_as_well(workspace: Workspace) -> None:
    """Releases go to the control plane, everything else to a provider in render mode; every stack is
    destroyed and removed again."""
    unknown = [case for case in PACK_CASES if has_unknowns(case)]
    stacks = [
        stack_of(f"up-{name}"[:60], members, up=True, index=index)
        for index, (name, members) in enumerate(engine_stacks(unknown))
    ]
    runs = in_parallel(workspace, stacks, ("up", "--yes", "--skip-preview"), ("destroy", "--yes", "--skip-preview"))
    errors = []
    for stack, (up, destroy) in zip(stacks, runs, strict=True):
        if destroy.result.returncode != 0:
            errors.append(f"{stack.name} was not destroyed:\n{destroy.result.output[-2000:]}")
        else:
            workspace.pulumi("stack", "rm", "--yes", stack=stack.name)
        errors.extend(verdict_errors(stack, up, up=True))
    assert errors == [], "\n".join(errors)
