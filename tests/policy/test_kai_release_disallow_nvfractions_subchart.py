"""kai-release-disallow-nvfractions-subchart: the upstream subchart never replaces the fork."""

from __future__ import annotations

import pytest
from gpu_policies.kai_release_disallow_nvfractions_subchart import policy
from pulumi_policy.proxy import UNKNOWN_BOOLEAN_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource

SUBCHART = (
    "global.nvFractions.set is true, which installs the upstream gpu-fractioning subchart from ghcr.io "
    "instead of your fork; leave it at its default, false, and install the fork's chart as its own release."
)


def kai_with_subchart(value: object) -> golden.Props:
    kai = golden.kai_release()
    kai["values"]["global"]["nvFractions"]["set"] = value
    return kai


def test_the_fork_release_with_the_subchart_off_passes() -> None:
    assert run_resource(policy, golden.RELEASE, golden.kai_release()).violations == [], "set: false is the default"


def test_the_lab_release_without_the_key_passes() -> None:
    assert run_resource(policy, golden.RELEASE, golden.lab_kai_release()).violations == [], (
        "v0.17.0 has no nvFractions key at all"
    )


@pytest.mark.parametrize("value", [True, "true", "True"])
def test_turning_the_subchart_on_fails(value: object) -> None:
    assert run_resource(policy, golden.RELEASE, kai_with_subchart(value)).violations == [SUBCHART], (
        "a bool or a --set style string both install the upstream subchart"
    )


def test_the_same_key_on_a_chart_that_is_not_kai_is_ignored() -> None:
    other = {"name": "redis", "chart": "redis", "values": {"global": {"nvFractions": {"set": True}}}}
    assert run_resource(policy, golden.RELEASE, other).violations == [], "only the KAI release is checked"


def test_a_value_unknown_during_preview_is_not_applicable() -> None:
    outcome = run_resource(policy, golden.RELEASE, kai_with_subchart(UNKNOWN_BOOLEAN_VALUE))
    assert outcome.violations == [], "an unknown value is no evidence of a violation"
    assert outcome.not_applicable == (
        "Not checked during preview: the boolean value at .values.global.nvFractions.set can't be known during preview."
    ), "the skip names the unknown value"
