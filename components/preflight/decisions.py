"""Preflight's decisions: every row of the build guide's "Cluster and Nodes" table, decided from facts.

`evaluate` is pure: it turns ClusterFacts and what this stack will provide (Expectations) into one
Finding per row and target. Rows that need the host are "not-checked" without host facts, never
passed silently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from components.cluster.facts import ADMIN_RESOURCES, ClusterFacts, NodeFacts, version_tuple
from components.config.model import CheckId, PreflightConfig
from components.preflight.fixes import FIXES, HOST_COMMANDS, LAB_RUNTIME_CLASS_FIX
from components.preflight.host_check import MPS_NAMESPACE_COMMANDS
from components.vocabulary.fractioning import NRI_SOCKET, mpsd_memory_needed_mib
from components.vocabulary.nvidia import (
    GPU_MEMORY_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    MINIMUM_DRIVER_BRANCH,
    RUNTIME_CLASS,
)

Outcome = Literal["pass", "fail", "warn", "not-checked"]

MINIMUM_DRIVER = (MINIMUM_DRIVER_BRANCH,)
MINIMUM_CONTAINERD = (2, 0)


@dataclass(frozen=True)
class Finding:
    check: CheckId
    """The prerequisites table's row."""
    target: str
    """Where it was checked: the cluster, or a node."""
    outcome: Outcome
    """How the row came out; a failing row named in `preflight.warnOnly` is a warning."""
    detail: str
    """What was seen."""
    fix: str = ""
    """What to do about it."""


@dataclass(frozen=True)
class Expectations:
    """What this stack itself provides, so preflight does not demand it of the cluster beforehand."""

    profile: Literal["fork", "lab"]
    stack_installs_gpu_operator: bool
    stack_creates_runtime_class: bool
    gpus_per_node: int
    mpsd_memory_limit_mib: int
    stack_installs_driver: bool = False
    stack_labels_gpu_nodes: bool = False
    minimum_gpu_operator_version: str = "v26.7.1"


@dataclass(frozen=True)
class PreflightSpec:
    """What preflight expects of the cluster, how it weighs each row, and how it reaches the GPU
    hosts (components/stack.py builds it from the config)."""

    expectations: Expectations
    settings: PreflightConfig
    nri_socket_path: str = NRI_SOCKET


def evaluate(facts: ClusterFacts, expectations: Expectations, config: PreflightConfig) -> list[Finding]:
    """Every applicable row, per GPU node where it applies; warnOnly turns a failing row into a warning."""
    findings = [*_cluster_admin(facts)]
    if expectations.profile == "fork":
        findings.append(_gpu_operator_version(facts, expectations))
    findings.append(_runtime_class(facts, expectations))
    labels_pending = _labels_come_later(facts, expectations)
    for node in facts.gpu_nodes:
        findings += [
            _gpu_present_label(node, labels_pending),
            _gpu_memory_label(node, labels_pending),
        ]
        if expectations.profile == "lab":
            findings.append(_allocatable_gpus(node, expectations))
            continue
        findings += [
            _container_runtime(node),
            _nri_socket(node),
            _driver_version(node, expectations),
            _mps_namespace(node, expectations),
            _fabricmanager(node, expectations, operator_ready=facts.gpu_operator_ready),
            _mpsd_memory(node, expectations),
        ]
    warn_only = set(config.warn_only)
    return [replace(f, outcome="warn") if f.outcome == "fail" and f.check in warn_only else f for f in findings]


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.outcome == "fail"]


def parse_container_runtime(version: str) -> tuple[str, tuple[int, ...] | None]:
    """nodeInfo.containerRuntimeVersion ("containerd://2.1.4", "cri-o://1.31.0") → (runtime, version)."""
    runtime, _, raw = version.partition("://")
    match = re.match(r"v?(\d+(?:\.\d+)*)", raw)
    return runtime.lower(), tuple(int(p) for p in match.group(1).split(".")) if match else None


def _node(node: NodeFacts) -> str:
    return f"node {node.name}"


def _cluster_admin(facts: ClusterFacts) -> list[Finding]:
    findings = []
    for resource in ADMIN_RESOURCES:
        allowed = facts.can_create.get(resource)
        if allowed is None:
            findings.append(Finding("cluster-admin", "cluster", "not-checked", f"could not ask for create {resource}"))
        elif allowed:
            findings.append(Finding("cluster-admin", "cluster", "pass", f"can create {resource}"))
        else:
            findings.append(
                Finding(
                    "cluster-admin",
                    "cluster",
                    "fail",
                    f"cannot create {resource} (kubectl auth can-i create {resource} --all-namespaces: no)",
                    FIXES["cluster-admin"],
                )
            )
    return findings


