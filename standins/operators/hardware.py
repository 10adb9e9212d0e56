"""What a fixture node holds, from its stand-in-hardware annotations (standins/nodes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "stand-in-hardware.kai-gpu-fractions/"
GPU_RESOURCE = "nvidia.com/gpu"
NFD_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
# The driver version a GFD or driver pod carries (what GFD would read through NVML, what a driver pod
# installs), and the one the node's kernel has loaded.
DRIVER_VERSION_ANNOTATION = "stand-in-hardware.kai-gpu-fractions/driver-version"
LOADED_DRIVER_ANNOTATION = "stand-in.kai-gpu-fractions/loaded-driver"
MIG_CAPABLE_PRODUCTS = ("a100", "a30", "h100")


def hardware(node: Mapping[str, Any], key: str) -> str | None:
    value = (node["metadata"].get("annotations") or {}).get(PREFIX + key)
    return str(value) if value is not None else None


def gpu_count(node: Mapping[str, Any]) -> int:
    return int(hardware(node, "gpu-count") or 0)


def labels(node: Mapping[str, Any]) -> dict[str, str]:
    return dict(node["metadata"].get("labels") or {})


def mig_capable(node: Mapping[str, Any]) -> bool:
    product = (hardware(node, "gpu-product") or "").lower()
    return any(name in product for name in MIG_CAPABLE_PRODUCTS)
