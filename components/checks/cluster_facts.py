"""What preflight reads: node and cluster facts from the Kubernetes API, host facts from an optional node access.

The API tells node labels, nodeInfo, allocatable resources, RuntimeClasses, the GPU Operator's
ClusterPolicy and the caller's own rights. The driver, MPS, Fabric Manager and the NRI socket live on
the host: a configured node access (SSH, or a one-shot check pod) runs `host_check_script()` there and
`parse_host_report` turns its output into HostFacts. Without one, HostFacts stays None.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import yaml

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
# Node Feature Discovery's label for an NVIDIA PCI device, from which the GPU Operator derives gpu.present.
NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
VERSION_LABEL = "app.kubernetes.io/version"
CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL = "nvidia.com", "v1", "clusterpolicies"
NRI_SOCKET = "/var/run/nri/nri.sock"
MPS_NAMESPACE_COMMANDS = frozenset({"create", "delete", "list", "set", "get"})

# The five `kubectl auth can-i create <resource> --all-namespaces` checks of the guide, with API groups.
ADMIN_RESOURCES: dict[str, str] = {
    "customresourcedefinitions": "apiextensions.k8s.io",
    "clusterroles": "rbac.authorization.k8s.io",
    "clusterrolebindings": "rbac.authorization.k8s.io",
    "priorityclasses": "scheduling.k8s.io",
    "namespaces": "",
}


@dataclass(frozen=True)
class HostFacts:
    """What a node access found on one GPU host; None means it could not tell."""

    driver_version: str | None = None
    mps_namespace_commands: frozenset[str] | None = None
    fabricmanager_active: bool | None = None
    nri_socket_present: bool | None = None
    nvswitch: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    container_runtime_version: str = ""
    allocatable: dict[str, str] = field(default_factory=dict)
    host: HostFacts | None = None

    @property
    def gpu_count(self) -> int | None:
        """GPUs the node advertises, else the count GPU Feature Discovery labelled."""
        for raw in (self.allocatable.get(GPU_RESOURCE), self.labels.get(GPU_COUNT_LABEL)):
            if raw is not None and raw.strip().isdigit() and int(raw) > 0:
                return int(raw)
        return None


@dataclass(frozen=True)
class ClusterFacts:
    gpu_nodes: list[NodeFacts]
    runtime_classes: dict[str, str]
    cluster_policy_version: str | None
    can_create: dict[str, bool]


# ---------------------------------------------------------------- pure parsing of API objects


def node_facts(node: Mapping[str, Any], host: HostFacts | None = None) -> NodeFacts:
    """A Node as the API serialises it (camelCase JSON) to NodeFacts."""
    metadata = node.get("metadata") or {}
    status = node.get("status") or {}
    return NodeFacts(
        name=str(metadata.get("name", "")),
        labels={str(k): str(v) for k, v in (metadata.get("labels") or {}).items()},
        container_runtime_version=str((status.get("nodeInfo") or {}).get("containerRuntimeVersion") or ""),
        allocatable={str(k): str(v) for k, v in (status.get("allocatable") or {}).items()},
        host=host,
    )


def is_gpu_node(node: NodeFacts) -> bool:
    """Any sign of an NVIDIA GPU, so a node the GPU Operator has not labelled is still checked."""
    labels = node.labels
    return (
        labels.get(GPU_PRESENT_LABEL) == "true" or labels.get(NVIDIA_PCI_LABEL) == "true" or node.gpu_count is not None
    )


def select_gpu_nodes(nodes: Sequence[NodeFacts]) -> list[NodeFacts]:
    """The nodes with a GPU; all nodes when none shows one, so that the missing label gets reported."""
    return [n for n in nodes if is_gpu_node(n)] or list(nodes)


def runtime_class_handlers(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {str((i.get("metadata") or {}).get("name")): str(i.get("handler", "")) for i in items}


def cluster_policy_version(items: Iterable[Mapping[str, Any]]) -> str | None:
    """The GPU Operator version its ClusterPolicy is labelled with; None when there is none."""
    for item in items:
        version = ((item.get("metadata") or {}).get("labels") or {}).get(VERSION_LABEL)
        if version:
            return str(version)
    return None


_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")
_SUFFIXES = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
}


def parse_quantity(value: str) -> float:
    """A Kubernetes resource quantity ("1510m", "1Gi", "40960") as a number."""
    match = _QUANTITY.match(value)
    if not match or match.group(2) not in _SUFFIXES:
        raise ValueError(f"not a Kubernetes quantity: {value!r}")
    return float(match.group(1)) * _SUFFIXES[match.group(2)]


# ---------------------------------------------------------------- pure parsing of host command output

_NOT_FOUND = re.compile(r"command not found|No such file or directory|executable file not found", re.I)
_DRIVER_VERSION = re.compile(r"^\s*(\d{3,4}\.\d+(?:\.\d+)?)\s*$", re.M)


def parse_driver_version(text: str) -> str | None:
    """`nvidia-smi --query-gpu=driver_version --format=csv,noheader`: one line per GPU, the lowest wins."""
    versions = _DRIVER_VERSION.findall(text)
    return min(versions, key=version_tuple) if versions else None


def version_tuple(version: str) -> tuple[int, ...]:
    """ "v26.7.1" → (26, 7, 1); "615.71.09" → (615, 71, 9); pre-release suffixes are dropped."""
    core = version.strip().lstrip("vV").split("-", 1)[0].split("+", 1)[0]
    parts = core.split(".")
    if not core or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(p) for p in parts)


def parse_mps_namespace_commands(text: str) -> frozenset[str] | None:
    """The verbs `nvidia-cuda-mps-control -p 3 namespace --help` lists.

    An empty set means the control daemon answered without a `namespace` module (a pre-r615
    driver); None means the binary was not there to ask.
    """
    if not text.strip() or (_NOT_FOUND.search(text) and "namespace" not in text.lower()):
        return None
    verbs: set[str] = set()
    for line in text.splitlines():
        first = re.match(r"^\s*[-*]?\s*([a-z]+)\b", line)
        if first and first.group(1) in MPS_NAMESPACE_COMMANDS:
            verbs.add(first.group(1))
        for group in re.findall(r"[{<(\[]([a-z|,\s]+)[}>)\]]", line):
            verbs.update(v for v in re.split(r"[|,\s]+", group) if v in MPS_NAMESPACE_COMMANDS)
    return frozenset(verbs)


_SYSTEMD_STATES = {"active": True, "reloading": True, "refreshing": True}
_SYSTEMD_DOWN = {"inactive", "failed", "activating", "deactivating", "maintenance", "unknown"}


def parse_systemctl_is_active(text: str) -> bool | None:
    """`systemctl is-active nvidia-fabricmanager`: True when running, None when systemd did not answer."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    state = lines[0]
    if state in _SYSTEMD_STATES:
        return True
    return False if state in _SYSTEMD_DOWN else None


