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
# Every GPU resource the device plugin advertises under the names KAI and the GPU Operator use: whole
# GPUs (nvidia.com/gpu), the shared resource time-slicing or MPS sharing renames them to
# (nvidia.com/gpu.shared, `renameByDefault`), and MIG profiles with the mixed strategy
# (nvidia.com/mig-<profile>, nvidia.com/mig-<profile>.shared) (NVIDIA k8s-device-plugin README; the
# GPU Operator's validator counts the same two prefixes, validator/main.go genericGPUResourceType and
# migGPUResourcePrefix). A pod asking for any of them needs the NVIDIA RuntimeClass. An RE2 and
# Python pattern, matched from the start of the resource name.
GPU_RESOURCE_PATTERN = r"^nvidia[.]com/(gpu|mig-)"
# Node Feature Discovery's label for an NVIDIA PCI device, from which the GPU Operator derives gpu.present.
NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"

CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL = "nvidia.com", "v1", "clusterpolicies"
# The ClusterPolicy's status.state once every operand is ready; `notReady` until then
# (../shared/reference/upstream-facts.md, GPU Operator readiness).
CLUSTER_POLICY_READY = "ready"

# The GPU Operator's per-node driver upgrade state (k8s-operator-libs pkg/upgrade consts.go, driver name
# `gpu`): absent or upgrade-done when the node is not in an upgrade
# (../shared/reference/day2-upstream.md section 1.2).
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_DONE = "upgrade-done"

# GFD's full driver-version label: the driver the node's kernel runs (GFD reads it through NVML).
DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
# The GPU Operator's driver DaemonSet (pods `app=nvidia-driver-daemonset`, always updateStrategy
# OnDelete, so a new driver reaches a node only when its driver pod is deleted), the init container
# that unloads the old driver, and the validator whose readiness says the node's GPU stack works
# (gpu-operator controllers/upgrade_controller.go DriverLabelKey/Value @06faaf0;
# ../shared/reference/day2-upstream.md 1.1).
DRIVER_POD_SELECTOR = "app=nvidia-driver-daemonset"
DRIVER_MANAGER_CONTAINER = "k8s-driver-manager"
VALIDATOR_POD_SELECTOR = "app=nvidia-operator-validator"