def _gpu_operator_version(facts: ClusterFacts, expectations: Expectations) -> Finding:
    check: CheckId = "gpu-operator-version"
    if expectations.stack_installs_gpu_operator:
        return Finding(check, "cluster", "pass", "this stack installs the GPU Operator at its pinned chart version")
    found = facts.cluster_policy_version
    if found is None:
        return Finding(check, "cluster", "fail", "no GPU Operator ClusterPolicy found", FIXES[check])
    minimum = expectations.minimum_gpu_operator_version
    try:
        too_old = version_tuple(found) < version_tuple(minimum)
    except ValueError:
        return Finding(check, "cluster", "fail", f"ClusterPolicy version {found!r} is not a version", FIXES[check])
    if too_old:
        return Finding(
            check,
            "cluster",
            "fail",
            f"GPU Operator {found} is older than {minimum}, which the gpu-fractioning chart requires",
            FIXES[check],
        )
    return Finding(check, "cluster", "pass", f"GPU Operator {found} (minimum {minimum})")


def _runtime_class(facts: ClusterFacts, expectations: Expectations) -> Finding:
    if expectations.stack_creates_runtime_class:
        return Finding("runtime-class", "cluster", "pass", f"this stack creates RuntimeClass {RUNTIME_CLASS}")
    handler = facts.runtime_classes.get(RUNTIME_CLASS)
    if handler is None:
        fix = LAB_RUNTIME_CLASS_FIX if expectations.profile == "lab" else FIXES["runtime-class"]
        return Finding("runtime-class", "cluster", "fail", f"RuntimeClass {RUNTIME_CLASS} not found", fix)
    return Finding("runtime-class", "cluster", "pass", f"RuntimeClass {RUNTIME_CLASS} (handler {handler})")


def _labels_come_later(facts: ClusterFacts, expectations: Expectations) -> str | None:
    """Why missing GPU labels are expected now, if this stack is what will set them."""
    if expectations.stack_labels_gpu_nodes:
        return "this stack installs nvml-mock and labels the lab's GPU nodes"
    if not expectations.stack_installs_gpu_operator:
        return None
    if facts.cluster_policy_version is None:
        return "GPU Feature Discovery sets it once the GPU Operator this stack installs runs; verify after install"
    if not facts.gpu_operator_ready:
        # An install that stopped at the GPU Operator's gate, run again while the driver still loads.
        return (
            "GPU Feature Discovery sets it once the GPU Operator this stack installs is ready (its ClusterPolicy is "
            f"{facts.cluster_policy_state or 'not reconciled yet'}); the GPU Operator's gate waits for it"
        )
    return None


def _gpu_present_label(node: NodeFacts, labels_pending: str | None) -> Finding:
    value = node.labels.get(GPU_PRESENT_LABEL)
    if value == "true":
        return Finding("gpu-present-label", _node(node), "pass", f"{GPU_PRESENT_LABEL}=true")
    detail = f"no {GPU_PRESENT_LABEL}=true label" + (f" (it is {value!r})" if value is not None else "")
    if labels_pending:
        return Finding("gpu-present-label", _node(node), "not-checked", f"{detail}: {labels_pending}")
    return Finding("gpu-present-label", _node(node), "fail", detail, FIXES["gpu-present-label"])


def _gpu_memory_label(node: NodeFacts, labels_pending: str | None) -> Finding:
    value = node.labels.get(GPU_MEMORY_LABEL)
    if value is not None and value.strip().isdigit() and int(value) > 0:
        return Finding("gpu-memory-label", _node(node), "pass", f"{GPU_MEMORY_LABEL}={value} MiB")
    detail = f"no {GPU_MEMORY_LABEL} label" if value is None else f"{GPU_MEMORY_LABEL}={value!r} is not a MiB count"
    if labels_pending:
        return Finding("gpu-memory-label", _node(node), "not-checked", f"{detail}: {labels_pending}")
    return Finding("gpu-memory-label", _node(node), "fail", detail, FIXES["gpu-memory-label"])