def parse_nri_socket_listing(text: str, path: str = NRI_SOCKET) -> bool | None:
    """`ls -l /var/run/nri/nri.sock`: True for a socket, False when it is missing or not a socket."""
    for line in text.splitlines():
        if line.rstrip().endswith(path) and re.match(r"^[sdlbcp-][rwxsStT-]{9}", line):
            return line.startswith("s")
    if "Permission denied" in text:
        return None  # the node access is not root: it cannot tell
    if "No such file or directory" in text or "cannot access" in text:
        return False
    return None


def parse_nvswitch_listing(text: str) -> bool | None:
    """`ls -d /dev/nvidia-nvswitch*`: the driver creates one device per NVSwitch (HGX/DGX boards)."""
    if re.search(r"/dev/nvidia-nvswitch\d+", text):
        return True
    if "No such file or directory" in text or "cannot access" in text or not text.strip():
        return False
    return None


def parse_pids(text: str) -> bool | None:
    """`pgrep -x nv-fabricmanager`: a PID means Fabric Manager runs (on the host or in the driver container)."""
    if re.search(r"^\s*\d+\s*$", text, re.M):
        return True
    return False if not text.strip() else None


def host_check_script(nri_socket_path: str = NRI_SOCKET) -> str:
    """A POSIX shell script for one GPU host (or `chroot /host`) that prints one section per fact.

    Over SSH the script arrives on the shell's stdin (`sh -s`), so no command may read stdin:
    nvidia-cuda-mps-control reads commands from it.

    With a GPU Operator-managed driver, the tools live in the driver container's root, which the
    operator mounts at /run/nvidia/driver on the host.
    """
    return f"""\
in_driver_root() {{
  if command -v "$1" >/dev/null 2>&1; then "$@"
  elif [ -x "/run/nvidia/driver/usr/bin/$1" ]; then chroot /run/nvidia/driver "$@"
  else echo "$1: command not found"; fi
}}
echo '### driver'
in_driver_root nvidia-smi --query-gpu=driver_version --format=csv,noheader </dev/null 2>&1
echo '### mps-namespace'
in_driver_root nvidia-cuda-mps-control -p 3 namespace --help </dev/null 2>&1
echo '### fabricmanager'
systemctl is-active nvidia-fabricmanager </dev/null 2>&1
echo '### fabricmanager-process'
pgrep -x nv-fabricmanager </dev/null 2>&1
echo '### nri-socket'
ls -l {nri_socket_path} </dev/null 2>&1
echo '### nvswitch'
ls -d /dev/nvidia-nvswitch* </dev/null 2>&1
echo '### end'
"""


