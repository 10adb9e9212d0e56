"""kai-fork-require-paired-image-tags: one tag, one registry base, the tag the stack builds."""

from __future__ import annotations

import pytest
from gpu_policies.kai_fork_require_paired_image_tags import policy
from gpu_policies.releases import CRD
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


def test_digest_pinned_node_agents_pass_with_the_built_tag() -> None:
    stack = golden.fork_stack()
    for agent in golden.NODE_AGENTS:
        set_value(stack, "gpu-fractioning", f"images.{agent}.tag", f"{TAG}@sha256:{'c' * 64}")
    assert run_stack(policy, stack).violations == [], "the tag part is the built tag; the digest pins it"


def test_a_per_service_tag_is_part_of_the_pair() -> None:
    stack = prebuilt(golden.fork_stack())
    set_value(stack, "kai-scheduler", "scheduler", {"image": {"tag": "smshare-0000000-af0544e"}})
    assert run_stack(policy, stack).violations == [
        "scheduler.image.tag of release 'kai-scheduler' is 'smshare-0000000-af0544e' but global.tag of release "
        f"'kai-scheduler' is {TAG!r}; deploy both forks with one tag, because they only work as a matched pair."
    ], "the scheduler runs its own tag"


@pytest.mark.parametrize("release", ["kai-scheduler", "gpu-fractioning"])
def test_fips_mode_fails_unless_the_stack_builds_fips_images(release: str) -> None:
    stack = golden.fork_stack()
    set_value(stack, release, "global", {**props_of(stack, release)["values"].get("global", {}), "fipsMode": "on"})
    violations = run_stack(policy, stack).violations
    assert f"global.fipsMode of release {release!r} is 'on', so the chart appends -fips" in violations[-1], (
        "the chart then deploys <tag>-fips, which the fork build never pushed"
    )
    set_built_tags(stack, f"{TAG}-fips")
    set_deployed_tags(stack, TAG)
    for other in {"kai-scheduler", "gpu-fractioning"} - {release}:
        set_value(stack, other, "global", {**props_of(stack, other)["values"].get("global", {}), "fipsMode": "on"})
    assert run_stack(policy, stack).violations == [], "a stack that builds the -fips pair may deploy it"


def test_both_forks_from_upstream_while_the_stack_builds_them_fails() -> None:
    stack = golden.fork_stack()
    set_value(stack, "kai-scheduler", "global.registry", "ghcr.io/kai-scheduler/kai-scheduler")
    for agent in golden.NODE_AGENTS:
        set_value(
            stack, "gpu-fractioning", f"images.{agent}.repository", f"ghcr.io/kai-scheduler/kai-gpu-fractioning/{agent}"
        )
    violations = run_stack(policy, stack).violations
    assert len(violations) == 5 and violations[0] == (
        "global.registry of release 'kai-scheduler' is under 'ghcr.io/kai-scheduler' but this stack builds the "
        f"forks under {REGISTRY!r}; deploy the images from the registry you push them to."
    ), "one registry base for both is not enough: it must be where the stack pushes"


def test_a_rendered_gpu_fractioning_operator_passes_its_images_on() -> None:
    agents = [("MPSD", "mpsd"), ("FRACTIOND", "fractiond"), ("METRICSD", "metricsd")]
    env = [
        item
        for name, agent in agents
        for item in (
            {"name": f"{name}_IMAGE_REPOSITORY", "value": f"{REGISTRY}/kai-gpu-fractioning/{agent}"},
            {"name": f"{name}_IMAGE_TAG", "value": "exp-7" if agent == "mpsd" else TAG},
        )
    ]
    container = {"name": "manager", "image": f"{REGISTRY}/kai-gpu-fractioning/operator:{TAG}", "env": env}
    operator = {"metadata": {"name": "gpu-fractioning"}, "spec": {"template": {"spec": {"containers": [container]}}}}
    crd = {"metadata": {"name": "gpufractioningconfigs.gpu-fractioning.kai.scheduler"}}
    stack = [
        Resource(golden.RELEASE, "kai-scheduler", golden.kai_release()),
        Resource(golden.CHART_V4, "agents", {}),
        Resource(CRD, "agents:crd", crd),
        Resource(golden.DEPLOYMENT, "agents:gpu-fractioning/gpu-fractioning", operator),
    ]
    parents = {"agents:crd": "agents", "agents:gpu-fractioning/gpu-fractioning": "agents"}
    assert run_stack(policy, stack, parents=parents).violations == [
        "MPSD_IMAGE_TAG of container 'manager' of Deployment 'agents:gpu-fractioning/gpu-fractioning' of chart "
        f"'agents' is 'exp-7' but global.tag of release 'kai-scheduler' is {TAG!r}; deploy both forks with one tag, "
        "because they only work as a matched pair."
    ], "a Chart resource shows the images its operator hands the node agents"


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