def _allocatable_gpus(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "allocatable-gpus"
    raw = node.allocatable.get(GPU_RESOURCE)
    expected = expectations.gpus_per_node
    if raw is not None and raw.strip().isdigit() and int(raw) == expected:
        return Finding(check, _node(node), "pass", f"allocatable {GPU_RESOURCE}: {raw}")
    detail = f"allocatable {GPU_RESOURCE} is {raw or 'absent'}, expected {expected} whole GPUs"
    # None before the stack's device plugin first ran, 0 while it is not running (the kubelet keeps
    # the capacity): either way the stack's own wait for the GPUs checks it once the plugin runs.
    if (raw is None or raw.strip() == "0") and expectations.stack_labels_gpu_nodes:
        return Finding(check, _node(node), "not-checked", f"{detail}: the device plugin this stack installs adds it")
    return Finding(check, _node(node), "fail", detail, FIXES[check])


def _container_runtime(node: NodeFacts) -> Finding:
    check: CheckId = "container-runtime"
    reported = node.container_runtime_version
    if not reported:
        return Finding(check, _node(node), "not-checked", "the node reports no container runtime version")
    runtime, version = parse_container_runtime(reported)
    shown = ".".join(map(str, version)) if version else "unknown version"
    if runtime == "containerd":
        if version is not None and version >= MINIMUM_CONTAINERD:
            return Finding(check, _node(node), "pass", f"containerd {shown}")
        return Finding(check, _node(node), "fail", f"containerd {shown} is older than 2.0", FIXES[check])
    if runtime == "cri-o":
        return Finding(check, _node(node), "pass", f"CRI-O {shown} (NRI must be enabled: see nri-socket)")
    return Finding(check, _node(node), "fail", f"{reported} is neither containerd nor CRI-O", FIXES[check])


def _not_checked(check: CheckId, node: NodeFacts, what: str) -> Finding:
    if node.host is None:
        reason = "no node access is configured"
    else:
        reason = node.host.error or "the node access could not tell"
    fix = f"configure preflight.hostAccess (ssh or checkPod), or run on the node: {HOST_COMMANDS[check]}"
    return Finding(check, _node(node), "not-checked", f"{what}: {reason}", fix)


def _nri_socket(node: NodeFacts) -> Finding:
    check: CheckId = "nri-socket"
    present = node.host.nri_socket_present if node.host else None
    if present is None:
        return _not_checked(check, node, "whether the NRI socket exists")
    if present:
        return Finding(check, _node(node), "pass", "the NRI socket exists")
    return Finding(check, _node(node), "fail", "no NRI socket: fractiond cannot register", FIXES[check])


def _driver_version(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "driver-version"
    version = node.host.driver_version if node.host else None
    if version is None:
        if expectations.stack_installs_driver:
            return Finding(
                check,
                _node(node),
                "pass",
                f"the GPU Operator this stack installs pins an r{MINIMUM_DRIVER_BRANCH}+ driver",
            )
        return _not_checked(check, node, "the driver version")
    if version_tuple(version) >= MINIMUM_DRIVER:
        return Finding(check, _node(node), "pass", f"driver {version}")
    installed_by = " preinstalled on the host" if expectations.stack_installs_driver else ""
    detail = f"driver {version}{installed_by} is older than r{MINIMUM_DRIVER_BRANCH} (no MPS namespaces)"
    return Finding(check, _node(node), "fail", detail, FIXES[check])


def _mps_namespace(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "mps-namespace"
    commands = node.host.mps_namespace_commands if node.host else None
    if commands is None:
        if expectations.stack_installs_driver:
            return Finding(
                check, _node(node), "pass", f"MPS v3 comes with the r{MINIMUM_DRIVER_BRANCH} driver this stack installs"
            )
        return _not_checked(check, node, "whether MPS has the namespace subcommand")
    missing = sorted(MPS_NAMESPACE_COMMANDS - commands)
    if not missing:
        return Finding(check, _node(node), "pass", "namespace lists create, delete, list, set and get")
    if not commands:
        detail = "nvidia-cuda-mps-control -p 3 has no namespace subcommand"
    else:
        detail = f"namespace --help lacks {', '.join(missing)}"
    return Finding(check, _node(node), "fail", detail, FIXES[check])


def _fabricmanager(node: NodeFacts, expectations: Expectations, operator_ready: bool) -> Finding:
    check: CheckId = "fabricmanager"
    host = node.host
    if host is not None and host.nvswitch is False:
        return Finding(check, _node(node), "pass", "no NVSwitch on this node: Fabric Manager is not needed")
    if host is None or host.fabricmanager_active is None or host.nvswitch is None:
        if host is not None and host.fabricmanager_active:
            return Finding(check, _node(node), "pass", "nvidia-fabricmanager is active")
        return _not_checked(check, node, "whether this NVSwitch node runs Fabric Manager")
    if host.fabricmanager_active:
        return Finding(check, _node(node), "pass", "NVSwitch node with nvidia-fabricmanager active")
    if expectations.stack_installs_driver and not operator_ready:
        # Before the install, or an up run again while the driver still loads (its gate waits).
        return Finding(
            check, _node(node), "pass", "NVSwitch node: the GPU Operator driver this stack installs runs Fabric Manager"
        )
    # Once the operator is ready, its driver's Fabric Manager should run too: inactive is a real fault.
    return Finding(check, _node(node), "fail", "NVSwitch node without an active nvidia-fabricmanager", FIXES[check])


def _mpsd_memory(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "mpsd-memory"
    gpus = node.gpu_count
    source = "GPUs on the node"
    if gpus is None:
        gpus, source = expectations.gpus_per_node, "GPUs per node (nodes.gpusPerNode)"
    needed = mpsd_memory_needed_mib(gpus)
    limit = expectations.mpsd_memory_limit_mib
    if limit >= needed:
        return Finding(check, _node(node), "pass", f"mpsd limit {limit} MiB covers {gpus} {source}")
    return Finding(
        check,
        _node(node),
        "fail",
        f"mpsd limit {limit} MiB is below the ~{needed} MiB that {gpus} {source} need",
        FIXES[check],
    )