def split_sections(text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = re.match(r"^### ([a-z-]+)\s*$", line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def parse_host_report(text: str, nri_socket_path: str = NRI_SOCKET) -> HostFacts:
    """The output of `host_check_script()` as HostFacts; a missing section stays None."""
    sections = split_sections(text)
    if "end" not in sections:
        return HostFacts(error="the host check did not run to completion: " + (text.strip()[-200:] or "no output"))

    def parsed(name: str, parse: Callable[[str], Any]) -> Any:
        return parse(sections[name]) if name in sections else None

    systemd = parsed("fabricmanager", parse_systemctl_is_active)
    process = parsed("fabricmanager-process", parse_pids)
    fabricmanager = True if True in (systemd, process) else (False if False in (systemd, process) else None)
    return HostFacts(
        driver_version=parsed("driver", parse_driver_version),
        mps_namespace_commands=parsed("mps-namespace", parse_mps_namespace_commands),
        fabricmanager_active=fabricmanager,
        nri_socket_present=parsed("nri-socket", lambda t: parse_nri_socket_listing(t, nri_socket_path)),
        nvswitch=parsed("nvswitch", parse_nvswitch_listing),
    )


# ---------------------------------------------------------------- reading the cluster

# Runs the host check script on the named node and returns its combined output.
HostRunner = Callable[[str], str]


class ClusterReader(Protocol):
    def list_nodes(self, label_selector: str | None = None) -> list[dict[str, Any]]: ...

    def list_runtime_classes(self) -> list[dict[str, Any]]: ...

    def list_cluster_policies(self) -> list[dict[str, Any]]: ...

    def can_create(self, group: str, resource: str) -> bool: ...


def collect_cluster_facts(
    reader: ClusterReader, host_runner: HostRunner | None = None, nri_socket_path: str = NRI_SOCKET
) -> ClusterFacts:
    nodes = select_gpu_nodes([node_facts(n) for n in reader.list_nodes()])
    if host_runner is not None:
        nodes = [replace(n, host=read_host_facts(n.name, host_runner, nri_socket_path)) for n in nodes]
    return ClusterFacts(
        gpu_nodes=nodes,
        runtime_classes=runtime_class_handlers(reader.list_runtime_classes()),
        cluster_policy_version=cluster_policy_version(reader.list_cluster_policies()),
        can_create={resource: reader.can_create(group, resource) for resource, group in ADMIN_RESOURCES.items()},
    )


def read_host_facts(node: str, run: HostRunner, nri_socket_path: str = NRI_SOCKET) -> HostFacts:
    """Never raises: a failing node access is reported as facts it could not read."""
    try:
        return parse_host_report(run(node), nri_socket_path)
    except Exception as error:  # any access failure means "not checked", with its reason
        return HostFacts(error=f"node access failed: {error}")


def read_cluster_facts(
    kubeconfig: str | None,
    context: str | None,
    host_runner: HostRunner | None = None,
    nri_socket_path: str = NRI_SOCKET,
) -> ClusterFacts:
    """Reads everything preflight needs from the cluster `kubeconfig` (a path or the file's contents)."""
    return collect_cluster_facts(KubernetesReader(api_client(kubeconfig, context)), host_runner, nri_socket_path)


def looks_like_kubeconfig_contents(value: str) -> bool:
    return "\n" in value or value.lstrip().startswith(("{", "apiVersion"))


def api_client(kubeconfig: str | None, context: str | None) -> Any:
    """A kubernetes ApiClient for a kubeconfig path, its contents, or the ambient KUBECONFIG."""
    from kubernetes import config

    if kubeconfig and looks_like_kubeconfig_contents(kubeconfig):
        return config.new_client_from_config_dict(yaml.safe_load(kubeconfig), context=context)
    path = os.path.expanduser(kubeconfig) if kubeconfig else None
    return config.new_client_from_config(config_file=path, context=context)


def raw_json(response: Any) -> Any:
    """The body of a `_preload_content=False` call: the API's own JSON, without the client's models.

    The models reject objects a real node would never send but a fake one does (a nodeInfo without
    bootID), and their snake_case would not match what the parsers here read.
    """
    return json.loads(response.data)


class KubernetesReader:
    """ClusterReader over the official kubernetes client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def list_nodes(self, label_selector: str | None = None) -> list[dict[str, Any]]:
        from kubernetes import client

        core = client.CoreV1Api(self.client)
        return list(raw_json(core.list_node(label_selector=label_selector or "", _preload_content=False))["items"])

    def list_runtime_classes(self) -> list[dict[str, Any]]:
        from kubernetes import client

        return list(raw_json(client.NodeV1Api(self.client).list_runtime_class(_preload_content=False))["items"])

    def list_cluster_policies(self) -> list[dict[str, Any]]:
        from kubernetes import client

        try:
            listing = client.CustomObjectsApi(self.client).list_cluster_custom_object(
                CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL, _preload_content=False
            )
        except client.ApiException as error:
            if error.status == 404:  # no GPU Operator CRD: no ClusterPolicy
                return []
            raise
        return list(raw_json(listing).get("items", []))

    def can_create(self, group: str, resource: str) -> bool:
        from kubernetes import client

        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "create", "group": group, "resource": resource}},
        }
        api = client.AuthorizationV1Api(self.client)
        answer = raw_json(api.create_self_subject_access_review(review, _preload_content=False))
        return bool((answer.get("status") or {}).get("allowed"))


# ---------------------------------------------------------------- node access


def ssh_runner(
    command: Sequence[str] = ("ssh", "-o", "BatchMode=yes"),
    addresses: Mapping[str, str] | None = None,
    user: str | None = None,
    timeout_seconds: int = 60,
    nri_socket_path: str = NRI_SOCKET,
) -> HostRunner:
    """Runs the host check over SSH (`ssh <address> sh -s`); `addresses` maps node names to hosts."""
    script = host_check_script(nri_socket_path)

    def run(node: str) -> str:
        address = (addresses or {}).get(node, node)
        target = f"{user}@{address}" if user else address
        done = subprocess.run(
            [*command, target, "sh", "-s"],
            input=script,
            capture_output=True,
            text=True,
            timeout=timeout_seconds,
            check=False,
        )
        if done.returncode == 255:  # ssh's own failure, not the script's
            raise RuntimeError(done.stderr.strip() or "ssh failed")
        return done.stdout + done.stderr

    return run


def check_pod_manifest(node: str, name: str, image: str, script: str) -> dict[str, Any]:
    """A privileged one-shot pod on `node` that runs `script` in the host's root filesystem."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "kai-gpu-fractions-preflight"}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "hostPID": True,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "check",
                    "image": image,
                    "command": ["chroot", "/host", "sh", "-c", script],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }


def check_pod_runner(
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    image: str = "busybox:1.37",
    timeout_seconds: int = 120,
    nri_socket_path: str = NRI_SOCKET,
) -> HostRunner:
    """Runs the host check in a short-lived privileged pod per node, then deletes it.

    This creates a pod, during preview too: enable it only where that is acceptable.
    """
    script = host_check_script(nri_socket_path)

    def run(node: str) -> str:
        from kubernetes import client

        core = client.CoreV1Api(api_client(kubeconfig, context))
        name = f"kgf-preflight-{uuid.uuid4().hex[:8]}"
        core.create_namespaced_pod(namespace, check_pod_manifest(node, name, image, script))
        try:
            deadline = time.monotonic() + timeout_seconds
            while time.monotonic() < deadline:
                phase = core.read_namespaced_pod(name, namespace).status.phase
                if phase in ("Succeeded", "Failed"):
                    return str(core.read_namespaced_pod_log(name, namespace))
                time.sleep(2)
            raise TimeoutError(f"check pod {namespace}/{name} on {node} did not finish in {timeout_seconds}s")
        finally:
            core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)

    return run
