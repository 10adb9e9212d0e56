"""The pack's shared helpers: versions, image references, release identification, pod extraction."""

from __future__ import annotations

import pytest
from gpu_policies.images import split_image_reference
from gpu_policies.kube import pod_view
from gpu_policies.props import dig
from gpu_policies.releases import Component, identify_release
from gpu_policies.versions import version_at_least
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from tests.policy import golden


@pytest.mark.parametrize(
    ("actual", "minimum", "expected"),
    [
        ("v26.7.1", "v26.7.1", True),
        ("26.7.1", "v26.7.1", True),
        ("v26.10.0", "v26.7.1", True),
        ("v26.7.0", "v26.7.1", False),
        ("v26.7.1-rc.1", "v26.7.1", False),
        ("615.71.09", "615", True),
        ("610.1", "615", False),
        ("v26.7", "v26.7.1", False),
        ("latest", "615", None),
    ],
)
def test_versions_compare_numerically_with_or_without_v(actual: str, minimum: str, expected: bool | None) -> None:
    assert version_at_least(actual, minimum) is expected, f"{actual} >= {minimum} should be {expected}"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "registry.example.com/team/kai-fork/kai-gpu-fractioning/mpsd:v1",
            ("registry.example.com/team/kai-fork/kai-gpu-fractioning/mpsd", "v1"),
        ),
        ("localhost:5000/kai/operator", ("localhost:5000/kai/operator", None)),
        ("localhost:5000/kai/operator:t@sha256:abc", ("localhost:5000/kai/operator", "t")),
    ],
)
def test_image_references_split_into_repository_and_tag(reference: str, expected: tuple[str, str | None]) -> None:
    assert split_image_reference(reference) == expected, "a registry port is not a tag"


@pytest.mark.parametrize(
    ("props", "component"),
    [
        (
            {"name": "scheduler", "chart": "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"},
            Component.KAI_SCHEDULER,
        ),
        (
            {"name": "kai", "chart": "../forks/KAI-Scheduler/deployments/kai-scheduler/"},
            Component.KAI_SCHEDULER,
        ),
        ({"name": "agents", "chart": "/src/kai-gpu-fractioning/operator/charts"}, Component.GPU_FRACTIONING),
        ({"name": "gpu-fractioning", "chart": "./charts"}, None),
        ({"name": "kai-scheduler", "chart": "oci://registry.example.com/charts/redis"}, None),
        ({"name": "operator", "chart": "nvidia/gpu-operator"}, Component.GPU_OPERATOR),
        (
            {"name": "kai-scheduler", "chart": "./kai-gpu-fractioning/operator/charts"},
            Component.GPU_FRACTIONING,
        ),
        ({"name": "redis", "chart": "bitnami/redis"}, None),
        ({"name": UNKNOWN_STRING_VALUE, "chart": UNKNOWN_STRING_VALUE}, None),
    ],
)
def test_releases_are_identified_by_their_chart_never_by_their_name(
    props: golden.Props, component: Component | None
) -> None:
    assert identify_release(golden.RELEASE, unknown_checking_proxy(props)) is component, f"{props} misidentified"


def test_only_helm_types_are_releases() -> None:
    assert identify_release(golden.POD, {"name": "kai-scheduler"}) is None, "a pod named kai-scheduler is a pod"


def test_a_pod_without_a_namespace_is_in_default() -> None:
    pod = pod_view(golden.POD, unknown_checking_proxy(golden.whole_gpu_pod()))
    assert pod is not None and pod.namespace == "default", "the pack's documented default namespace"


def test_a_workload_without_a_template_has_no_pod() -> None:
    assert pod_view(golden.DEPLOYMENT, {"metadata": {"name": "empty"}}) is None, "nothing to check, no crash"


def test_raw_unknown_sentinels_raise_the_sdk_error_even_without_a_proxy() -> None:
    with pytest.raises(UnknownValueError):
        dig({"values": {"global": {"tag": UNKNOWN_STRING_VALUE}}}, "values", "global", "tag")
