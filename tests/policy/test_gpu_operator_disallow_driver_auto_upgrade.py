"""gpu-operator-disallow-driver-auto-upgrade: a GPU Operator that manages the driver never rolls it itself."""

from __future__ import annotations

from typing import Any

import pytest
from gpu_policies.facts import CLUSTER_POLICY
from gpu_policies.gpu_operator_disallow_driver_auto_upgrade import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource

WHY = (
    "the GPU Operator then rolls every driver change itself and does not drain fractional pods: KAI's "
    "reservation pods hold the first node in upgrade-failed, or, with gpuPodDeletion.force, the driver "
    "restarts under running fractional pods and its unload fails; set it to false (unquoted) and roll drivers "
    "node by node, as `pulumi up` of this project does."
)


def release(driver: dict[str, Any]) -> golden.Props:
    props = golden.gpu_operator_release()
    props["values"]["driver"] = driver
    return props


def test_the_programs_own_release_passes() -> None:
    assert run_resource(policy, golden.RELEASE, golden.gpu_operator_release()).violations == [], (
        "the program installs the GPU Operator with autoUpgrade off and rolls drivers itself"
    )


def test_the_chart_default_is_on_and_fails() -> None:
    found = run_resource(policy, golden.RELEASE, release({"enabled": True, "version": "615.71.09"})).violations
    assert found == [f"driver.upgradePolicy.autoUpgrade is not set, and the chart's default is true: {WHY}"]


@pytest.mark.parametrize("value", [True, "true", "false", "False"])
def test_anything_but_the_boolean_false_fails(value: object) -> None:
    driver = {"enabled": True, "version": "615.71.09", "upgradePolicy": {"autoUpgrade": value}}
    found = run_resource(policy, golden.RELEASE, release(driver)).violations
    assert found == [f"driver.upgradePolicy.autoUpgrade is {value!r}: {WHY}"], "a string is not a boolean"


def test_a_host_installed_driver_has_nothing_to_upgrade() -> None:
    assert run_resource(policy, golden.RELEASE, release({"enabled": False})).violations == []


def test_a_value_unknown_at_preview_is_checked_at_up() -> None:
    driver = {"enabled": True, "version": "615.71.09", "upgradePolicy": {"autoUpgrade": UNKNOWN_STRING_VALUE}}
    outcome = run_resource(policy, golden.RELEASE, release(driver))
    assert outcome.violations == [] and outcome.not_applicable is not None
    assert "before the release is created" in outcome.not_applicable


def test_a_rendered_cluster_policy_is_judged_by_its_spec() -> None:
    def cluster_policy(driver: dict[str, Any]) -> golden.Props:
        return {"metadata": {"name": "cluster-policy"}, "spec": {"driver": driver}}

    on = cluster_policy({"enabled": True, "upgradePolicy": {"autoUpgrade": True}})
    assert run_resource(policy, CLUSTER_POLICY, on).violations == [
        f"spec.driver.upgradePolicy.autoUpgrade is True: {WHY}"
    ]
    off = cluster_policy({"enabled": True, "upgradePolicy": {"autoUpgrade": False}})
    assert run_resource(policy, CLUSTER_POLICY, off).violations == []
    absent = cluster_policy({"enabled": True})
    assert run_resource(policy, CLUSTER_POLICY, absent).violations == [], (
        "the operator reads an absent upgradePolicy as off (upgrade_controller.go)"
    )
