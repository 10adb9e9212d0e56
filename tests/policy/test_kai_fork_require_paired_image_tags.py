"""kai-fork-require-paired-image-tags: one tag, one registry base, the tag the stack builds."""

from __future__ import annotations

import pytest
from gpu_policies.kai_fork_require_paired_image_tags import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.golden import REGISTRY, TAG, Props, Resource
from tests.policy.harness import run_stack, urn_of

OTHER_REGISTRY = "registry.other.example/kai"


def props_of(stack: list[Resource], name: str) -> Props:
    return next(resource.props for resource in stack if resource.name == name)


def _parent(stack: list[Resource], release: str, key: str) -> tuple[Props, str]:
    *path, last = key.split(".")
    values = props_of(stack, release)["values"]
    for step in path:
        values = values[step]
    return values, last


def set_value(stack: list[Resource], release: str, key: str, value: object) -> None:
    parent, last = _parent(stack, release, key)
    parent[last] = value


def pop_value(stack: list[Resource], release: str, key: str) -> None:
    parent, last = _parent(stack, release, key)
    del parent[last]


def set_deployed_tags(stack: list[Resource], tag: str) -> None:
    set_value(stack, "kai-scheduler", "global.tag", tag)
    for agent in golden.NODE_AGENTS:
        set_value(stack, "gpu-fractioning", f"images.{agent}.tag", tag)


def set_built_tags(stack: list[Resource], tag: str) -> None:
    for resource in stack:
        if resource.type == golden.COMMAND:
            environment = resource.props["environment"]
            environment["DOCKER_TAG" if "DOCKER_TAG" in environment else "VERSION"] = tag


def prebuilt(stack: list[Resource]) -> list[Resource]:
    return [resource for resource in stack if resource.type != golden.COMMAND]


def unset_repository(key: str, release: str) -> str:
    return (
        f"{key} of release {release!r} is not set, so the chart pulls its default upstream image instead of "
        "your fork build; set it under the registry you pushed the forks to."
    )


def test_the_fork_stack_with_one_built_tag_passes() -> None:
    outcome = run_stack(policy, golden.fork_stack())
    assert outcome.violations == [] and outcome.not_applicable is None, "the golden fork install is compliant"


def test_a_prebuilt_fork_stack_without_build_resources_passes() -> None:
    assert run_stack(policy, prebuilt(golden.fork_stack())).violations == [], "no build means no built tag"


def test_the_laptop_lab_is_not_applicable() -> None:
    outcome = run_stack(policy, golden.lab_stack())
    assert outcome.not_applicable == (
        "The stack deploys neither the gpu-fractioning release nor KAI in NvFractions mode."
    ), "public KAI v0.17.0 without gpu-fractioning deploys no fork"


def test_a_node_agent_tag_that_differs_from_kai_fails() -> None:
    stack = prebuilt(golden.fork_stack())
    set_value(stack, "gpu-fractioning", "images.fractiond.tag", "smshare-0000000-af0544e")
    assert run_stack(policy, stack).violations == [
        "images.fractiond.tag of release 'gpu-fractioning' is 'smshare-0000000-af0544e' but global.tag of "
        f"release 'kai-scheduler' is {TAG!r}; deploy both forks with one tag, because they only work as a "
        "matched pair."
    ], "the forks are a matched pair"


def test_deploying_a_tag_the_stack_did_not_build_fails_for_every_image() -> None:
    stack = golden.fork_stack()
    set_built_tags(stack, "smshare-1111111-af0544e")
    outcome = run_stack(policy, stack)
    assert len(outcome.violations) == 5, "all five deployed fork tags differ from the built one"
    assert outcome.violations[0] == (
        f"global.tag of release 'kai-scheduler' is {TAG!r} but this stack builds 'smshare-1111111-af0544e'; "
        "deploy the tag you built."
    ), "the deployed tag must be the built tag"
    assert outcome.urns[0] == urn_of(golden.RELEASE, "kai-scheduler"), "violations point at the release"


