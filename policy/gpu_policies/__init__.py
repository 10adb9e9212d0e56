"""The kai-gpu-fractions policies; `POLICIES` is what the pack in `policy/__main__.py` serves."""

from __future__ import annotations

from pulumi_policy import Policy

from . import (
    gpu_operator_disallow_driver_auto_upgrade,
    gpu_operator_require_minimum_versions,
    gpu_pod_disallow_mps_host_path,
    gpu_pod_require_non_root_fractions,
    gpu_pod_require_runtime_class,
    gpu_pod_require_valid_fractions,
    kai_fork_require_explicit_image_tags,
    kai_fork_require_paired_image_tags,
    kai_release_disallow_nvfractions_subchart,
    kai_release_disallow_unsafe_values,
    kai_release_require_valid_sharing_mode,
)

POLICY_MODULES = (
    kai_fork_require_explicit_image_tags,
    kai_fork_require_paired_image_tags,
    kai_release_disallow_nvfractions_subchart,
    kai_release_disallow_unsafe_values,
    kai_release_require_valid_sharing_mode,
    gpu_pod_require_runtime_class,
    gpu_pod_require_non_root_fractions,
    gpu_pod_disallow_mps_host_path,
    gpu_pod_require_valid_fractions,
    gpu_operator_require_minimum_versions,
    gpu_operator_disallow_driver_auto_upgrade,
)

POLICIES: tuple[Policy, ...] = tuple(module.policy for module in POLICY_MODULES)
