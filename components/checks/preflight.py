"""Preflight: every row of the build guide's "Cluster and Nodes" table, decided before anything installs.

`evaluate` is pure: it turns ClusterFacts and what this stack will provide (Expectations) into one
Finding per row and target. Rows that need the host are "not-checked" without host facts, never
passed silently. `format_report` prints one line per row that did not pass, with the fix from the
guide's Troubleshooting table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from components.checks.cluster_facts import (
    ADMIN_RESOURCES,
    GPU_MEMORY_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    MPS_NAMESPACE_COMMANDS,
    NRI_SOCKET,
    ClusterFacts,
    HostRunner,
    NodeFacts,
    parse_quantity,
    version_tuple,
)
from components.config.model import CheckId, PreflightConfig, StackConfig

Outcome = Literal["pass", "fail", "warn", "not-checked"]

MINIMUM_DRIVER = (615,)
MINIMUM_CONTAINERD = (2, 0)
# mpsd holds one CUDA server context per GPU, about 50 MiB of host memory each; 1Gi covers 16 GPUs.
MPSD_MIB_PER_GPU = 50
MPSD_OVERHEAD_MIB = 224
MICROK8S_NRI_SOCKET = "/var/snap/microk8s/common/run/nri.sock"

FIXES: dict[CheckId, str] = {
    "cluster-admin": (
        "run with cluster-admin rights: the charts create CRDs, ClusterRoles, ClusterRoleBindings, "
        "PriorityClasses and the kai-resource-reservation namespace "
        "(check: kubectl auth can-i create <resource> --all-namespaces)"
    ),
    "gpu-operator-version": (
        "install GPU Operator v26.7.1 or newer (helm upgrade --install gpu-operator nvidia/gpu-operator "
        "-n gpu-operator --version v26.7.1 --set driver.version=615.71.09) or let this stack install it "
        "(gpuOperator.enabled: true); v26.7.0 works only with gpuFractioning.minimumGpuOperatorVersion: v26.7.0, "
        "and the memory cap then rests on an environment variable the container can change"
    ),
    "runtime-class": (
        "create RuntimeClass nvidia (the GPU Operator does): without it KAI's reservation pod fails with "
        "`unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND` and fractional pods stay Pending "
        "(check: kubectl get runtimeclass nvidia)"
    ),
    "gpu-present-label": (
        "run the GPU Operator, whose feature discovery sets nvidia.com/gpu.present=true; the mpsd and fractiond "
        "DaemonSets select GPU nodes by it, and a node without it gets no daemons and reports no error "
        "(check: kubectl get nodes -l nvidia.com/gpu.present=true)"
    ),
    "gpu-memory-label": (
        "run GPU Feature Discovery (the GPU Operator includes it), which sets the label; without it fractional "
        "pods stay Pending with `BindingError ... node does not include nvidia.com/gpu.memory label` "
        "(confirm with kubectl get nodes -L nvidia.com/gpu.memory)"
    ),
    "container-runtime": (
        "upgrade to containerd 2.0 or newer with NRI enabled, or use CRI-O with NRI: fractiond is an NRI plugin, "
        "and without NRI nothing is injected into containers (check: containerd --version)"
    ),
    "nri-socket": (
        'enable NRI in the runtime (containerd: [plugins."io.containerd.nri.v1.nri"] disable = false; '
        "CRI-O: enable_nri = true) and restart it; on MicroK8s set gpuFractioning.nodeRuntime: microk8s "
        "(check: ls -l /var/run/nri/nri.sock)"
    ),
    "driver-version": (
        "pin driver r615 or newer: with the GPU Operator, --set driver.version=615.71.09 "
        "(gpuOperator.driver.version); on the host, install nvidia-driver-pinning-615, then nvidia-driver-open, "
        "from the NVIDIA CUDA apt repository and reboot"
    ),
    "mps-namespace": (
        "driver older than r615, or mpsd is not running protocol 3: check the driver version and the mpsd logs "
        "(kubectl -n gpu-fractioning logs ds/gpu-fractioning-mpsd)"
    ),
    "fabricmanager": (
        "install and start nvidia-fabricmanager matching the driver branch (sudo apt-get install "
        "nvidia-fabricmanager && sudo systemctl enable --now nvidia-fabricmanager; check: systemctl is-active "
        "nvidia-fabricmanager)"
    ),
    "mpsd-memory": (
        "raise mpsDaemon.resources.limits.memory, about 50 MiB per GPU (the default 1Gi covers 16 GPUs): this "
        "stack sizes it from nodes.gpusPerNode, so set that to the node's GPU count; otherwise mpsd exits with "
        "CUDA_ERROR_OUT_OF_MEMORY while nvidia-smi shows idle GPUs"
    ),
    "allocatable-gpus": (
        "install the device plugin from nvml-mock's manifest (tests/e2e/device-plugin-mock.yaml), not the plain "
        "Helm chart, which fails with ERROR_LIBRARY_NOT_FOUND "
        "(check: kubectl get node <node> -o jsonpath='{.status.allocatable.nvidia\\.com/gpu}')"
    ),
}
LAB_RUNTIME_CLASS_FIX = (
    "create the lab's shim, RuntimeClass nvidia with handler runc (kind has no nvidia runtime; pods that name it "
    'are rejected with `RuntimeClass "nvidia" not found`), or let this stack create it'
)
# What to run by hand when preflight has no node access.
HOST_COMMANDS: dict[CheckId, str] = {
    "driver-version": "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
    "mps-namespace": (
        "nvidia-cuda-mps-control -p 3 namespace --help (operator-managed driver: kubectl -n gpu-operator exec "
        "ds/nvidia-driver-daemonset -- nvidia-cuda-mps-control -p 3 namespace --help)"
    ),
    "fabricmanager": "systemctl is-active nvidia-fabricmanager",
    "nri-socket": "ls -l /var/run/nri/nri.sock",
}


@dataclass(frozen=True)
class Finding:
    check: CheckId
    target: str
    outcome: Outcome
    detail: str
    fix: str = ""


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
            _fabricmanager(node, expectations, operator_runs=facts.cluster_policy_version is not None),
            _mpsd_memory(node, expectations),
        ]
    warn_only = set(config.warn_only)
    return [replace(f, outcome="warn") if f.outcome == "fail" and f.check in warn_only else f for f in findings]


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.outcome == "fail"]


_LABELS: dict[Outcome, str] = {"fail": "FAIL", "warn": "WARN", "not-checked": "NOT CHECKED", "pass": "PASS"}


def format_report(findings: Iterable[Finding]) -> str:
    """A summary line, then one line per failing, warned or unchecked row: what, where, how to fix."""
    findings = list(findings)
    counts = {outcome: sum(f.outcome == outcome for f in findings) for outcome in _LABELS}
    lines = [
        f"Preflight: {counts['fail']} failing, {counts['warn']} warning, {counts['not-checked']} not checked, "
        f"{counts['pass']} passed"
    ]
    for outcome in ("fail", "warn", "not-checked"):
        for f in findings:
            if f.outcome == outcome:
                fix = f"; fix: {f.fix}" if f.fix else ""
                lines.append(f"  {_LABELS[outcome]} {f.check} on {f.target}: {f.detail}{fix}")
    return "\n".join(lines)


def memory_mib(quantity: str) -> int:
    """A Kubernetes memory quantity ("1Gi", "1424Mi") in MiB."""
    return int(parse_quantity(quantity) // 2**20)


def mpsd_budget_mib(gpus: int) -> int:
    return MPSD_OVERHEAD_MIB + MPSD_MIB_PER_GPU * gpus


def parse_container_runtime(version: str) -> tuple[str, tuple[int, ...] | None]:
    """nodeInfo.containerRuntimeVersion ("containerd://2.1.4", "cri-o://1.31.0") → (runtime, version)."""
    runtime, _, raw = version.partition("://")
    match = re.match(r"v?(\d+(?:\.\d+)*)", raw)
    return runtime.lower(), tuple(int(p) for p in match.group(1).split(".")) if match else None


def expectations_for(config: StackConfig) -> Expectations:
    """The Expectations of a parsed stack configuration."""
    from components.gpu_cluster.gpu_fractioning import mpsd_memory_limit

    if config.profile == "lab":
        return Expectations(
            profile="lab",
            stack_installs_gpu_operator=False,
            stack_creates_runtime_class=True,
            gpus_per_node=config.lab.gpu.count,
            mpsd_memory_limit_mib=0,
            stack_labels_gpu_nodes=True,
        )
    operator = config.gpu_operator
    return Expectations(
        profile="fork",
        stack_installs_gpu_operator=operator.enabled,
        stack_creates_runtime_class=operator.enabled,
        gpus_per_node=config.nodes.gpus_per_node,
        mpsd_memory_limit_mib=memory_mib(mpsd_memory_limit(config.nodes.gpus_per_node)),
        stack_installs_driver=operator.enabled and operator.driver.source == "operator",
        minimum_gpu_operator_version=config.gpu_fractioning.minimum_gpu_operator_version,
    )


def nri_socket_path(config: StackConfig) -> str:
    return MICROK8S_NRI_SOCKET if config.gpu_fractioning.node_runtime == "microk8s" else NRI_SOCKET


def host_runner(config: StackConfig, preflight: PreflightConfig) -> HostRunner | None:
    """The configured node access, if any."""
    from components.checks.cluster_facts import check_pod_runner, ssh_runner

    access = preflight.host_access
    if access is None:
        return None
    socket = nri_socket_path(config)
    if access.ssh is not None:
        ssh = access.ssh
        return ssh_runner(ssh.command, ssh.addresses, ssh.user, ssh.timeout_seconds, socket)
    if access.check_pod is not None:
        pod = access.check_pod
        return check_pod_runner(
            config.cluster.kubeconfig, config.cluster.context, pod.namespace, pod.image, pod.timeout_seconds, socket
        )
    return None


# ---------------------------------------------------------------- rows


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
        return Finding("runtime-class", "cluster", "pass", "this stack creates RuntimeClass nvidia")
    handler = facts.runtime_classes.get("nvidia")
    if handler is None:
        fix = LAB_RUNTIME_CLASS_FIX if expectations.profile == "lab" else FIXES["runtime-class"]
        return Finding("runtime-class", "cluster", "fail", "RuntimeClass nvidia not found", fix)
    return Finding("runtime-class", "cluster", "pass", f"RuntimeClass nvidia (handler {handler})")


def _labels_come_later(facts: ClusterFacts, expectations: Expectations) -> str | None:
    """Why missing GPU labels are expected now, if this stack is what will set them."""
    if expectations.stack_labels_gpu_nodes:
        return "this stack installs nvml-mock and labels the lab's GPU nodes"
    if expectations.stack_installs_gpu_operator and facts.cluster_policy_version is None:
        return "GPU Feature Discovery sets it once the GPU Operator this stack installs runs; verify after install"
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
    if raw is None and expectations.stack_labels_gpu_nodes:
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
            return Finding(check, _node(node), "pass", "the GPU Operator this stack installs pins an r615+ driver")
        return _not_checked(check, node, "the driver version")
    if version_tuple(version) >= MINIMUM_DRIVER:
        return Finding(check, _node(node), "pass", f"driver {version}")
    installed_by = " preinstalled on the host" if expectations.stack_installs_driver else ""
    detail = f"driver {version}{installed_by} is older than r615 (no MPS namespaces)"
    return Finding(check, _node(node), "fail", detail, FIXES[check])


def _mps_namespace(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "mps-namespace"
    commands = node.host.mps_namespace_commands if node.host else None
    if commands is None:
        if expectations.stack_installs_driver:
            return Finding(check, _node(node), "pass", "MPS v3 comes with the r615 driver this stack installs")
        return _not_checked(check, node, "whether MPS has the namespace subcommand")
    missing = sorted(MPS_NAMESPACE_COMMANDS - commands)
    if not missing:
        return Finding(check, _node(node), "pass", "namespace lists create, delete, list, set and get")
    if not commands:
        detail = "nvidia-cuda-mps-control -p 3 has no namespace subcommand"
    else:
        detail = f"namespace --help lacks {', '.join(missing)}"
    return Finding(check, _node(node), "fail", detail, FIXES[check])


def _fabricmanager(node: NodeFacts, expectations: Expectations, operator_runs: bool) -> Finding:
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
    if expectations.stack_installs_driver and not operator_runs:
        return Finding(
            check, _node(node), "pass", "NVSwitch node: the GPU Operator driver this stack installs runs Fabric Manager"
        )
    # Once the operator's driver runs, its Fabric Manager should too: inactive is a real fault.
    return Finding(check, _node(node), "fail", "NVSwitch node without an active nvidia-fabricmanager", FIXES[check])


def _mpsd_memory(node: NodeFacts, expectations: Expectations) -> Finding:
    check: CheckId = "mpsd-memory"
    gpus = node.gpu_count
    source = "GPUs on the node"
    if gpus is None:
        gpus, source = expectations.gpus_per_node, "GPUs per node (nodes.gpusPerNode)"
    needed = mpsd_budget_mib(gpus)
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
