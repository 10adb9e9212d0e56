"""kai-fork-require-explicit-image-tags: every fork image has an explicit tag that is a build (an explicit
default tag on a v3 Release is refused on the release itself, by kai-release-disallow-unsafe-values)."""

from __future__ import annotations

import pytest
from gpu_policies.facts import KAI_CONFIG
from gpu_policies.kai_fork_require_explicit_image_tags import policy
from gpu_policies.kai_release_disallow_unsafe_values import policy as release_policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.golden import REGISTRY, TAG, Resource
from tests.policy.harness import run_resource, run_stack
from tests.policy.test_kai_fork_require_paired_image_tags import pop_value, prebuilt, set_deployed_tags, set_value


def empty_tag(key: str, release: str) -> str:
    return (
        f"{key} of release {release!r} is empty, so the chart falls back to its appVersion instead of your "
        "fork build; set it to the tag you built and pushed."
    )


def default_tag(key: str, release: str, tag: str) -> str:
    return (
        f"{key} of release {release!r} is {tag!r}, a chart or Makefile default rather than your fork build; "
        "set it to the tag you built and pushed."
    )


def both(stack: list[Resource], config: dict[str, object] | None = None) -> list[str]:
    """What the stack policy and, on each release, the release policy report: the tag rule as a whole."""
    found = list(run_stack(policy, stack, config).violations)
    for resource in stack:
        found.extend(run_resource(release_policy, resource.type, resource.props, config).violations)
    return found


def test_the_fork_stack_with_its_built_tag_passes() -> None:
    outcome = run_stack(policy, golden.fork_stack())
    assert outcome.violations == [] and outcome.not_applicable is None, "the golden fork install is compliant"


def test_the_laptop_lab_is_not_applicable() -> None:
    assert run_stack(policy, golden.lab_stack()).not_applicable is not None, "public KAI deploys no fork"


@pytest.mark.parametrize("tag", [None, ""], ids=["absent", "empty"])
def test_an_empty_kai_global_tag_fails(tag: str | None) -> None:
    stack = prebuilt(golden.fork_stack())
    pop_value(stack, "kai-scheduler", "global.tag")
    if tag is not None:
        set_value(stack, "kai-scheduler", "global.tag", tag)
    assert run_stack(policy, stack).violations == [empty_tag("global.tag", "kai-scheduler")], (
        "an empty tag silently deploys the chart's appVersion"
    )


def test_an_absent_node_agent_tag_fails() -> None:
    stack = prebuilt(golden.fork_stack())
    pop_value(stack, "gpu-fractioning", "images.mpsd.tag")
    assert run_stack(policy, stack).violations == [
        "images.mpsd.tag of release 'gpu-fractioning' is empty, so the chart falls back to its appVersion "
        "instead of your fork build; set it to the tag you built and pushed."
    ], "every one of the four node-agent tags must be set"


@pytest.mark.parametrize("tag", ["0.0.0", "0.1.0", "latest", "v0.1.0"])
def test_a_default_tag_on_every_image_fails_once_per_image(tag: str) -> None:
    stack = prebuilt(golden.fork_stack())
    set_deployed_tags(stack, tag)
    violations = both(stack)
    assert len(violations) == 5, "KAI's global.tag and the four node-agent tags each fail"
    assert violations[0] == default_tag("global.tag", "kai-scheduler", tag), (
        "a chart appVersion or Makefile default is never the fork build"
    )


def test_kai_in_nvfractions_mode_alone_still_needs_an_explicit_tag() -> None:
    kai = golden.kai_release()
    kai["values"]["global"].pop("tag")
    outcome = run_stack(policy, [Resource(golden.RELEASE, "kai-scheduler", kai)])
    assert outcome.violations == [empty_tag("global.tag", "kai-scheduler")], (
        "NvFractions mode means the fork, even when gpu-fractioning lives in another stack"
    )


def test_forbidden_tags_are_configurable() -> None:
    stack = prebuilt(golden.fork_stack())
    violations = both(stack, {"forbiddenTags": [TAG]})
    assert len(violations) == 5, "a team may retire a tag through config"
    stack = prebuilt(golden.fork_stack())
    set_deployed_tags(stack, "latest")
    assert both(stack, {"forbiddenTags": []}) == [], "an empty list forbids nothing"


def test_a_per_service_tag_override_is_checked_too() -> None:
    stack = prebuilt(golden.fork_stack())
    set_value(stack, "kai-scheduler", "binder", {"runtimeClassName": "nvidia", "image": {"tag": "latest"}})
    assert both(stack) == [default_tag("binder.image.tag", "kai-scheduler", "latest")], (
        "KAI's chart prefers <service>.image.tag over global.tag"
    )


def test_an_explicit_default_tag_on_kai_fails_even_when_its_mode_is_unknown() -> None:
    kai = golden.kai_release()
    kai["values"]["global"].update(tag="latest", gpuSharingMode=UNKNOWN_STRING_VALUE)
    assert both([Resource(golden.RELEASE, "kai-scheduler", kai)]) == [
        default_tag("global.tag", "kai-scheduler", "latest")
    ], "latest is never the right KAI tag, fork or not"