def test_a_docker_image_built_under_the_fork_registry_counts_as_a_build() -> None:
    stack = [
        *prebuilt(golden.fork_stack()),
        Resource("docker:index/image:Image", "mpsd", {"imageName": f"{REGISTRY}/kai-gpu-fractioning/mpsd:v9"}),
    ]
    violations = run_stack(policy, stack).violations
    assert len(violations) == 5 and violations[-1] == (
        f"images.metricsd.tag of release 'gpu-fractioning' is {TAG!r} but this stack builds 'v9'; "
        "deploy the tag you built."
    ), "an image pushed under the fork registry base is a fork build"


def test_app_images_built_under_another_registry_are_not_fork_builds() -> None:
    stack = [
        *golden.fork_stack(),
        Resource("docker-build:index:Image", "web", {"tags": ["registry.example.com/shop/web:v3"]}),
    ]
    assert run_stack(policy, stack).violations == [], "a team's own app images do not pin the fork tag"


def test_a_node_agent_repository_under_another_registry_fails() -> None:
    stack = prebuilt(golden.fork_stack())
    set_value(
        stack,
        "gpu-fractioning",
        "images.metricsd.repository",
        f"{OTHER_REGISTRY}/kai-gpu-fractioning/metricsd",
    )
    assert run_stack(policy, stack).violations == [
        f"images.metricsd.repository of release 'gpu-fractioning' is under {OTHER_REGISTRY!r} but "
        f"global.registry of release 'kai-scheduler' is under {REGISTRY!r}; push and deploy both forks under "
        "one registry base."
    ], "both forks come from the registry they were pushed to"


@pytest.mark.parametrize(
    ("release", "key"),
    [("kai-scheduler", "global.registry"), ("gpu-fractioning", "images.operator.repository")],
)
def test_an_unset_repository_fails_because_the_chart_pulls_upstream(release: str, key: str) -> None:
    stack = prebuilt(golden.fork_stack())
    pop_value(stack, release, key)
    assert run_stack(policy, stack).violations == [unset_repository(key, release)], (
        "a default repository means an upstream image"
    )


def test_fork_node_agents_next_to_the_public_kai_chart_fail() -> None:
    stack = [
        Resource(golden.RELEASE, "kai-scheduler", golden.lab_kai_release()),
        Resource(golden.RELEASE, "gpu-fractioning", golden.fractioning_release()),
    ]
    assert run_stack(policy, stack).violations == [unset_repository("global.registry", "kai-scheduler")], (
        "a fork node agent against the upstream scheduler schedules pods that get no GPU"
    )


def test_helm_v4_charts_are_recognised_by_chart_name() -> None:
    kai, fractioning = golden.kai_release(), golden.fractioning_release()
    kai.update(name="scheduler", chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler")
    fractioning["values"]["images"]["operator"]["tag"] = "exp-7"
    stack = [
        Resource(golden.CHART_V4, "scheduler", kai),
        Resource(golden.CHART_V4, "agents", fractioning),
    ]
    assert run_stack(policy, stack).violations == [
        f"images.operator.tag of release 'gpu-fractioning' is 'exp-7' but global.tag of release 'scheduler' is "
        f"{TAG!r}; deploy both forks with one tag, because they only work as a matched pair."
    ], "a v4 Chart is a release too"


def test_tags_unknown_during_preview_skip_only_the_tag_checks() -> None:
    stack = golden.fork_stack()
    set_deployed_tags(stack, UNKNOWN_STRING_VALUE)
    set_built_tags(stack, UNKNOWN_STRING_VALUE)
    assert run_stack(policy, stack).violations == [], "a tag computed from a build is not a violation"
    set_value(stack, "gpu-fractioning", "images.mpsd.repository", f"{OTHER_REGISTRY}/kai-gpu-fractioning/mpsd")
    assert len(run_stack(policy, stack).violations) == 1, "known registry values are still checked at preview"


def test_an_unknown_release_name_or_sharing_mode_does_not_crash() -> None:
    kai = golden.kai_release()
    kai["name"] = UNKNOWN_STRING_VALUE
    kai["values"]["global"]["gpuSharingMode"] = UNKNOWN_STRING_VALUE
    outcome = run_stack(policy, [Resource(golden.RELEASE, "kai", kai)])
    assert outcome.not_applicable is not None, "an unknown mode cannot prove NvFractions, so nothing applies"
