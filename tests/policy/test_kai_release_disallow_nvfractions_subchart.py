"""kai-release-disallow-nvfractions-subchart (chart resources) and kai-release-disallow-unsafe-values (v3
Releases, judged on the release itself): the upstream subchart never replaces the fork."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_policies.kai_release_disallow_nvfractions_subchart import policy
from gpu_policies.kai_release_disallow_unsafe_values import policy as release_policy
from gpu_policies.releases import CRD
from pulumi_policy.proxy import UNKNOWN_BOOLEAN_VALUE

from tests.policy import golden
from tests.policy.golden import Resource
from tests.policy.harness import run_resource, run_stack, urn_of

SUBCHART = (
    "global.nvFractions.set of release 'kai-scheduler' is true, which installs the upstream gpu-fractioning "
    "subchart from ghcr.io instead of your fork; leave it at false and install the fork's chart as its own release."
)


def kai_with_subchart(value: object) -> golden.Props:
    kai = golden.kai_release()
    kai["values"]["global"]["nvFractions"]["set"] = value
    return kai


def test_the_fork_release_with_the_subchart_off_passes() -> None:
    assert run_resource(release_policy, golden.RELEASE, golden.kai_release()).violations == [], (
        "set: false is the default"
    )


def test_the_lab_release_without_the_key_passes() -> None:
    assert run_resource(release_policy, golden.RELEASE, golden.lab_kai_release()).violations == [], (
        "v0.17.0 has no nvFractions key at all"
    )


def test_turning_the_subchart_on_fails() -> None:
    assert run_resource(release_policy, golden.RELEASE, kai_with_subchart(True)).violations == [SUBCHART], (
        "true installs the upstream subchart"
    )


@pytest.mark.parametrize("value", ["true", "True", "false", "0", 0])
def test_any_value_that_is_not_a_boolean_fails(value: object) -> None:
    assert run_resource(release_policy, golden.RELEASE, kai_with_subchart(value)).violations == [
        f"global.nvFractions.set of release 'kai-scheduler' is {value!r}, not a boolean: Helm keeps a subchart on "
        "for any condition value that is not false, so this installs the upstream gpu-fractioning subchart from "
        "ghcr.io; write false unquoted, or leave it at false and install the fork's chart as its own release."
    ], "Helm reads a condition as a boolean only when it is one"


def test_a_vendored_chart_that_defaults_the_subchart_on_fails(tmp_path: Path) -> None:
    chart = tmp_path / "vendored"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kai-scheduler\nversion: 0.0.0\n")
    (chart / "values.yaml").write_text("global:\n  nvFractions:\n    set: true\n")
    kai = golden.kai_release()
    del kai["values"]["global"]["nvFractions"]
    kai["chart"] = str(chart)
    kai["version"] = "0.0.0"  # with every input known, the provider's Check sets the loaded chart's version
    assert run_resource(release_policy, golden.RELEASE, kai).violations == [
        "global.nvFractions.set of release 'kai-scheduler' (the default in the chart's values.yaml) is true, which "
        "installs the upstream gpu-fractioning subchart from ghcr.io instead of your fork; leave it at false and "
        "install the fork's chart as its own release."
    ], "Helm merges the release values over the chart's own defaults"
    kai["values"]["global"]["nvFractions"] = {"set": False}
    assert run_resource(release_policy, golden.RELEASE, kai).violations == [], "the release turns the default off"


def test_the_same_key_on_a_chart_that_is_not_kai_is_ignored() -> None:
    other = {"name": "redis", "chart": "redis", "values": {"global": {"nvFractions": {"set": True}}}}
    assert run_resource(release_policy, golden.RELEASE, other).violations == [], "only the KAI release is checked"


def test_a_release_named_kai_scheduler_of_another_chart_is_ignored() -> None:
    other: golden.Props = {"name": "kai-scheduler", "chart": "oci://registry.example.com/charts/redis"}
    other["values"] = {"global": {"nvFractions": {"set": True}}}
    assert run_resource(release_policy, golden.RELEASE, other).violations == [], "a release is its chart, not its name"


def test_a_value_unknown_during_preview_is_not_applicable() -> None:
    outcome = run_resource(release_policy, golden.RELEASE, kai_with_subchart(UNKNOWN_BOOLEAN_VALUE))
    assert outcome.violations == [], "an unknown value is no evidence of a violation"
    assert outcome.not_applicable == (
        "Not checked during preview: global.nvFractions.set can't be known yet; `pulumi up` checks them before the "
        "release is created."
    ), "the skip names the unknown value"


FRACTIONING_CRD = "gpufractioningconfigs.gpu-fractioning.kai.scheduler"


def test_a_kai_chart_that_renders_the_gpu_fractioning_subchart_fails() -> None:
    stack = [
        Resource(golden.CHART_V4, "kai", {}),
        Resource(CRD, "kai:configs.kai.scheduler", {"metadata": {"name": "configs.kai.scheduler"}}),
        Resource(
            CRD, "kai:gpufractioning", {"metadata": {"name": "gpufractioningconfigs.gpu-fractioning.kai.scheduler"}}
        ),
    ]
    parents = {"kai:configs.kai.scheduler": "kai", "kai:gpufractioning": "kai"}
    outcome = run_stack(policy, stack, parents=parents)
    assert outcome.violations == [
        "Chart 'kai' renders KAI together with the gpu-fractioning subchart (global.nvFractions.set is on), which "
        "installs upstream gpu-fractioning from ghcr.io instead of your fork; leave it at false and install the "
        "fork's chart as its own release."
    ], "a Chart resource shows its rendered objects, never its values"
    assert outcome.urns == [urn_of(golden.CHART_V4, "kai")], "reported against the Chart"


def test_an_sdk_side_v3_chart_that_renders_the_subchart_fails_too() -> None:
    stack = [
        Resource("kubernetes:helm.sh/v3:Chart", "kai", {}),
        Resource(CRD, "kai-configs", {"metadata": {"name": "configs.kai.scheduler"}}),
        Resource(CRD, "kai-gpufractioning", {"metadata": {"name": FRACTIONING_CRD}}),
    ]
    parents = {"kai-configs": "kai", "kai-gpufractioning": "kai"}
    outcome = run_stack(policy, stack, parents=parents)
    assert len(outcome.violations) == 1 and "Chart 'kai' renders KAI together" in outcome.violations[0], (
        "pulumi_kubernetes.helm.v3.Chart registers what it rendered as its children, as a v4 Chart does"
    )
    assert run_stack(policy, stack[:2], parents={"kai-configs": "kai"}).violations == [], "KAI alone is fine"


def test_the_release_policy_refuses_at_up_what_preview_could_not_know() -> None:
    """During preview the provider drops an unknown value and leaves `version` empty: not applicable.
    During `up` the same release, its value known, is refused before the engine creates it."""
    kai = golden.kai_release()
    kai["values"]["global"]["nvFractions"]["set"] = "false"
    at_preview = {**kai, "values": {**kai["values"], "global": {"gpuSharingMode": "NvFractions"}}, "version": ""}
    outcome = run_resource(release_policy, golden.RELEASE, at_preview)
    assert outcome.violations == [] and outcome.not_applicable, outcome
    at_up = {**kai, "version": "v0.0.0-fork"}
    assert [v for v in run_resource(release_policy, golden.RELEASE, at_up).violations if "nvFractions" in v], (
        "the string 'false' keeps the subchart on"
    )


def test_a_v4_chart_that_rendered_nothing_at_preview_is_named_as_not_checked() -> None:
    """The provider registers a v4 Chart alone while one of its inputs is unknown: the preview says which
    chart went unchecked instead of passing it in silence."""
    chart = Resource("kubernetes:helm.sh/v4:Chart", "kai", {})
    outcome = run_stack(policy, [chart])
    assert outcome.violations == []
    assert outcome.not_applicable is not None and "'kai' rendered nothing" in outcome.not_applicable, outcome
    crd = Resource(CRD, "kai:configs.kai.scheduler", {"metadata": {"name": "configs.kai.scheduler"}})
    rendered = run_stack(policy, [chart, crd], parents={"kai:configs.kai.scheduler": "kai"})
    assert rendered.not_applicable is None, "a chart that rendered its objects is judged"