def test_a_digest_pinned_tag_is_explicit() -> None:
    stack = prebuilt(golden.fork_stack())
    set_value(stack, "gpu-fractioning", "images.mpsd.tag", f"{TAG}@sha256:{'a' * 64}")
    set_value(stack, "gpu-fractioning", "images.metricsd.tag", f"sha256:{'b' * 64}")
    assert run_stack(policy, stack).violations == [], "a digest names one build"


def test_a_rendered_kai_config_with_a_default_tag_fails_before_it_is_created() -> None:
    stack = [Resource(golden.CHART_V4, "kai", {}), Resource(KAI_CONFIG, "kai:kai-config", rendered_config("latest"))]
    assert run_stack(policy, stack, parents={"kai:kai-config": "kai"}).violations == [], "reported once, below"
    found = run_resource(release_policy, KAI_CONFIG, rendered_config("latest")).violations
    assert found[0] == (
        "spec.admission.service.image.tag of this kai-config Config is 'latest', a chart or Makefile default "
        "rather than your fork build; set it (in the values of the chart that renders it) to the tag you built "
        "and pushed."
    ), "a Chart resource hands the pack the Config it renders, never its values: the Config is refused itself"
    assert len(found) == 3, "admission, binder and the reservation image"


def test_a_kai_config_is_judged_before_creation_only_in_nvfractions_mode() -> None:
    other_mode = rendered_config("latest")
    other_mode["spec"]["global"]["gpuSharingMode"] = "HamiCore"
    assert run_resource(release_policy, KAI_CONFIG, other_mode).violations == [], "not the fork: the stack decides"
    unknown_mode = rendered_config("latest")
    unknown_mode["spec"]["global"]["gpuSharingMode"] = UNKNOWN_STRING_VALUE
    outcome = run_resource(release_policy, KAI_CONFIG, unknown_mode)
    assert outcome.violations == [] and outcome.not_applicable == (
        "Not checked during preview: spec.global.gpuSharingMode can't be known yet; `pulumi up` checks them before "
        "the Config is created."
    )
    assert run_resource(release_policy, KAI_CONFIG, rendered_config(TAG)).violations == [], "the built tag passes"


def rendered_config(tag: str) -> golden.Props:
    image = {"repository": f"{REGISTRY}/kai-scheduler", "tag": tag}
    return {
        "metadata": {"name": "kai-config"},
        "spec": {
            "global": {"gpuSharingMode": "NvFractions"},
            "admission": {"service": {"image": {"name": "admission", **image}}},
            "binder": {
                "service": {"image": {"name": "binder", **image}},
                "resourceReservation": {
                    "runtimeClassName": "nvidia",
                    "image": {"name": "resourcereservation", **image},
                },
            },
        },
    }


def test_a_tag_unknown_during_preview_is_not_a_violation() -> None:
    stack = golden.fork_stack()
    set_deployed_tags(stack, UNKNOWN_STRING_VALUE)
    assert run_stack(policy, stack).violations == [], "a tag computed from a build is checked at up"


def operator_deployment(mpsd_tag: str) -> golden.Props:
    """gpu-fractioning's operator as its chart renders it: the node agents' images as variables."""
    env = []
    for agent, tag in (("MPSD", mpsd_tag), ("FRACTIOND", TAG), ("METRICSD", TAG)):
        env += [
            {"name": f"{agent}_IMAGE_REPOSITORY", "value": f"{REGISTRY}/kai-gpu-fractioning/{agent.lower()}"},
            {"name": f"{agent}_IMAGE_TAG", "value": tag},
        ]
    container = {"name": "manager", "image": f"{REGISTRY}/kai-gpu-fractioning/operator:{TAG}", "env": env}
    return {
        "metadata": {"name": "gpu-fractioning", "namespace": "gpu-fractioning"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def test_a_rendered_operator_passing_a_default_agent_tag_fails_before_it_is_created() -> None:
    deployment = "kubernetes:apps/v1:Deployment"
    found = run_resource(release_policy, deployment, operator_deployment("latest")).violations
    assert found == [
        "MPSD_IMAGE_TAG of container 'manager' of gpu-fractioning's operator is 'latest', a chart or Makefile "
        "default rather than your fork build; set it (in the values of the chart that renders it) to the tag you "
        "built and pushed."
    ], "the operator hands mpsd's image to every node: it is refused before it exists"
    stack = [Resource(golden.CHART_V4, "agents", {}), Resource(deployment, "agents:op", operator_deployment("latest"))]
    assert run_stack(policy, stack, parents={"agents:op": "agents"}).violations == [], "reported once, above"
    assert run_resource(release_policy, deployment, operator_deployment(TAG)).violations == []
    other = {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:latest"}]}}}}
    assert run_resource(release_policy, deployment, other).violations == [], "any other workload: the stack decides"
