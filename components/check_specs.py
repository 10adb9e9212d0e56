"""What each check is asked, from the stack config: the preflight's expectations of the cluster and
each step gate's spec. Pure functions; components/stack.py hands their results to the checks, which
never see the whole config."""

from __future__ import annotations

from components.config.model import StackConfig
from components.gates.spec import PROBE_NAMESPACE, GateSpec, Step
from components.preflight.decisions import Expectations, PreflightSpec
from components.proofs.lab import AllocatableSpec, LabSpec
from components.vocabulary.fractioning import mpsd_memory_limit_mib, nri_socket_path
from components.vocabulary.nvidia import MINIMUM_DRIVER_BRANCH


def preflight_expectations(config: StackConfig) -> Expectations:
    """What the configured profile needs of the cluster, and what it installs itself."""
    if config.profile == "lab":
        return Expectations(
            profile="lab",
            stack_installs_gpu_operator=False,
            stack_creates_runtime_class=True,
            gpus_per_node=config.lab.gpu.count,
            mpsd_memory_limit_mib=0,
            stack_labels_gpu_nodes=True,
        )
    operator = config.gpu_operator
    return Expectations(
        profile="fork",
        stack_installs_gpu_operator=operator.enabled,
        stack_creates_runtime_class=operator.enabled,
        gpus_per_node=config.nodes.gpus_per_node,
        mpsd_memory_limit_mib=mpsd_memory_limit_mib(config.nodes.gpus_per_node),
        stack_installs_driver=operator.enabled and operator.driver.source == "operator",
        minimum_gpu_operator_version=config.gpu_fractioning.minimum_gpu_operator_version,
    )


def preflight_spec(config: StackConfig) -> PreflightSpec | None:
    """What preflight checks; None when it is off, or for a kind cluster the stack creates (it does
    not exist before `up`)."""
    if not config.preflight.enabled or (config.profile == "lab" and config.lab.kind is not None):
        return None
    socket = nri_socket_path(config.gpu_fractioning.node_runtime)
    return PreflightSpec(preflight_expectations(config), config.preflight, socket)


def gate_spec(config: StackConfig, step: Step) -> GateSpec:
    """What the gate after `step` checks, as the stack configures it."""
    if step == "gpu-operator":
        driver = config.gpu_operator.driver
        # The operator installs the pinned driver; a host driver must be of the r615 branch or newer.
        pinned = int(driver.version.split(".")[0]) if driver.source == "operator" else MINIMUM_DRIVER_BRANCH
        operator = config.gpu_operator
        return GateSpec(step, operator.namespace, operator.ready_timeout_seconds, minimum_driver_major=pinned)
    if step == "kai-scheduler":
        sharing_mode = "NvFractions" if config.profile == "fork" else None
        return GateSpec(step, config.kai.namespace, config.kai.ready_timeout_seconds, sharing_mode=sharing_mode)
    if step == "gpu-fractioning":
        agents = config.gpu_fractioning
        return GateSpec(step, agents.namespace, agents.ready_timeout_seconds, kai_namespace=config.kai.namespace)
    timeout, mode = config.admission.ready_timeout_seconds, config.admission.mode
    return GateSpec(step, PROBE_NAMESPACE, timeout, admission_mode=mode)


def allocatable_spec(config: StackConfig) -> AllocatableSpec:
    """The lab's device plugin is ready when every GPU node advertises the profile's count."""
    return AllocatableSpec(gpu_count=config.lab.gpu.count, nodes=tuple(config.lab.node_names))


def lab_proof_spec(config: StackConfig, shared_pod: str) -> LabSpec:
    """What the lab proof checks: the fake GPUs' count and memory, and `shared_pod`'s half of one."""
    lab = config.lab
    return LabSpec(
        gpu_count=lab.gpu.count,
        gpu_memory_mib=lab.gpu.memory_mib,
        shared_memory_mib=lab.gpu.memory_mib // 2,
        shared_pod=shared_pod,
        nodes=tuple(lab.node_names),
        kai_namespace=config.kai.namespace,
    )
