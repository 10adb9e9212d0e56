"""What preflight tells the operator to do about each failing row: the build guide's fixes, and the
command to run by hand where no node access is configured."""

from __future__ import annotations

from components.config.model import CheckId
from components.vocabulary.nvidia import MINIMUM_DRIVER_BRANCH, RUNTIME_CLASS

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
        f"create RuntimeClass {RUNTIME_CLASS} (the GPU Operator does): without it KAI's reservation pod fails with "
        "`unable to initialize NVML: ERROR_LIBRARY_NOT_FOUND` and fractional pods stay Pending "
        f"(check: kubectl get runtimeclass {RUNTIME_CLASS})"
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
        f"pin driver r{MINIMUM_DRIVER_BRANCH} or newer: with the GPU Operator, --set driver.version=615.71.09 "
        f"(gpuOperator.driver.version); on the host, install nvidia-driver-pinning-{MINIMUM_DRIVER_BRANCH}, then "
        "nvidia-driver-open, "
        "from the NVIDIA CUDA apt repository and reboot"
    ),
    "mps-namespace": (
        f"driver older than r{MINIMUM_DRIVER_BRANCH}, or mpsd is not running protocol 3: check the driver version "
        "and the mpsd logs "
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
    f"create the lab's shim, RuntimeClass {RUNTIME_CLASS} with handler runc (kind has no nvidia runtime; pods that "
    f'name it are rejected with `RuntimeClass "{RUNTIME_CLASS}" not found`), or let this stack create it'
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
