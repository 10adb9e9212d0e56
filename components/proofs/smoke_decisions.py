"""The smoke proof's decisions: the guide's Step 5 checks and the SM-share measurement.

Every function here is pure: the evidence (pod annotations, `env` output, `namespace list`,
`nvidia-smi`, deviceQuery logs) comes in as text or plain dicts, and a CheckResult says whether the
caps are enforced, not just requested, and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components.cluster.results import CheckResult
from components.vocabulary.kai import DEFAULT_QUEUE

DEVICE_QUERY_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:devicequery"


@dataclass(frozen=True)
class SmokeSpec:
    """What the smoke proof checks; its fields are the SmokeProof resource's inputs."""

    pods: tuple[str, ...]
    gpu_memory_mib: int
    gpu_fraction: float
    namespace: str = "default"
    queue: str = DEFAULT_QUEUE
    agents_namespace: str = "gpu-fractioning"
    sm_count: int | None = None
    measure_sm_share: bool = True
    device_query_image: str = DEVICE_QUERY_IMAGE
    timeout_seconds: int = 600


RESERVED_GPU_MEMORY_MIB = 1024  # the MPS server's own context; the binder's reservedGpuMemory
DEFAULT_NAMESPACE_PERCENTAGE = 10.0
KAI_NAMESPACE_PREFIX = "kai_"
SM_TOLERANCE = 2  # MPS hands out SMs in TPC pairs on A100/H100
GPU_UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
MISMATCHED_PAIR = (
    "a fork node agent running against an upstream scheduler, or the reverse: rebuild and reinstall both "
    "from the pinned commits"
)

# SMs per GPU by the product name GPU Feature Discovery publishes (nvidia.com/gpu.product).
SM_COUNTS = (("A100", 108), ("A30", 56), ("H100-PCIE", 114), ("H100", 132), ("H200", 132), ("L40S", 142))


def expected_percentage(fraction: float) -> int:
    return round(fraction * 100)


def expected_memory_cap_mib(gpu_memory_mib: int, fraction: float, reserved_mib: int = RESERVED_GPU_MEMORY_MIB) -> int:
    """N = (GPU memory in MiB − 1024) × fraction: 19968 for half an A100 40GB."""
    return math.floor((gpu_memory_mib - reserved_mib) * fraction)


def sm_count_for_product(product: str) -> int | None:
    upper = product.upper()
    return next((count for name, count in SM_COUNTS if name in upper), None)


# ---------------------------------------------------------------- 1. the binder's annotations


@dataclass(frozen=True)
class BinderDecision:
    portion: str
    memory_request: str
    devices: str


def binder_annotations(annotations: Mapping[str, str]) -> BinderDecision:
    """The binder's per-container annotations, e.g. nvidia.com/container.main.gpu-memory.request."""

    def value(suffix: str) -> str:
        for key, found in annotations.items():
            if key.startswith("nvidia.com/") and (key.endswith("." + suffix) or key.endswith("/" + suffix)):
                return found.strip()
        return ""

    return BinderDecision(value("gpu-compute.portion"), value("gpu-memory.request"), value("gpus.devices"))


def decide_binder(pods: Mapping[str, Mapping[str, str]]) -> CheckResult:
    """Non-empty portion and memory request on every pod, and one real GPU UUID shared by all of them."""
    check = "binder-annotations"
    problems: list[str] = []
    uuids: dict[str, str] = {}
    for pod, pod_annotations in pods.items():
        decision = binder_annotations(pod_annotations)
        if not decision.portion:
            problems.append(f"{pod} has no gpu-compute.portion")
        if not decision.memory_request:
            problems.append(f"{pod} has no gpu-memory.request")
        if not GPU_UUID.match(decision.devices):
            problems.append(f"{pod} has gpus.devices {decision.devices or 'empty'}, not a GPU UUID ({MISMATCHED_PAIR})")
        else:
            uuids[pod] = decision.devices
    if not problems and len(set(uuids.values())) != 1:
        problems.append("the pods are on different GPUs: " + ", ".join(f"{p} on {u}" for p, u in uuids.items()))
    if problems:
        return CheckResult(check, False, "; ".join(problems))
    first = binder_annotations(next(iter(pods.values())))
    return CheckResult(
        check,
        True,
        f"{len(pods)} pods share {next(iter(uuids.values()))} with portion {first.portion} and memory "
        f"request {first.memory_request}",
    )


