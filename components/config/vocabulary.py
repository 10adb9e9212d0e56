"""What the program knows of the projects it installs that the configuration names too: the
RuntimeClass the GPU Operator creates, the Queue KAI's chart creates, and where each node runtime
keeps the sockets gpu-fractioning's node agents mount.

Written once, at the ground beside the config model, because the model's defaults and validation
name them; the install, the lab and the checks import them from here rather than spell them again.
(The driver branch MPS namespaces need, MINIMUM_DRIVER_BRANCH, lives in `types` beside the driver
version type that enforces it.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

# ---------------------------------------------------------------- the GPU Operator

# The RuntimeClass the GPU Operator's container toolkit creates, which KAI's binder gives fraction
# pods by default; the lab creates a stand-in of the same name (kind has no nvidia runtime).
RUNTIME_CLASS = "nvidia"

# ---------------------------------------------------------------- this program

# Set on every namespace the program creates for a system daemon; the fractional-pod admission
# policy's binding skips exactly these namespaces, never a namespace by its name alone
# (components/gpu_cluster/fraction_admission.py).
SYSTEM_NAMESPACE_LABEL = "kai-gpu-fractions/system-namespace"
SYSTEM_NAMESPACE_LABELS = {SYSTEM_NAMESPACE_LABEL: "true"}

# ---------------------------------------------------------------- KAI-Scheduler

# The leaf Queue KAI's chart creates on install, under `default-parent-queue`; the lab creates one of
# the same name under its own `default`.
DEFAULT_QUEUE = "default-queue"

# ---------------------------------------------------------------- gpu-fractioning's node agents

# Where containerd and its NRI socket live per distribution, as the chart's values (without an
# nriSocketPath, the agents use the NRI default, node_agents.NRI_SOCKET). On MicroK8s the
# CRI socket must be symlinked into a directory of its own first: the operator mounts each socket's
# parent directory, and two sockets in one directory make the DaemonSet invalid.
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
