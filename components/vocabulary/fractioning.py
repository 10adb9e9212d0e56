"""What the program knows of gpu-fractioning: its GpuFractioningConfig kind and conditions, the
operator's Deployment, the DaemonSets and node condition it creates, how mpsd's pods are found, how much host
memory mpsd needs, and where each node runtime keeps the sockets its node agents mount."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

CONFIG_GROUP, CONFIG_VERSION, CONFIG_PLURAL = "gpu-fractioning.kai.scheduler", "v1alpha1", "gpufractioningconfigs"
CONFIG_API_VERSION = f"{CONFIG_GROUP}/{CONFIG_VERSION}"
CONFIG_KIND = "GpuFractioningConfig"
OPERATOR_DEPLOYMENT = "gpu-fractioning"

# The DaemonSets the operator creates from the `default` GpuFractioningConfig.
DAEMONSET_SELECTOR = "app.kubernetes.io/managed-by=gpu-fractioning"
DAEMONS = ("mpsd", "fractiond")
# The label the operator puts on each node agent's DaemonSet and pods: the agent's name.
AGENT_LABEL = "app.kubernetes.io/component"
MPSD_SELECTOR = f"{AGENT_LABEL}=mpsd"
# What the operator reports on every GPU node, and what gates scheduling there.
NODE_READY_CONDITION = "gpu-fractioning.nvidia.com/Ready"
# The GpuFractioningConfig's condition types, each with its status when all is well: the operator
# writes DriverUpgradeInProgress on every reconcile, False in steady state and True while a node's
# driver is upgraded (standins/upstream/gpu-fractioning/config-conditions.yaml).
DRIVER_UPGRADE_CONDITION = "DriverUpgradeInProgress"
CONFIG_CONDITIONS_WHEN_HEALTHY = {
    "MpsdReady": "True",
    "FractiondReady": "True",
    "Ready": "True",
    DRIVER_UPGRADE_CONDITION: "False",
}

# ---------------------------------------------------------------- mpsd's host memory

# mpsd holds one CUDA server context per GPU, about 50 MiB of host memory each; the fork's default
# pod limit, 1Gi, covers 16 GPUs.
MPSD_MIB_PER_GPU = 50
MPSD_OVERHEAD_MIB = 224
MPSD_DEFAULT_LIMIT_MIB = 1024


def mpsd_memory_needed_mib(gpus: int) -> int:
    return MPSD_OVERHEAD_MIB + MPSD_MIB_PER_GPU * gpus


def mpsd_memory_limit_mib(gpus: int) -> int:
    """The default 1Gi, or about 50 MiB more per GPU on nodes with more than 16."""
    return max(MPSD_DEFAULT_LIMIT_MIB, mpsd_memory_needed_mib(gpus))


# ---------------------------------------------------------------- the node agents' sockets

# The NRI socket the agents use when the chart's values name none.
NRI_SOCKET = "/var/run/nri/nri.sock"

# Where containerd and its NRI socket live per distribution, as the chart's values (without an
# nriSocketPath, the agents use NRI_SOCKET). On MicroK8s the CRI socket must be symlinked into a
# directory of its own first: the operator mounts each socket's parent directory, and two sockets in
# one directory make the DaemonSet invalid. A new node runtime is one row here (the config's choice,
# the chart values and preflight's host check follow from it) and one line in NodeRuntime below.
RUNTIME_SOCKETS: dict[NodeRuntime, dict[str, str]] = {
    "containerd": {},
    "microk8s": {
        "criSocketPath": "/opt/kai-runtime/containerd.sock",
        "nriSocketPath": "/var/snap/microk8s/common/run/nri.sock",
    },
    "k3s": {"criSocketPath": "/run/k3s/containerd/containerd.sock"},
    "rke2": {"criSocketPath": "/run/k3s/containerd/containerd.sock"},
}

# gpuFractioning.nodeRuntime accepts exactly the runtimes the table knows. Type checkers read the
# values written out; the program builds the Literal from the table, so a runtime added to the table
# is accepted, and one removed is refused at validation rather than a KeyError during the run
# (tests/unit/test_config.py fails when the two lists differ).
if TYPE_CHECKING:
    NodeRuntime = Literal["containerd", "microk8s", "k3s", "rke2"]
else:
    NodeRuntime = Literal[tuple(RUNTIME_SOCKETS)]


def nri_socket_path(node_runtime: NodeRuntime) -> str:
    return RUNTIME_SOCKETS[node_runtime].get("nriSocketPath", NRI_SOCKET)
