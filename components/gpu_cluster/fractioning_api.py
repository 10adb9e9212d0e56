"""What the program knows of gpu-fractioning's API: its GpuFractioningConfig kind, the operator's
Deployment, the DaemonSets and node condition it creates, and how mpsd's pods are found."""

CONFIG_GROUP, CONFIG_VERSION, CONFIG_PLURAL = "gpu-fractioning.kai.scheduler", "v1alpha1", "gpufractioningconfigs"
CONFIG_API_VERSION = f"{CONFIG_GROUP}/{CONFIG_VERSION}"
CONFIG_KIND = "GpuFractioningConfig"
OPERATOR_DEPLOYMENT = "gpu-fractioning"

# The DaemonSets the operator creates from the `default` GpuFractioningConfig.
DAEMONSET_SELECTOR = "app.kubernetes.io/managed-by=gpu-fractioning"
DAEMONS = ("mpsd", "fractiond")
MPSD_SELECTOR = "app.kubernetes.io/component=mpsd"
# What the operator reports on every GPU node, and what gates scheduling there.
NODE_READY_CONDITION = "gpu-fractioning.nvidia.com/Ready"
