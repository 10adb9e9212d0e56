"""Preflight: the guide's "Cluster and Nodes" rows, decided from what the API and the hosts say, before any change."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from pydantic import ValidationError

from components.check_specs import preflight_expectations, preflight_spec
from components.cluster.facts import (
    ADMIN_RESOURCES,
    HOST_CHECKS_AT_ONCE,
    ClusterFacts,
    HostFacts,
    NodeFacts,
    collect_cluster_facts,
    node_facts,
    parse_quantity,
    select_gpu_nodes,
    version_tuple,
)
from components.config.load import parse_config
from components.config.model import CheckId, PreflightConfig
from components.preflight.decisions import Expectations, Finding, blocking, evaluate, parse_container_runtime
from components.preflight.host_access import check_pod_manifest, check_pod_runner, facts_reader, ssh_runner
from components.preflight.host_check import (
    NRI_SOCKET,
    host_check_script,
    parse_driver_version,
    parse_host_report,
    parse_mps_namespace_commands,
    parse_nri_socket_listing,
    parse_nvswitch_listing,
    parse_systemctl_is_active,
)
from components.preflight.run import format_report, read_cluster_facts
from components.stack import cluster_access
from components.vocabulary.fractioning import mpsd_memory_limit_mib, mpsd_memory_needed_mib
from standins.operators.node_daemons import gfd_labels
from tests.unit.fake_cluster import FakeCluster

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HOST = FIXTURES / "proof" / "host"
NODE = Path(__file__).resolve().parents[2] / "standins" / "nodes" / "gpu-node.yaml"
FORK = Expectations(
    profile="fork",
    stack_installs_gpu_operator=False,
    stack_creates_runtime_class=False,
    gpus_per_node=8,
    mpsd_memory_limit_mib=1024,
)
LAB = Expectations(
    profile="lab",
    stack_installs_gpu_operator=False,
    stack_creates_runtime_class=True,
    gpus_per_node=8,
    mpsd_memory_limit_mib=0,
)
DEFAULTS = PreflightConfig()
FORK_ROWS = set(get_args(CheckId)) - {"allocatable-gpus"}


def fixture_node() -> dict[str, Any]:
    """The fixture GPU node as the GPU Operator leaves it: GFD's labels, the device plugin's GPUs."""
    node: dict[str, Any] = yaml.safe_load(NODE.read_text())
    node["metadata"]["labels"] |= {"nvidia.com/gpu.present": "true", **gfd_labels(node, "615.71.09", "single")}
    node["status"]["capacity"]["nvidia.com/gpu"] = node["status"]["allocatable"]["nvidia.com/gpu"] = "8"
    return node


def prepared_host() -> HostFacts:
    return parse_host_report((HOST / "host-report-hgx.txt").read_text())


def prepared_node(**changes: Any) -> NodeFacts:
    return replace(node_facts(fixture_node(), prepared_host()), **changes)


def prepared(*nodes: NodeFacts, **changes: Any) -> ClusterFacts:
    facts = ClusterFacts(
        gpu_nodes=list(nodes) or [prepared_node()],
        runtime_classes={"nvidia": "nvidia"},
        cluster_policy_version="v26.7.1",
        can_create=dict.fromkeys(ADMIN_RESOURCES, True),
    )
    return replace(facts, **changes)


def only(findings: list[Finding], check: str) -> Finding:
    matches = [f for f in findings if f.check == check]
    assert len(matches) == 1, f"expected one {check} finding, got {matches}"
    return matches[0]


def without_label(label: str) -> NodeFacts:
    node = prepared_node()
    return replace(node, labels={k: v for k, v in node.labels.items() if k != label})


# ---------------------------------------------------------------- evaluate


def test_a_prepared_node_passes_every_row_of_the_guides_table() -> None:
    findings = evaluate(prepared(), FORK, DEFAULTS)
    assert {f.check for f in findings} == FORK_ROWS, "every fork row is evaluated"
    assert [f for f in findings if f.outcome != "pass"] == [], "a prepared cluster passes every row"
    assert blocking(findings) == [], "nothing blocks a prepared cluster"


def test_a_node_without_the_gpu_memory_label_fails_naming_the_node_and_the_guides_fix() -> None:
    finding = only(evaluate(prepared(without_label("nvidia.com/gpu.memory")), FORK, DEFAULTS), "gpu-memory-label")
    assert (finding.outcome, finding.target) == ("fail", "node gpu-node-0"), "the node is named"
    assert "GPU Feature Discovery" in finding.fix, "the fix comes from the Troubleshooting table"


def test_a_gpu_memory_label_that_is_not_a_mib_count_fails() -> None:
    node = prepared_node()
    node = replace(node, labels={**node.labels, "nvidia.com/gpu.memory": "40Gi"})
    assert only(evaluate(prepared(node), FORK, DEFAULTS), "gpu-memory-label").outcome == "fail", "the binder reads MiB"


def test_a_node_without_gpu_present_gets_no_daemons_and_fails() -> None:
    finding = only(evaluate(prepared(without_label("nvidia.com/gpu.present")), FORK, DEFAULTS), "gpu-present-label")
    assert finding.outcome == "fail", "the DaemonSets select GPU nodes by this label"


def test_a_missing_runtime_class_fails_unless_this_stack_creates_it() -> None:
    facts = prepared(runtime_classes={})
    finding = only(evaluate(facts, FORK, DEFAULTS), "runtime-class")
    assert (finding.outcome, finding.target) == ("fail", "cluster"), "RuntimeClass nvidia is a cluster row"
    assert "ERROR_LIBRARY_NOT_FOUND" in finding.fix, "the fix explains the reservation pod's failure"
    created = replace(FORK, stack_creates_runtime_class=True)
    assert only(evaluate(facts, created, DEFAULTS), "runtime-class").outcome == "pass", "the stack will create it"


@pytest.mark.parametrize(
    ("runtime", "outcome"),
    [
        ("containerd://1.7.22", "fail"),
        ("containerd://2.0.0", "pass"),
        ("containerd://2.1.4", "pass"),
        ("cri-o://1.31.0", "pass"),
        ("docker://28.0.1", "fail"),
    ],
)
def test_containerd_must_be_2_0_or_newer_or_cri_o(runtime: str, outcome: str) -> None:
    node = prepared_node(container_runtime_version=runtime)
    finding = only(evaluate(prepared(node), FORK, DEFAULTS), "container-runtime")
    assert finding.outcome == outcome, f"{runtime}: fractiond is an NRI plugin ({finding.detail})"


def test_a_node_on_containerd_1_7_names_the_version_and_how_to_fix_it() -> None:
    node = prepared_node(container_runtime_version="containerd://1.7.22")
    finding = only(evaluate(prepared(node), FORK, DEFAULTS), "container-runtime")
    assert "containerd 1.7.22 is older than 2.0" in finding.detail, "the found version is named"
    assert "NRI" in finding.fix, "the fix says why: NRI"


def test_cri_o_leaves_the_nri_socket_to_the_host_check() -> None:
    node = prepared_node(container_runtime_version="cri-o://1.31.0", host=None)
    finding = only(evaluate(prepared(node), FORK, DEFAULTS), "nri-socket")
    assert finding.outcome == "not-checked", "CRI-O's NRI setting is only visible on the host"


def test_an_old_driver_fails_and_so_does_mps_without_namespaces() -> None:
    host = parse_host_report((HOST / "host-report-unprepared.txt").read_text())
    findings = evaluate(prepared(prepared_node(host=host)), FORK, DEFAULTS)
    assert only(findings, "driver-version").outcome == "fail", "595.91.07 is the chart default, not r615"
    assert "595.91.07" in only(findings, "driver-version").detail, "the found driver is named"
    assert only(findings, "mps-namespace").outcome == "fail", "a pre-r615 driver has no namespace subcommand"


def test_a_node_without_the_nri_socket_fails() -> None:
    host = replace(prepared_host(), nri_socket_present=False)
    finding = only(evaluate(prepared(prepared_node(host=host)), FORK, DEFAULTS), "nri-socket")
    assert finding.outcome == "fail", "without NRI nothing is injected into containers"


def test_an_nvswitch_node_without_fabricmanager_fails_but_a_node_without_nvswitch_needs_none() -> None:
    stopped = replace(prepared_host(), fabricmanager_active=False)
    assert only(evaluate(prepared(prepared_node(host=stopped)), FORK, DEFAULTS), "fabricmanager").outcome == "fail", (
        "an HGX node needs Fabric Manager"
    )
    pcie = replace(stopped, nvswitch=False)
    assert only(evaluate(prepared(prepared_node(host=pcie)), FORK, DEFAULTS), "fabricmanager").outcome == "pass", (
        "a node without NVSwitches does not"
    )


def test_fabricmanager_down_is_excused_only_until_the_gpu_operator_this_stack_installs_is_ready() -> None:
    stopped = prepared_node(host=replace(prepared_host(), fabricmanager_active=False))
    installs = replace(FORK, stack_installs_gpu_operator=True, stack_installs_driver=True)
    before = prepared(stopped, cluster_policy_version=None)
    assert only(evaluate(before, installs, DEFAULTS), "fabricmanager").outcome == "pass", "it comes with the driver"
    loading = prepared(stopped, cluster_policy_state="notReady")
    assert only(evaluate(loading, installs, DEFAULTS), "fabricmanager").outcome == "pass", (
        "an up run again after one that stopped at the GPU Operator's gate: the driver still loads"
    )
    after_install = prepared(stopped, cluster_policy_state="ready")
    assert only(evaluate(after_install, installs, DEFAULTS), "fabricmanager").outcome == "fail", (
        "the operator is ready, so its driver's Fabric Manager should run: down is a fault"
    )


def test_each_missing_can_i_right_is_one_failing_line() -> None:
    rights = {**dict.fromkeys(ADMIN_RESOURCES, True), "clusterroles": False, "priorityclasses": False}
    failing = blocking(evaluate(prepared(can_create=rights), FORK, DEFAULTS))
    assert [f.detail.split(" (")[0] for f in failing] == ["cannot create clusterroles", "cannot create priorityclasses"]
    assert all(f.target == "cluster" and "cluster-admin" in f.fix for f in failing), "the fix asks for cluster-admin"


def test_gpu_operator_v26_7_0_fails_unless_the_minimum_is_lowered_or_the_stack_installs_it() -> None:
    facts = prepared(cluster_policy_version="v26.7.0")
    finding = only(evaluate(facts, FORK, DEFAULTS), "gpu-operator-version")
    assert finding.outcome == "fail", "the chart refuses to start below v26.7.1"
    assert "minimumGpuOperatorVersion: v26.7.0" in finding.fix, "the fix names the fallback and its cost"
    lowered = replace(FORK, minimum_gpu_operator_version="v26.7.0")
    assert only(evaluate(facts, lowered, DEFAULTS), "gpu-operator-version").outcome == "pass", "v26.7.0 allowed"
    installs = replace(FORK, stack_installs_gpu_operator=True)
    assert only(evaluate(facts, installs, DEFAULTS), "gpu-operator-version").outcome == "pass", "this stack installs"


def test_a_cluster_without_a_gpu_operator_fails_when_the_stack_does_not_install_one() -> None:
    finding = only(evaluate(prepared(cluster_policy_version=None), FORK, DEFAULTS), "gpu-operator-version")
    assert finding.outcome == "fail", "no ClusterPolicy, no GPU Operator"


def test_more_than_16_gpus_with_the_1gi_mpsd_limit_fails() -> None:
    dense = prepared_node(allocatable={"nvidia.com/gpu": "24"})
    finding = only(evaluate(prepared(dense), FORK, DEFAULTS), "mpsd-memory")
    assert finding.outcome == "fail", "1Gi covers 16 GPUs at about 50 MiB each"
    assert "24 GPUs" in finding.detail, "the node's GPU count is named"
    sized = replace(FORK, mpsd_memory_limit_mib=mpsd_memory_limit_mib(24))
    assert only(evaluate(prepared(dense), sized, DEFAULTS), "mpsd-memory").outcome == "pass", "sized for 24 GPUs"


def test_the_mpsd_budget_matches_the_limit_the_stack_sets() -> None:
    for gpus in (1, 8, 16, 17, 32, 64):
        assert mpsd_memory_limit_mib(gpus) >= mpsd_memory_needed_mib(gpus), f"the stack's limit covers {gpus} GPUs"
    assert mpsd_memory_needed_mib(16) == 1024, "16 GPUs fit the chart's default 1Gi"


def test_without_node_access_the_host_rows_are_not_checked_never_passed() -> None:
    findings = evaluate(prepared(prepared_node(host=None)), FORK, DEFAULTS)
    for check in ("driver-version", "mps-namespace", "fabricmanager", "nri-socket"):
        finding = only(findings, check)
        assert finding.outcome == "not-checked", f"{check} needs the host"
        assert "no node access is configured" in finding.detail, "the reason is given"
        assert "preflight.hostAccess" in finding.fix, "the fix says how to check it"
    assert blocking(findings) == [], "not-checked rows are reported, not blocking"


def test_a_failed_node_access_is_reported_with_its_error() -> None:
    node = prepared_node(host=HostFacts(error="node access failed: connection refused"))
    finding = only(evaluate(prepared(node), FORK, DEFAULTS), "driver-version")
    assert finding.outcome == "not-checked", "an unreachable host is not a pass"
    assert "connection refused" in finding.detail, "the access error is shown"


def test_the_driver_rows_pass_when_this_stack_installs_the_r615_driver() -> None:
    installs = replace(
        FORK, stack_installs_gpu_operator=True, stack_creates_runtime_class=True, stack_installs_driver=True
    )
    findings = evaluate(prepared(prepared_node(host=None)), installs, DEFAULTS)
    assert only(findings, "driver-version").outcome == "pass", "the GPU Operator will pin r615"
    assert only(findings, "mps-namespace").outcome == "pass", "MPS v3 comes with that driver"
    assert only(findings, "nri-socket").outcome == "not-checked", "NRI still needs the host"


def test_a_preinstalled_old_driver_fails_even_when_the_stack_installs_one() -> None:
    host = replace(prepared_host(), driver_version="595.91.07")
    installs = replace(FORK, stack_installs_driver=True)
    finding = only(evaluate(prepared(prepared_node(host=host)), installs, DEFAULTS), "driver-version")
    assert (finding.outcome, "preinstalled" in finding.detail) == ("fail", True), "a host driver is in the way"


def test_missing_labels_before_the_stack_installed_gpu_operator_is_ready_are_not_checked_rather_than_failed() -> None:
    installs = replace(FORK, stack_installs_gpu_operator=True, stack_creates_runtime_class=True)
    bare = replace(prepared_node(), labels={"kubernetes.io/hostname": "gpu-node-0"})
    fresh = prepared(bare, cluster_policy_version=None)
    findings = evaluate(fresh, installs, DEFAULTS)
    assert only(findings, "gpu-memory-label").outcome == "not-checked", "GFD sets it after this stack's install"
    loading = prepared(bare, cluster_policy_version="v26.7.1", cluster_policy_state="notReady")
    finding = only(evaluate(loading, installs, DEFAULTS), "gpu-memory-label")
    assert (finding.outcome, "ClusterPolicy is notReady" in finding.detail) == ("not-checked", True), (
        "an up run again after one that stopped at the GPU Operator's gate: the gate waits for the labels"
    )
    running = prepared(bare, cluster_policy_version="v26.7.1", cluster_policy_state="ready")
    assert only(evaluate(running, installs, DEFAULTS), "gpu-memory-label").outcome == "fail", (
        "once the operator is ready, a missing label is a failure"
    )
    cluster_own = replace(installs, stack_installs_gpu_operator=False)
    assert only(evaluate(loading, cluster_own, DEFAULTS), "gpu-memory-label").outcome == "fail", (
        "a GPU Operator this stack does not install is the cluster's: no gate of ours waits for it"
    )


def test_warn_only_turns_a_failing_row_into_a_warning_that_does_not_block() -> None:
    facts = prepared(runtime_classes={})
    findings = evaluate(facts, FORK, PreflightConfig.model_validate({"warnOnly": ["runtime-class"]}))
    assert only(findings, "runtime-class").outcome == "warn", "configured as a warning"
    assert blocking(findings) == [], "a warning does not stop the preview"


def test_the_lab_checks_only_its_rows() -> None:
    findings = evaluate(prepared(prepared_node(host=None)), LAB, DEFAULTS)
    assert {f.check for f in findings} == {
        "cluster-admin",
        "runtime-class",
        "gpu-present-label",
        "gpu-memory-label",
        "allocatable-gpus",
    }, "fork-only rows are skipped in the lab, not failed"
    assert blocking(findings) == [], "the fixture node is the lab's node with 8 GPUs"


def test_the_lab_fails_when_the_node_does_not_advertise_the_profiles_gpus() -> None:
    node = prepared_node(allocatable={"nvidia.com/gpu": "80"})
    finding = only(evaluate(prepared(node), LAB, DEFAULTS), "allocatable-gpus")
    assert finding.outcome == "fail", "80 would mean the device plugin splits GPUs itself"
    assert "device-plugin-mock.yaml" in finding.fix, "the fix names nvml-mock's manifest"


def test_the_lab_leaves_labels_and_gpus_to_the_stack_that_sets_them() -> None:
    bare = replace(prepared_node(), labels={}, allocatable={})
    findings = evaluate(prepared(bare), replace(LAB, stack_labels_gpu_nodes=True), DEFAULTS)
    outcomes = {f.check: f.outcome for f in findings if f.target.startswith("node")}
    assert outcomes == dict.fromkeys(("gpu-present-label", "gpu-memory-label", "allocatable-gpus"), "not-checked")


def test_the_lab_waits_for_its_own_device_plugin_when_it_is_not_running() -> None:
    stopped = prepared_node(allocatable={"nvidia.com/gpu": "0"})
    finding = only(evaluate(prepared(stopped), replace(LAB, stack_labels_gpu_nodes=True), DEFAULTS), "allocatable-gpus")
    assert finding.outcome == "not-checked", "the stack's up restarts the plugin and then waits for the GPUs"
    assert only(evaluate(prepared(stopped), LAB, DEFAULTS), "allocatable-gpus").outcome == "fail"


def test_the_report_has_one_line_per_row_that_did_not_pass_with_what_where_and_how_to_fix() -> None:
    node = replace(without_label("nvidia.com/gpu.memory"), container_runtime_version="containerd://1.7.22", host=None)
    report = format_report(evaluate(prepared(node, runtime_classes={}), FORK, DEFAULTS))
    lines = report.splitlines()
    assert lines[0].startswith("Preflight: 3 failing, 0 warning, 4 not checked"), lines[0]
    failing = [line for line in lines if line.startswith("  FAIL")]
    assert [line.split(":")[0] for line in failing] == [
        "  FAIL runtime-class on cluster",
        "  FAIL gpu-memory-label on node gpu-node-0",
        "  FAIL container-runtime on node gpu-node-0",
    ], "each failing prerequisite is one line naming what and where"
    assert all("; fix: " in line for line in failing), "each line says how to fix it"


# ---------------------------------------------------------------- configuration and wiring


def test_preflight_config_uses_camel_case_and_refuses_unknown_keys_and_check_ids() -> None:
    config = PreflightConfig.model_validate({"enabled": False, "warnOnly": ["fabricmanager"]})
    assert (config.enabled, config.warn_only) == (False, ["fabricmanager"]), "camelCase like the rest of config"
    with pytest.raises(ValidationError):
        PreflightConfig.model_validate({"warnOnly": ["fabric-manager"]})
    with pytest.raises(ValidationError):
        PreflightConfig.model_validate({"warnonly": []})


def test_expectations_follow_the_stack_configuration() -> None:
    fork = preflight_expectations(parse_config({"registry": '{"server": "registry.example.com/kai"}'}))
    assert (fork.stack_installs_gpu_operator, fork.stack_creates_runtime_class, fork.stack_installs_driver) == (
        True,
        True,
        True,
    ), "the default fork stack installs the GPU Operator and its r615 driver"
    assert (fork.gpus_per_node, fork.mpsd_memory_limit_mib) == (8, 1024), "8 GPUs per node, 1Gi mpsd limit"
    byo = preflight_expectations(
        parse_config({"registry": '{"server": "registry.example.com/kai"}', "gpuOperator": '{"enabled": false}'})
    )
    assert (byo.stack_installs_gpu_operator, byo.stack_creates_runtime_class) == (False, False), "bring your own"
    lab = preflight_expectations(parse_config({"profile": "lab"}))
    assert (lab.profile, lab.gpus_per_node, lab.stack_creates_runtime_class) == ("lab", 8, True), "the lab's shim"


# ---------------------------------------------------------------- parsers


def test_node_facts_read_the_api_shape_of_a_node() -> None:
    node = node_facts(fixture_node())
    assert node.name == "gpu-node-0", "metadata.name"
    assert node.container_runtime_version == "containerd://2.1.4", "status.nodeInfo.containerRuntimeVersion"
    assert (node.labels["nvidia.com/gpu.memory"], node.gpu_count) == ("40960", 8), "labels and allocatable"


def test_without_any_gpu_present_label_every_node_is_checked_so_the_label_gets_reported() -> None:
    plain = [NodeFacts("cpu-0"), NodeFacts("cpu-1")]
    assert [n.name for n in select_gpu_nodes(plain)] == ["cpu-0", "cpu-1"], "fall back to all nodes"
    labelled = [*plain, NodeFacts("gpu-0", labels={"nvidia.com/gpu.present": "true"})]
    assert [n.name for n in select_gpu_nodes(labelled)] == ["gpu-0"], "only labelled nodes otherwise"


def test_a_gpu_node_without_the_label_is_still_checked_when_others_have_it() -> None:
    plain = prepared_node(name="cpu-0", labels={}, allocatable={})
    pci = {k: v for k, v in prepared_node().labels.items() if k != "nvidia.com/gpu.present"}
    nodes = [
        plain,
        prepared_node(name="gpu-labelled"),
        prepared_node(name="gpu-by-pci", labels={**pci, "feature.node.kubernetes.io/pci-10de.present": "true"}),
    ]
    selected = select_gpu_nodes(nodes)
    assert [n.name for n in selected] == ["gpu-labelled", "gpu-by-pci"], "the CPU node is not a GPU node"
    failing = {(f.check, f.target) for f in blocking(evaluate(prepared(*selected), FORK, DEFAULTS))}
    assert failing == {("gpu-present-label", "node gpu-by-pci")}, "the DaemonSets would skip it without a word"


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("containerd://2.1.4", ("containerd", (2, 1, 4))),
        ("containerd://1.7.22", ("containerd", (1, 7, 22))),
        ("containerd://v2.0.0-rc.3", ("containerd", (2, 0, 0))),
        ("cri-o://1.31.0", ("cri-o", (1, 31, 0))),
        ("containerd://", ("containerd", None)),
    ],
)
def test_container_runtime_versions_are_parsed_from_node_info(reported: str, expected: tuple[Any, ...]) -> None:
    assert parse_container_runtime(reported) == expected, reported


def test_the_driver_version_is_read_from_nvidia_smi_and_the_lowest_gpu_wins() -> None:
    assert parse_driver_version((HOST / "nvidia-smi-driver-r615.txt").read_text()) == "615.71.09", "eight GPUs"
    assert parse_driver_version("615.71.09\n595.91.07\n") == "595.91.07", "a mixed node is as old as its oldest"
    assert parse_driver_version("nvidia-smi: command not found") is None, "no driver tool, no version"


def test_mps_namespace_help_lists_the_five_verbs_only_on_r615() -> None:
    assert parse_mps_namespace_commands((HOST / "mps-namespace-help-r615.txt").read_text()) == frozenset(
        {"create", "delete", "list", "set", "get"}
    ), "r615 has the namespace module"
    assert parse_mps_namespace_commands((HOST / "mps-namespace-help-r595.txt").read_text()) == frozenset(), (
        "an older control daemon answers without it"
    )
    assert parse_mps_namespace_commands("nvidia-cuda-mps-control: command not found") is None, "no binary to ask"


@pytest.mark.parametrize(
    ("output", "expected"),
    [("active\n", True), ("inactive\n", False), ("failed\n", False), ("Failed to connect to bus\n", None), ("", None)],
)
def test_systemctl_is_active_output(output: str, expected: bool | None) -> None:
    assert parse_systemctl_is_active(output) is expected, repr(output)


def test_the_nri_socket_listing_must_show_a_socket() -> None:
    assert parse_nri_socket_listing("srw-rw---- 1 root root 0 Nov 28 09:14 /var/run/nri/nri.sock\n") is True
    assert parse_nri_socket_listing("-rw-r--r-- 1 root root 0 Nov 28 09:14 /var/run/nri/nri.sock\n") is False, (
        "a plain file is not a socket"
    )
    missing = "ls: cannot access '/var/run/nri/nri.sock': No such file or directory\n"
    assert parse_nri_socket_listing(missing) is False, "missing socket"
    microk8s = "srw-rw---- 1 root root 0 Nov 28 09:14 /var/snap/microk8s/common/run/nri.sock\n"
    assert parse_nri_socket_listing(microk8s, "/var/snap/microk8s/common/run/nri.sock") is True, "socket path follows"


def test_nvswitch_devices_mark_an_hgx_node() -> None:
    assert parse_nvswitch_listing("/dev/nvidia-nvswitch0\n/dev/nvidia-nvswitch1\n") is True
    no_switch = "ls: cannot access '/dev/nvidia-nvswitch*': No such file or directory\n"
    assert parse_nvswitch_listing(no_switch) is False, "a PCIe node has none"


def test_a_full_host_report_fills_every_host_fact() -> None:
    assert prepared_host() == HostFacts(
        driver_version="615.71.09",
        mps_namespace_commands=frozenset({"create", "delete", "list", "set", "get"}),
        fabricmanager_active=True,
        nri_socket_present=True,
        nvswitch=True,
    ), "the HGX fixture is a prepared node"


def test_a_real_h200_host_with_driver_580_fails_the_driver_and_mps_rows() -> None:
    """The report a real H200 host (driver 580, a container without systemd or NRI) gave this script."""
    host = parse_host_report((HOST / "host-report-h200-driver580.txt").read_text())
    assert host.error is None, "the script ran to its end"
    assert host.driver_version == "580.159.04"
    assert host.mps_namespace_commands == frozenset(), "'Unrecognized option' and the legacy usage: no namespaces"
    assert host.fabricmanager_active is None, "no systemctl and pgrep's complaint: the access could not tell"
    assert (host.nri_socket_present, host.nvswitch) == (False, False)
    rows = {f.check: f for f in evaluate(prepared(prepared_node(host=host)), FORK, DEFAULTS)}
    assert rows["driver-version"].outcome == "fail" and "580.159.04" in rows["driver-version"].detail
    assert rows["mps-namespace"].outcome == "fail"
    assert rows["nri-socket"].outcome == "fail"
    assert rows["fabricmanager"].outcome == "pass", "no NVSwitch: Fabric Manager is not needed"


def test_fabric_manager_is_found_by_its_command_line_not_its_truncated_name() -> None:
    script = host_check_script()
    assert "pgrep -x" not in script, "pgrep -x compares 15 characters and can never match nv-fabricmanager"
    (line,) = [line for line in script.splitlines() if line.startswith("pgrep ")]
    pattern = line.split("'")[1]
    assert re.match(pattern, "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg")
    assert re.match(pattern, "nv-fabricmanager -c fabricmanager.cfg")
    assert not re.match(pattern, f"sh -c {script}"), "the shell running this very script is not Fabric Manager"


def test_a_host_without_tools_reports_unknown_rather_than_passing() -> None:
    host = parse_host_report((HOST / "host-report-no-driver.txt").read_text())
    assert (host.driver_version, host.mps_namespace_commands) == (None, None), "no driver tools: unknown"
    assert (host.nri_socket_present, host.nvswitch) == (True, False), "what could be read is kept"


def test_a_host_report_cut_short_is_an_error() -> None:
    host = parse_host_report("### driver\n615.71.09\n")
    assert host.error is not None and host.driver_version is None, "a partial run is not trusted"


def test_quantities_and_versions() -> None:
    assert (parse_quantity("1Gi"), parse_quantity("1424Mi")) == (2**30, 1424 * 2**20), "memory quantities"
    assert parse_quantity("1510m") == 1.51, "fractional GPU quantities"
    assert version_tuple("v26.7.1") > version_tuple("v26.7.0"), "GPU Operator versions compare numerically"
    assert version_tuple("615.71.09") >= (615,), "driver branches compare by their first number"


# ---------------------------------------------------------------- node access and the API


def test_the_ssh_runner_feeds_the_check_script_to_a_remote_shell(tmp_path: Path) -> None:
    socket = tmp_path / "nri.sock"
    # A stand-in for ssh that drops `--` and the target and runs the remote command locally.
    fake_ssh = ["sh", "-c", 'test "$1" = -- && shift 2 && exec "$@"', "ssh"]
    run = ssh_runner(host_check_script(str(socket)), fake_ssh, {"gpu-node-0": "10.0.0.5"}, user="ubuntu")
    output = run("gpu-node-0")
    host = parse_host_report(output, str(socket))
    assert host.error is None, f"the script ran to its end: {output}"
    assert host.nri_socket_present is False, "no socket at the configured path"


def test_the_check_pod_runs_the_script_in_the_hosts_root_on_that_node() -> None:
    manifest = check_pod_manifest("gpu-node-0", "kgf-preflight-1", "busybox:1.37", host_check_script())
    spec = manifest["spec"]
    assert (spec["nodeName"], spec["hostPID"], spec["restartPolicy"]) == ("gpu-node-0", True, "Never")
    assert spec["containers"][0]["command"][:4] == ["chroot", "/host", "sh", "-c"], "the host's tools and systemd"
    assert spec["volumes"] == [{"name": "host", "hostPath": {"path": "/"}}], "the host root is mounted"


CHECK_POD_SELECTOR = "app.kubernetes.io/name=kai-gpu-fractions-preflight"


@dataclass
class CheckPodsRun(FakeCluster):
    """Each check pod finishes `run_seconds` after it is created (never, without `finishes`) and logs
    the node it ran on; `most_at_once` counts the most check pods there at once."""

    run_seconds: float = 0.0
    finishes: bool = True
    most_at_once: int = 0

    def create_pod(self, namespace: str, manifest: dict[str, Any]) -> None:
        name = manifest["metadata"]["name"]
        with self.lock:
            super().create_pod(namespace, manifest)
            self.logs[(namespace, name)] = f"ran on {manifest['spec']['nodeName']}"
            self.most_at_once = max(self.most_at_once, len(self.listed("pods", namespace)))
        if self.finishes:
            finished = threading.Timer(self.run_seconds, self.set_phase, (namespace, name, "Succeeded"))
            finished.daemon = True
            finished.start()


def test_check_pods_on_64_nodes_are_waited_for_with_one_list_call_for_all() -> None:
    cluster = CheckPodsRun(run_seconds=1.0)
    run = check_pod_runner(cluster, "true", "kube-system", "busybox:1.37", timeout_seconds=30)
    nodes = [f"gpu-node-{i}" for i in range(64)]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=HOST_CHECKS_AT_ONCE) as pool:
        outputs = list(pool.map(run, nodes))
    elapsed = time.monotonic() - start
    assert outputs == [f"ran on {node}" for node in nodes], "each node's own pod is read"
    assert cluster.listed("pods") == [], "every check pod is deleted"
    assert cluster.most_at_once == 64, f"64 pods that each run 1 s ran side by side, not {cluster.most_at_once}"
    list_calls = len(cluster.pod_listings)
    assert list_calls <= elapsed / 0.5 + 2, f"{list_calls} list calls in {elapsed:.1f}s"
    assert {selector for _, selector, _ in cluster.pod_listings} == {CHECK_POD_SELECTOR}


def test_a_check_pod_that_never_finishes_times_out_naming_its_node_and_is_deleted() -> None:
    cluster = CheckPodsRun(run_seconds=0, finishes=False)
    run = check_pod_runner(cluster, "true", "kube-system", "busybox:1.37", timeout_seconds=1)
    with pytest.raises(TimeoutError, match="on gpu-node-7 did not finish in 1s"):
        run("gpu-node-7")
    assert cluster.listed("pods") == []
    assert {selector for _, selector, _ in cluster.pod_listings} == {CHECK_POD_SELECTOR}


class PreparedCluster(FakeCluster):
    """The nodes given, RuntimeClass nvidia and a GPU Operator at v26.7.1; it asks for the
    ClusterPolicy at the version the operator serves."""

    def list_cluster_objects(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        assert (group, version, plural) == ("nvidia.com", "v1", "clusterpolicies")
        return super().list_cluster_objects(group, version, plural)


def prepared_cluster(nodes: list[dict[str, Any]], denied: frozenset[str] = frozenset()) -> PreparedCluster:
    cluster = PreparedCluster(denied={(ADMIN_RESOURCES[resource], resource) for resource in denied})
    cluster.put("nodes", *nodes)
    cluster.put("runtimeclasses.node.k8s.io", {"metadata": {"name": "nvidia"}, "handler": "nvidia"})
    policy = {
        "metadata": {"name": "cluster-policy", "labels": {"app.kubernetes.io/version": "v26.7.1"}},
        "status": {"state": "notReady"},
    }
    cluster.put("clusterpolicies.nvidia.com", policy)
    return cluster


def test_collected_facts_include_host_facts_when_a_runner_is_given() -> None:
    reader = prepared_cluster([fixture_node()], denied=frozenset({"namespaces"}))
    report = (HOST / "host-report-hgx.txt").read_text()
    facts = collect_cluster_facts(reader, facts_reader(lambda node: report, NRI_SOCKET))
    assert facts.gpu_nodes[0].host == prepared_host(), "the runner's report becomes HostFacts"
    assert facts.can_create["namespaces"] is False, "each right is asked separately"
    assert (facts.cluster_policy_version, facts.runtime_classes) == ("v26.7.1", {"nvidia": "nvidia"})
    assert facts.cluster_policy_state == "notReady", "the state the operator wrote in the ClusterPolicy's status"


def test_a_failing_runner_becomes_an_error_not_an_exception() -> None:
    def unreachable(node: str) -> str:
        raise ConnectionError(f"{node}: no route to host")

    facts = collect_cluster_facts(prepared_cluster([fixture_node()]), facts_reader(unreachable, NRI_SOCKET))
    host = facts.gpu_nodes[0].host
    assert host is not None and "no route to host" in (host.error or ""), "the preview still reports every row"


def test_hosts_are_checked_side_by_side_a_bounded_number_at_a_time_and_keep_their_order() -> None:
    running, most, lock = 0, 0, threading.Lock()
    released = threading.Event()

    def slow(node: str) -> HostFacts:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            if running == HOST_CHECKS_AT_ONCE:
                released.set()
        released.wait(timeout=5)  # every worker waits until the pool is full, then all go
        with lock:
            running -= 1
        return HostFacts(driver_version=node)

    count = HOST_CHECKS_AT_ONCE + 24
    nodes = [fixture_node() for _ in range(count)]
    for i, node in enumerate(nodes):
        node["metadata"]["name"] = f"gpu-node-{i}"
    facts = collect_cluster_facts(prepared_cluster(nodes), slow)
    assert most == HOST_CHECKS_AT_ONCE, f"{most} host checks ran at once"
    assert [(n.name, n.host and n.host.driver_version) for n in facts.gpu_nodes] == [
        (f"gpu-node-{i}", f"gpu-node-{i}") for i in range(count)
    ]


class FakeApiServer(BaseHTTPRequestHandler):
    """Just enough of the Kubernetes API for read_cluster_facts."""

    nodes: list[dict[str, Any]] = []
    denied: frozenset[str] = frozenset({"priorityclasses"})

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/api/v1/nodes":
            nodes = self.nodes if "gpu.present" not in query else []
            self._reply(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": nodes})
        elif path == "/apis/node.k8s.io/v1/runtimeclasses":
            self._reply(200, {"kind": "RuntimeClassList", "apiVersion": "node.k8s.io/v1", "metadata": {}, "items": []})
        elif path == "/apis/nvidia.com/v1/clusterpolicies":
            self._reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404})
        else:
            self._reply(404, {"kind": "Status", "code": 404})

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        resource = review["spec"]["resourceAttributes"]["resource"]
        review["status"] = {"allowed": resource not in self.denied}
        self._reply(201, review)


@pytest.fixture
def api_server() -> Iterator[str]:
    node = fixture_node()
    node["metadata"]["labels"].pop("nvidia.com/gpu.present")
    node["metadata"]["labels"].pop("nvidia.com/gpu.memory")
    FakeApiServer.nodes = [node]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApiServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def kubeconfig_for(server: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": server}}],
            "users": [{"name": "admin", "user": {"token": "t"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "admin"}}],
            "current-context": "fake",
        }
    )


def test_read_cluster_facts_asks_the_api_and_preflight_names_each_gap(api_server: str, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig_for(api_server))
    for kubeconfig in (str(path), kubeconfig_for(api_server)):
        raw = {"registry": '{"server": "r.example.com/x"}', "cluster": {"kubeconfig": kubeconfig, "context": "fake"}}
        config = parse_config(raw, secret_keys=frozenset({"cluster"}))
        spec = preflight_spec(config)
        assert spec is not None, "preflight is on"
        facts = read_cluster_facts(spec, cluster_access(config))
        assert [n.name for n in facts.gpu_nodes] == ["gpu-node-0"], "no node labelled: every node is checked"
        assert (facts.runtime_classes, facts.cluster_policy_version) == ({}, None), "no RuntimeClass, no operator"
        assert facts.can_create["priorityclasses"] is False, "SelfSubjectAccessReview answers per resource"
    failing = {(f.check, f.target) for f in blocking(evaluate(facts, FORK, DEFAULTS))}
    assert failing == {
        ("cluster-admin", "cluster"),
        ("gpu-operator-version", "cluster"),
        ("runtime-class", "cluster"),
        ("gpu-present-label", "node gpu-node-0"),
        ("gpu-memory-label", "node gpu-node-0"),
    }, "an unprepared cluster fails each missing prerequisite, by name"


def test_an_nri_socket_the_node_access_may_not_read_is_not_checked_rather_than_missing() -> None:
    denied = "ls: cannot access '/var/run/nri/nri.sock': Permission denied"
    assert parse_nri_socket_listing(denied) is None, "a non-root SSH user cannot tell; it must not fail the row"


def test_no_host_command_reads_the_script_it_arrives_in() -> None:
    script = host_check_script()
    commands = [line for line in script.splitlines() if line and not line.startswith(("echo", " ", "in_driver", "}"))]
    commands += [line for line in script.splitlines() if line.startswith("in_driver_root ")]
    assert commands and all("</dev/null" in line for line in commands), commands
