"""What the program knows of NVIDIA's side of a GPU node: the driver branch MPS v3 namespaces need,
the RuntimeClass the GPU Operator creates, the labels GPU Feature Discovery puts on a node, the
resource the device plugin advertises, and the GPU Operator's ClusterPolicy kind."""

from __future__ import annotations

# The driver branch MPS v3 namespaces need (`nvidia-cuda-mps-control` grew `namespace` in r615):
# the config's driver version type, preflight and the GPU Operator's gate read it from here.
MINIMUM_DRIVER_BRANCH = 615

# The RuntimeClass the GPU Operator's container toolkit creates, which KAI's binder gives fraction
# pods by default; the lab creates a stand-in of the same name (kind has no nvidia runtime).
RUNTIME_CLASS = "nvidia"

# GPU Feature Discovery's node labels, and the device plugin's resource.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_RESOURCE = "nvidia.com/gpu"
# Node Feature Discovery's label for an NVIDIA PCI device, from which the GPU Operator derives gpu.present.
NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"

CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL = "nvidia.com", "v1", "clusterpolicies"
