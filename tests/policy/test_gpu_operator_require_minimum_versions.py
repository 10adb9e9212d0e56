"""gpu-operator-require-minimum-versions: chart >= v26.7.1 and a pinned driver >= 615."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_policies.facts import CLUSTER_POLICY
from gpu_policies.gpu_operator_require_minimum_versions import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource


def operator(version: object = "v26.7.1", driver: object = None) -> golden.Props:
    props = golden.gpu_operator_release()
    props["version"] = version
    if driver is not None:
        props["values"]["driver"] = driver
    return props


def test_the_golden_operator_passes() -> None:
    assert run_resource(policy, golden.RELEASE, golden.gpu_operator_release()).violations == [], (
        "v26.7.1 with driver 615.71.09 is the guide's install"
    )


@pytest.mark.parametrize("version", ["26.7.1", "v26.7.2", "v26.10.0", "v27.0.0"])
def test_newer_charts_with_or_without_a_v_pass(version: str) -> None:
    assert run_resource(policy, golden.RELEASE, operator(version)).violations == [], f"{version} >= v26.7.1"


@pytest.mark.parametrize("version", ["v26.7.0", "v25.10.1", "26.7.1-rc.1"])
def test_an_older_chart_fails(version: str) -> None:
    assert run_resource(policy, golden.RELEASE, operator(version)).violations == [
        f"version is {version!r}, older than the v26.7.1 that gpu-fractioning needs for driver-enforced "
        "memory caps (or no version number); pin version to v26.7.1 or newer."
    ], "older charts lack the memory-limit hook"


def test_a_version_that_is_not_a_number_fails() -> None:
    assert len(run_resource(policy, golden.RELEASE, operator("stable")).violations) == 1, (
        "an unparseable version cannot be shown to be new enough"
    )


def test_an_unpinned_chart_fails() -> None:
    props = golden.gpu_operator_release()
    del props["version"]
    assert run_resource(policy, golden.RELEASE, props).violations == [
        "version is not set, so the GPU Operator chart floats to whatever the repository serves; pin version "
        "to v26.7.1 or newer."
    ], "an unpinned chart is not reproducible"


@pytest.mark.parametrize("driver", [{"enabled": True}, {}], ids=["enabled", "enabled-by-default"])
def test_an_operator_managed_driver_without_a_pinned_version_fails(driver: dict[str, object]) -> None:
    assert run_resource(policy, golden.RELEASE, operator(driver=driver)).violations == [
        "driver.version is not set, so the GPU Operator installs its default driver, which lacks MPS v3 "
        "namespaces; pin driver.version to release 615 or newer."
    ], "the chart's default driver is older than r615"


@pytest.mark.parametrize("enabled", [False, "false"])
def test_a_host_installed_driver_has_nothing_to_pin(enabled: object) -> None:
    assert run_resource(policy, golden.RELEASE, operator(driver={"enabled": enabled})).violations == [], (
        "with driver.enabled false the nodes carry the driver"
    )


@pytest.mark.parametrize("version", ["615", "615.71.09", "620.1"])
def test_a_pinned_r615_or_newer_driver_passes(version: str) -> None:
    assert run_resource(policy, golden.RELEASE, operator(driver={"version": version})).violations == [], (
        f"{version} has MPS v3 namespaces"
    )


def test_an_older_pinned_driver_fails() -> None:
    assert run_resource(policy, golden.RELEASE, operator(driver={"version": "595.91.07"})).violations == [
        "driver.version is '595.91.07', older than release 615 that MPS v3 namespaces need (or no version "
        "number); pin driver.version to release 615 or newer."
    ], "r595 has no MPS namespaces"


def test_minimum_versions_are_configurable() -> None:
    config = {"minimumChartVersion": "v26.7.0", "minimumDriverVersion": "620"}
    violations = run_resource(policy, golden.RELEASE, operator("v26.7.0"), config).violations
    assert violations == [
        "driver.version is '615.71.09', older than release 620 that MPS v3 namespaces need (or no version "
        "number); pin driver.version to release 620 or newer."
    ], "v26.7.0 is accepted once configured, and a higher driver floor is enforced"


def cluster_policy(version: str | None = "v26.7.1", driver: dict[str, object] | None = None) -> golden.Props:
    """The ClusterPolicy the GPU Operator chart renders, as a v4 Chart hands it to the pack."""
    labels = {"app.kubernetes.io/version": version} if version else {}
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy", "labels": labels},
        "spec": {"driver": {"enabled": True, "version": "615.71.09"} if driver is None else driver},
    }


def test_a_rendered_cluster_policy_of_a_new_operator_passes() -> None:
    assert run_resource(policy, CLUSTER_POLICY, cluster_policy()).violations == [], "v26.7.1 with r615"


def test_a_rendered_cluster_policy_is_checked_for_both_versions() -> None:
    violations = run_resource(policy, CLUSTER_POLICY, cluster_policy("v25.10.1", {"version": "595.91.07"})).violations
    assert violations == [
        "ClusterPolicy label app.kubernetes.io/version is 'v25.10.1', older than the v26.7.1 that gpu-fractioning "
        "needs for driver-enforced memory caps (or no version number); install GPU Operator v26.7.1 or newer.",
        "spec.driver.version is '595.91.07', older than release 615 that MPS v3 namespaces need (or no version "
        "number); pin spec.driver.version to release 615 or newer.",
    ], "a Chart resource hands the pack the ClusterPolicy it renders, never the chart's values"


def test_a_rendered_cluster_policy_with_a_host_driver_checks_only_the_operator() -> None:
    assert run_resource(policy, CLUSTER_POLICY, cluster_policy(driver={"enabled": False})).violations == [], (
        "a host-installed driver is not the operator's to pin"
    )


def test_a_local_chart_is_the_version_its_chart_yaml_names(tmp_path: Path) -> None:
    chart = tmp_path / "vendored-gpu-operator"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: gpu-operator\nversion: v25.10.1\n")
    props = golden.gpu_operator_release()
    props.update(chart=str(chart), version="v26.7.1")
    assert run_resource(policy, golden.RELEASE, props).violations[0].startswith("version is 'v25.10.1'"), (
        "helm installs the directory as it is, whatever version the Release asks for"
    )


def test_releases_of_other_charts_are_ignored() -> None:
    assert run_resource(policy, golden.RELEASE, golden.kai_release()).violations == [], "only gpu-operator"


def test_a_version_unknown_during_preview_is_not_applicable() -> None:
    outcome = run_resource(policy, golden.RELEASE, operator(UNKNOWN_STRING_VALUE))
    assert outcome.violations == [] and outcome.not_applicable, "unknown means not applicable, not a crash"