# ---------------------------------------------------------------- 2. the injected environment


def parse_env(text: str) -> dict[str, str]:
    """`env` output: NAME=value per line (values may contain `=`)."""
    env = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            env[name] = value.strip()
    return env


def decide_env(env: Mapping[str, str], fraction: float, gpu_memory_mib: int) -> CheckResult:
    """CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=<N>M for half a GPU."""
    check = "injected-env"
    if env.get("NVIDIA_VISIBLE_DEVICES") == "void":
        return CheckResult(check, False, f"NVIDIA_VISIBLE_DEVICES=void: {MISMATCHED_PAIR}")
    if not any(name.startswith("CUDA_MPS_") for name in env):
        return CheckResult(
            check,
            False,
            "the container has no CUDA_MPS_* variables: fractiond did not register as an NRI plugin "
            '(kubectl -n gpu-fractioning logs ds/gpu-fractioning-fractiond | grep -i "registering plugin\\|configured '
            'NRI"; on MicroK8s set the socket paths)',
        )
    percentage = expected_percentage(fraction)
    limit = f"0={expected_memory_cap_mib(gpu_memory_mib, fraction)}M"
    problems = []
    thread = env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
    if thread is None or not _number_equals(thread, percentage):
        problems.append(f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={thread}, expected {percentage}")
    pinned = env.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")
    if pinned != limit:
        problems.append(f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={pinned}, expected {limit}")
    if problems:
        return CheckResult(check, False, "; ".join(problems))
    return CheckResult(
        check, True, f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={thread}, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={limit}"
    )


def _number_equals(raw: str, expected: float) -> bool:
    try:
        return math.isclose(float(raw), expected, abs_tol=0.005)
    except ValueError:
        return False


# ---------------------------------------------------------------- 3. the MPS server's namespaces


@dataclass(frozen=True)
class MpsNamespace:
    name: str
    server: str
    pinned_memory_limit: str
    active_thread_percentage: float | None


def parse_namespace_list(text: str) -> list[MpsNamespace]:
    """`nvidia-cuda-mps-control -p 3 namespace list --server=shared`, table or CSV form.

    Table columns: NAME, SERVER, SERVER STATUS, PINNED MEMORY LIMIT, ACTIVE THREAD PERCENTAGE.
    """
    namespaces = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")] if "," in line else line.split()
        if len(fields) < 3 or fields[0].upper() == "NAME":
            continue
        try:
            percentage: float | None = float(fields[-1])
        except ValueError:
            if fields[-1].lower() not in ("unlimited", "-", "n/a"):
                continue
            percentage = None
        namespaces.append(MpsNamespace(fields[0], fields[1], fields[-2], percentage))
    return namespaces


def decide_namespaces(
    namespaces: Sequence[MpsNamespace],
    pods: int,
    fraction: float,
    default_percentage: float = DEFAULT_NAMESPACE_PERCENTAGE,
) -> CheckResult:
    """At least one `kai_*` namespace per pod at the pod's share, none without a cap, and `default`
    at 10.00. Other pods' namespaces at other shares are fine: the server is the node's."""
    check = "mps-namespaces"
    expected = float(expected_percentage(fraction))
    kai = [n for n in namespaces if n.name.startswith(KAI_NAMESPACE_PREFIX)]
    capped = [
        n for n in kai if n.active_thread_percentage is not None and math.isclose(n.active_thread_percentage, expected)
    ]
    uncapped = [n for n in kai if n.active_thread_percentage is None or n.active_thread_percentage >= 100]
    default = next((n for n in namespaces if n.name == "default"), None)
    problems = []
    if uncapped:
        shown = ", ".join(f"{n.name} at {n.active_thread_percentage or 'unlimited'}" for n in uncapped)
        problems.append(f"kai_* namespaces without an SM cap: {shown}")
    if len(capped) < pods:
        others = ", ".join(f"{n.name} at {n.active_thread_percentage}" for n in kai if n not in capped)
        problems.append(
            f"{len(capped)} kai_* namespaces at {expected:.2f}, expected {pods}"
            + (f" (also: {others})" if others else "")
        )
    if default is None:
        problems.append("no default namespace")
    elif default.active_thread_percentage is None or not math.isclose(
        default.active_thread_percentage, default_percentage
    ):
        problems.append(f"default namespace at {default.active_thread_percentage}, expected {default_percentage:.2f}")
    if problems:
        return CheckResult(
            check, False, "; ".join(problems) + " (if you re-ran the test, namespaces can linger ~1 min)"
        )
    return CheckResult(
        check, True, f"{len(capped)} kai_* namespaces at {expected:.2f}, default at {default_percentage:.2f}"
    )


# ---------------------------------------------------------------- 4. the pod's memory view


def parse_memory_total(text: str) -> int | None:
    """`nvidia-smi --query-gpu=memory.total --format=csv,noheader` → MiB of the first GPU."""
    match = re.search(r"^\s*(\d+)\s*MiB\s*$", text, re.M)
    return int(match.group(1)) if match else None


def decide_memory_view(total_mib: int | None, expected_cap_mib: int, physical_mib: int) -> CheckResult:
    """Under a hostile CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 the pod still sees its capped memory."""
    check = "memory-view"
    if total_mib is None:
        return CheckResult(check, False, "nvidia-smi reported no memory.total")
    if total_mib >= physical_mib:
        return CheckResult(
            check,
            False,
            f"the pod sees {total_mib} MiB, the physical card's memory: fractiond's NVML shim is not active",
        )
    if abs(total_mib - expected_cap_mib) > 1:
        return CheckResult(check, False, f"the pod sees {total_mib} MiB, expected its cap of {expected_cap_mib} MiB")
    return CheckResult(check, True, f"the pod sees {total_mib} MiB of {physical_mib} MiB despite the override")


# ---------------------------------------------------------------- the SM share, measured


@dataclass(frozen=True)
class DeviceQuery:
    multiprocessors: int | None
    result: str | None


def parse_device_query(text: str) -> DeviceQuery:
    """deviceQuery's `(054) Multiprocessors, (064) CUDA Cores/MP:` and `Result = PASS` lines."""
    sms = re.search(r"\(\s*(\d+)\)\s*Multiprocessors", text)
    result = re.search(r"Result\s*=\s*(\w+)", text)
    return DeviceQuery(int(sms.group(1)) if sms else None, result.group(1) if result else None)


def decide_sm_share(query: DeviceQuery, sm_count: int, fraction: float) -> CheckResult:
    """About `fraction` of the SMs although the pod asked for 100 %: the MPS server enforces the share."""
    check = "sm-share"
    if query.multiprocessors is None:
        return CheckResult(check, False, f"deviceQuery reported no Multiprocessors line (Result = {query.result})")
    measured = query.multiprocessors
    expected = sm_count * fraction
    if measured >= sm_count:
        return CheckResult(
            check, False, f"{measured} of {sm_count} SMs: the override to 100 % took effect, the share is not enforced"
        )
    if abs(measured - expected) > SM_TOLERANCE:
        return CheckResult(check, False, f"{measured} of {sm_count} SMs, expected about {math.floor(expected)}")
    return CheckResult(
        check,
        True,
        f"{measured} of {sm_count} SMs ({measured / sm_count:.0%}) despite CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100",
    )
