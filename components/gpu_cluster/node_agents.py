"""Facts about the gpu-fractioning node agents that both their install and the checks use: how much
host memory mpsd needs, and the NRI socket each node runtime's agents use (where each runtime keeps its
sockets is components/config/vocabulary.py's RUNTIME_SOCKETS)."""

from __future__ import annotations

from components.config.vocabulary import RUNTIME_SOCKETS, NodeRuntime

# mpsd holds one CUDA server context per GPU, about 50 MiB of host memory each; the fork's default
# pod limit, 1Gi, covers 16 GPUs.
MPSD_MIB_PER_GPU = 50
MPSD_OVERHEAD_MIB = 224
MPSD_DEFAULT_LIMIT_MIB = 1024

NRI_SOCKET = "/var/run/nri/nri.sock"


def mpsd_memory_needed_mib(gpus: int) -> int:
    return MPSD_OVERHEAD_MIB + MPSD_MIB_PER_GPU * gpus


def mpsd_memory_limit_mib(gpus: int) -> int:
    """The default 1Gi, or about 50 MiB more per GPU on nodes with more than 16."""
    return max(MPSD_DEFAULT_LIMIT_MIB, mpsd_memory_needed_mib(gpus))


def nri_socket_path(node_runtime: NodeRuntime) -> str:
    return RUNTIME_SOCKETS[node_runtime].get("nriSocketPath", NRI_SOCKET)
