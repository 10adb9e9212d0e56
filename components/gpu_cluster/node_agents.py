"""Facts about the gpu-fractioning node agents that both their install and the checks use: how much
host memory mpsd needs, and where each node runtime keeps its sockets."""

from __future__ import annotations

from components.config.model import NodeRuntime

# mpsd holds one CUDA server context per GPU, about 50 MiB of host memory each; the fork's default
# pod limit, 1Gi, covers 16 GPUs.
MPSD_MIB_PER_GPU = 50
MPSD_OVERHEAD_MIB = 224
MPSD_DEFAULT_LIMIT_MIB = 1024

NRI_SOCKET = "/var/run/nri/nri.sock"
# Where containerd and its NRI socket live per distribution. On MicroK8s the CRI socket must be
# symlinked into a directory of its own first: the operator mounts each socket's parent
# directory, and two sockets in one directory make the DaemonSet invalid.
RUNTIME_SOCKETS: dict[NodeRuntime, dict[str, str]] = {
    "containerd": {},
    "microk8s": {
        "criSocketPath": "/opt/kai-runtime/containerd.sock",
        "nriSocketPath": "/var/snap/microk8s/common/run/nri.sock",
    },
    "k3s": {"criSocketPath": "/run/k3s/containerd/containerd.sock"},
    "rke2": {"criSocketPath": "/run/k3s/containerd/containerd.sock"},
}


def mpsd_memory_needed_mib(gpus: int) -> int:
    return MPSD_OVERHEAD_MIB + MPSD_MIB_PER_GPU * gpus


def mpsd_memory_limit_mib(gpus: int) -> int:
    """The default 1Gi, or about 50 MiB more per GPU on nodes with more than 16."""
    return max(MPSD_DEFAULT_LIMIT_MIB, mpsd_memory_needed_mib(gpus))


def nri_socket_path(node_runtime: NodeRuntime) -> str:
    return RUNTIME_SOCKETS[node_runtime].get("nriSocketPath", NRI_SOCKET)
