"""The stack configuration's model: every key, its type, default and validation.

The value types (components/config/types.py) say what Kubernetes, the registry, Helm, git and the
driver accept; the models here say which key takes which, and the rules that span keys.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components.config.types import (
    Argument,
    ChartVersion,
    Count,
    Directory,
    DnsLabel,
    DnsSubdomain,
    GitRepository,
    HttpUrl,
    Image,
    ImageTag,
    KindClusterName,
    Number,
    Platform,
    RegistryPath,
    Repository,
    Switch,
    Text,
    driver_version,
    is_kubeconfig_contents,
    oci_chart_problem,
    uses_v_prefix,
    version_order,
)
from components.vocabulary.fractioning import NodeRuntime
from components.vocabulary.kai import DEFAULT_NAMESPACE as KAI_NAMESPACE
from components.vocabulary.kai import DEFAULT_QUEUE
from components.vocabulary.nvidia import MINIMUM_DRIVER_BRANCH, RUNTIME_CLASS

DriverVersion = Annotated[str, Strict(), driver_version(MINIMUM_DRIVER_BRANCH)]


class Model(BaseModel):
    """What every section shares: camelCase keys, no unknown keys, frozen."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, validate_default=True
    )


# Tags that a chart or Makefile falls back to when an override is forgotten: deploying one of
# them means running code that is not the pinned fork.
FALLBACK_TAGS = ("0.0.0", "0.1.0")
COMMIT_PATTERN = re.compile(r"[0-9a-f]{40}")
_CHART_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def _commit(value: str) -> str:
    if not COMMIT_PATTERN.fullmatch(value):
        raise ValueError("must be a full 40-character lowercase commit SHA, not a branch or short SHA")
    return value


Commit = Annotated[str, AfterValidator(_commit)]


class ChartSource(Model):
    """Where a Helm chart comes from: a chart name in `repo`, an `oci://` reference, or a local directory."""

    chart: Text
    """The chart: its name in `repo`, an `oci://` reference, or a local directory."""
    version: ChartVersion | None = None
    """The chart's version; required for a chart from a repository or an OCI registry."""
    repo: HttpUrl | None = None
    """The Helm repository (https) that holds the chart; unset for an `oci://` chart or a local directory."""

    @property
    def is_local(self) -> bool:
        return self.repo is None and not self.chart.startswith("oci://")

    @model_validator(mode="after")
    def _remote_charts_are_pinned(self) -> ChartSource:
        if self.chart.startswith("oci://") and (problem := oci_chart_problem(self.chart)):
            raise ValueError(f"`chart` {problem}")
        if self.repo is not None and not _CHART_NAME.fullmatch(self.chart):
            raise ValueError("with `repo`, `chart` must be the chart's name in that repository")
        if not self.is_local and not self.version:
            raise ValueError("a chart from a repository or OCI registry needs a pinned `version`")
        return self


def defaults_to(default: BaseModel, unless: str | None = None) -> BeforeValidator:
    """A section given in part keeps its default for the keys it leaves out (a chart key given only
    a `version` keeps its chart), unless it sets `unless` (naming a `chart` starts from scratch)."""

    def merge(value: Any) -> Any:
        if isinstance(value, dict) and (unless is None or unless not in value):
            return {**default.model_dump(by_alias=True, exclude_none=True), **value}
        return value

    return BeforeValidator(merge)


def in_style_of(default: ChartSource) -> AfterValidator:
    """The default chart's versions keep their spelling (with or without a leading v): the other
    spelling is no version that chart publishes."""

    def same_style(source: ChartSource) -> ChartSource:
        if (
            (source.chart, source.repo) == (default.chart, default.repo)
            and source.version
            and default.version
            and uses_v_prefix(source.version) != uses_v_prefix(default.version)
        ):
            style = "with" if uses_v_prefix(default.version) else "without"
            raise ValueError(f"{default.chart} publishes its versions {style} a leading v, such as {default.version}")
        return source

    return AfterValidator(same_style)


class ForkPin(Model):
    """A fork's pinned source: the repository, the pull request and the exact commit that is built."""

    repository: GitRepository = Field(examples=["https://github.com/kai-scheduler/KAI-Scheduler.git"])
    """The git repository the fork is cloned from; a mirror holding the same commit will do."""
    pull_request: Annotated[Count, Field(ge=1, le=10**9)] = Field(examples=[2368])
    """The pull request whose head holds the commit (fetched as `pull/<n>/head`)."""
    commit: Commit = Field(examples=["44d1d0a966465c69b1fd0d24b40b9a1ebb73699e"])
    """The full 40-character commit SHA that is built: never a branch or a short SHA."""

    @property
    def short(self) -> str:
        return self.commit[:7]


class RegistryConfig(Model):
    """The registry the fork images are pushed to and pulled from."""

    server: RegistryPath = Field(examples=["registry.example.com/team/kai-fork"])
    """Where the images are pushed: `host[:port][/path]`."""
    username: Argument | None = Field(default=None, examples=["robot$kai"])
    """The user to log in as; the password is `registryPassword`, a secret."""
    pull_secret_name: DnsSubdomain = Field(default="kai-fork-registry", examples=["kai-fork-registry"])
    """The image pull Secret, made from these credentials, that the fork's pods pull with."""

    @property
    def host(self) -> str:
        return self.server.split("/", 1)[0]


ImageMode = Literal["build", "verify", "prebuilt"]


KAI_SCHEDULER_PIN = ForkPin(
    repository="https://github.com/kai-scheduler/KAI-Scheduler.git",
    pull_request=2368,
    commit="44d1d0a966465c69b1fd0d24b40b9a1ebb73699e",
)
GPU_FRACTIONING_PIN = ForkPin(
    repository="https://github.com/kai-scheduler/gpu-fractioning.git",
    pull_request=147,
    commit="af0544e4dbd1d8e03ca14fc1e06d6265fabed99b",
)


class ForksConfig(Model):
    """The KAI-Scheduler and gpu-fractioning forks: their pinned sources, and how their images arrive."""

    kai_scheduler: Annotated[ForkPin, defaults_to(KAI_SCHEDULER_PIN)] = KAI_SCHEDULER_PIN
    """The KAI-Scheduler fork's pin; a pin given in part keeps the rest of the default."""
    gpu_fractioning: Annotated[ForkPin, defaults_to(GPU_FRACTIONING_PIN)] = GPU_FRACTIONING_PIN
    """The gpu-fractioning fork's pin; a pin given in part keeps the rest of the default."""
    tag: ImageTag | None = Field(default=None, examples=["smshare-44d1d0a-af0544e"])
    """One image tag for both forks; by default `smshare-<KAI commit>-<gpu-fractioning commit>`, which records the
    pairing. A chart's or Makefile's fallback tag is refused."""
    images: ImageMode = Field(default="build", examples=["build", "verify", "prebuilt"])
    """How the images arrive: `build` checks the forks out, builds, pushes and verifies them; `verify` only checks that
    someone pushed them; `prebuilt` trusts a mirror made out of band."""
    platform: Platform | None = Field(default=None, examples=["linux/amd64", "linux/amd64,linux/arm64"])
    """The OS/architecture pair to build for (`linux/amd64`), or a comma list of them; by default the building
    machine's."""
    workdir: Directory = Field(default=".forks", examples=[".forks", "/var/tmp/kai-forks"])
    """Where the forks are checked out: relative to the project directory, or absolute."""

    @field_validator("tag")
    @classmethod
    def _not_a_fallback(cls, value: str | None) -> str | None:
        if value in FALLBACK_TAGS:
            raise ValueError(f"{value!r} is a chart or Makefile fallback tag, not a build of the pinned forks")
        return value

    @property
    def image_tag(self) -> str:
        """One tag for both forks; by default it names both commits, so it records the pairing."""
        return self.tag or f"smshare-{self.kai_scheduler.short}-{self.gpu_fractioning.short}"


class DriverConfig(Model):
    """The NVIDIA driver the GPU nodes run."""

    source: Literal["operator", "host"] = Field(default="operator", examples=["operator", "host"])
    """`operator`: the GPU Operator installs `version`; `host`: the nodes' own driver, which must be of the r615 branch
    or newer."""
    version: DriverVersion = Field(default="615.71.09", examples=["615.71.09"])
    """The driver version the GPU Operator installs, of the r615 branch or newer."""


GPU_OPERATOR_CHART = ChartSource(chart="gpu-operator", version="v26.7.1", repo="https://helm.ngc.nvidia.com/nvidia")


# How long `up` waits, after a release is installed, for what the guide verifies before the next step.
ReadyTimeout = Annotated[Count, Field(ge=10, le=4 * 3600)]


class RolloutConfig(Model):
    """How a new driver reaches the GPU nodes: this program drives it node by node (the GPU Operator's
    own upgrade controller is off: it drains no fractional pod)."""

    max_nodes_at_once: Annotated[Count, Field(ge=1, le=1000)] = Field(default=1, examples=[1])
    """How many GPU nodes take the new driver at once; the others keep serving."""
    drain_grace_seconds: Annotated[Count, Field(ge=0, le=24 * 3600)] = Field(default=300, examples=[300])
    """How long a cordoned node's running fractional jobs may go on before they are deleted."""
    node_timeout_seconds: Annotated[Count, Field(ge=60, le=24 * 3600)] = Field(default=2700, examples=[2700])
    """How long one node (or group of `maxNodesAtOnce`) may take from cordon to uncordon, the grace included: the
    driver container may take 21 minutes to build and load, the validator 10."""
    prove_each_node: Switch = True
    """Once a node is uncordoned, a deviceQuery pod there must see its fraction's SM share before the next node is
    taken."""


class GpuOperatorConfig(Model):
    """The NVIDIA GPU Operator release."""

    enabled: Switch = True
    """Install the GPU Operator; false for a cluster whose GPU Operator is managed some other way."""
    namespace: DnsLabel = "gpu-operator"
    """The namespace the GPU Operator is installed in."""
    chart: Annotated[ChartSource, defaults_to(GPU_OPERATOR_CHART, unless="chart"), in_style_of(GPU_OPERATOR_CHART)] = (
        GPU_OPERATOR_CHART
    )
    """The GPU Operator's chart; by default NVIDIA's, at the version this release pins."""
    driver: DriverConfig = DriverConfig()
    """The NVIDIA driver: installed by the operator, or the host's own."""
    rollout: RolloutConfig = RolloutConfig()
    """How a new driver reaches the GPU nodes, one group at a time."""
    ready_timeout_seconds: ReadyTimeout = Field(default=1800, examples=[1800])
    """How long `up` waits for the guide's checks after the install: the driver container alone may take 20 minutes to
    build and load its modules."""

    @property
    def installed_driver(self) -> str | None:
        """The driver version the operator installs; None for a host driver or an operator managed elsewhere."""
        return self.driver.version if self.enabled and self.driver.source == "operator" else None

    @property
    def installed_chart_version(self) -> str | None:
        return self.chart.version if self.enabled else None


PUBLIC_KAI_CHART = ChartSource(chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", version="v0.17.0")


class KaiConfig(Model):
    """The KAI-Scheduler release."""

    namespace: DnsLabel = KAI_NAMESPACE
    """The namespace KAI-Scheduler is installed in."""
    chart: ChartSource | None = Field(
        default=None,
        examples=[PUBLIC_KAI_CHART.model_dump(exclude_none=True)],
    )
    """KAI's chart; by default the fork checkout's chart (fork profile), or the public chart the lab pins."""
    render_config_inline: Switch = True
    """Render KAI's Config resource in the release itself rather than leave it to a post-install hook Job, so a hook
    that does not fire cannot lose it."""
    binder_runtime_class: DnsSubdomain = Field(default=RUNTIME_CLASS, examples=[RUNTIME_CLASS])
    """The RuntimeClass KAI's admission gives fractional pods."""
    ready_timeout_seconds: ReadyTimeout = Field(default=600, examples=[600])
    """How long `up` waits for KAI's Deployments after the install (the guide waits 300 s; the operator creates most of
    them after the chart's)."""


class GpuFractioningConfig(Model):
    """The gpu-fractioning node agents' release: MPS namespaces that enforce each fractional pod's SM share and memory
    cap."""

    namespace: DnsLabel = "gpu-fractioning"
    """The namespace the gpu-fractioning agents are installed in."""
    chart: ChartSource | None = Field(
        default=None,
        examples=[{"chart": "./mirror/gpu-fractioning"}],
    )
    """The gpu-fractioning chart; by default the fork checkout's chart."""
    minimum_gpu_operator_version: Literal["v26.7.1", "v26.7.0"] = Field(default="v26.7.1", examples=["v26.7.1"])
    """The oldest GPU Operator the agents start with: the GPU Operator this stack installs may not be older."""
    node_runtime: NodeRuntime = Field(default="containerd", examples=["containerd", "microk8s", "k3s"])
    """The GPU nodes' container runtime, which says where its CRI and NRI sockets are."""
    ready_timeout_seconds: ReadyTimeout = Field(default=900, examples=[900])
    """How long `up` waits for the operator and the DaemonSets it creates after the install."""


class NodesConfig(Model):
    """The GPU nodes: how many GPUs each has, and how much memory each GPU has."""

    gpus_per_node: Annotated[Count, Field(ge=1, le=256)] = Field(default=8, examples=[8])
    """How many GPUs each GPU node has."""
    # Up to 1 TiB per GPU: far above any GPU made, and small enough to compute with.
    gpu_memory_mib: Annotated[Count, Field(ge=1024, le=1024 * 1024)] = Field(default=40960, examples=[40960])
    """Each GPU's memory in MiB; a fractional pod's memory cap is its share of it."""


def _hundredths(value: float) -> float:
    # KAI accounts fractions at two decimals, and the MPS share is a whole percentage.
    if abs(value * 100 - round(value * 100)) > 1e-9:
        raise ValueError("must be a multiple of 0.01 (the MPS share is a whole percentage)")
    return value


class SmokeTestConfig(Model):
    """The two half-GPU smoke pods that must share one GPU, each in its own MPS namespace, and their proof."""

    enabled: Switch = True
    """Create the smoke pods."""
    namespace: DnsLabel = "default"
    """The namespace the smoke pods run in."""
    queue: DnsLabel = Field(default=DEFAULT_QUEUE, examples=[DEFAULT_QUEUE])
    """The KAI Queue the smoke pods are submitted to; also written as a pod label value."""
    image: Image = Field(
        default="nvidia/cuda:13.3.1-base-ubuntu24.04", examples=["nvidia/cuda:13.3.1-base-ubuntu24.04"]
    )
    """The smoke pods' image."""
    gpu_fraction: Annotated[Number, Field(ge=0.01, le=0.99), AfterValidator(_hundredths)] = Field(
        default=0.5, examples=[0.5]
    )
    """Each smoke pod's share of its GPU, in hundredths, below 1: KAI refuses a gpu-fraction of 1 and above."""
    prove: Switch = True
    """Run the guide's four checks and the SM-share measurement on the smoke pods during `up`."""


def _kubeconfig(value: str) -> str:
    """A path (single line), or the file's contents."""
    if not value.strip():
        raise ValueError("must not be empty")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if not is_kubeconfig_contents(value):
        if value != value.strip():
            raise ValueError("must not start or end with whitespace")
        try:
            Path(value).expanduser()
        except RuntimeError:
            raise ValueError(f"names a home directory this machine does not have ({value.split('/', 1)[0]})") from None
    return value


class ClusterConfig(Model):
    kubeconfig: Annotated[str, AfterValidator(_kubeconfig)] | None = Field(default=None, examples=["~/.kube/config"])
    context: Text | None = Field(default=None, examples=["gpu-cluster"])

    @property
    def kubeconfig_path(self) -> str | None:
        """The kubeconfig as the provider and the client take it: a path with `~` expanded (neither
        expands it), or the file's contents."""
        if self.kubeconfig is None or is_kubeconfig_contents(self.kubeconfig):
            return self.kubeconfig
        return os.path.expanduser(self.kubeconfig)

    @property
    def kubeconfig_is_contents(self) -> bool:
        """The kubeconfig itself, with its credentials, rather than a path to it."""
        return self.kubeconfig is not None and is_kubeconfig_contents(self.kubeconfig)


class GpuProfile(Model):
    count: int = Field(ge=1, examples=[8])
    memory_mib: int = Field(ge=1024, examples=[40960])
    product: str = Field(examples=["NVIDIA-A100-SXM4-40GB"])


# nvml-mock's profiles, as the node labels GPU Feature Discovery would publish for them.
GPU_PROFILES = {"a100": GpuProfile(count=8, memory_mib=40960, product="NVIDIA-A100-SXM4-40GB")}


class KindClusterConfig(Model):
    """The kind cluster the lab creates."""

    name: KindClusterName = Field(default="kai-hami-test", examples=["kai-hami-test"])
    """The kind cluster's name."""


NVML_MOCK_CHART = ChartSource(chart="oci://ghcr.io/nvidia/k8s-test-infra/chart/nvml-mock", version="0.3.0")


class NvmlMockConfig(Model):
    """nvml-mock: fake GPUs that the device plugin and GPU Feature Discovery see as real ones."""

    namespace: DnsLabel = "nvml-mock"
    """The namespace nvml-mock is installed in."""
    build_image: Switch = True
    """Build nvml-mock's image from its pinned source and load it into the kind cluster."""
    source_repository: GitRepository = "https://github.com/NVIDIA/k8s-test-infra.git"
    """The git repository nvml-mock's image is built from."""
    source_commit: Commit = "3b2b865d91b1844baa9feeca2820d2fab65414c7"
    """The full commit SHA nvml-mock's image is built from."""
    chart: Annotated[ChartSource, defaults_to(NVML_MOCK_CHART, unless="chart"), in_style_of(NVML_MOCK_CHART)] = (
        NVML_MOCK_CHART
    )
    """nvml-mock's chart."""
    image_repository: Repository = Field(default="nvml-mock", examples=["nvml-mock"])
    """The repository of nvml-mock's image, as the kind cluster's nodes know it."""
    image_tag: ImageTag = Field(default="local", examples=["local"])
    """The tag of nvml-mock's image."""


ISOLATOR_CHART = ChartSource(chart="oci://docker.io/projecthami/kai-resource-isolator", version="1.1.0-chart")


class IsolatorConfig(Model):
    """The kai-resource-isolator release, which injects HAMi-core into fractional pods."""

    namespace: DnsLabel = "kai-resource-isolator"
    """The namespace kai-resource-isolator is installed in."""
    chart: Annotated[ChartSource, defaults_to(ISOLATOR_CHART, unless="chart"), in_style_of(ISOLATOR_CHART)] = (
        ISOLATOR_CHART
    )
    """kai-resource-isolator's chart."""


def _unique(names: list[str] | None) -> list[str] | None:
    if names is not None:
        if not names:
            raise ValueError("must name at least one node (or be null)")
        if repeated := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"names {', '.join(repeated)} more than once")
    return names


class LabConfig(Model):
    """The laptop lab: kind + nvml-mock + KAI v0.17.0 with HAMi-core + kai-resource-isolator."""

    kind: KindClusterConfig | None = KindClusterConfig()
    """The kind cluster the lab creates; null to use the cluster the stack is given (`cluster`, or a component's
    `kubeconfig`), as it is."""
    gpu_profile: Literal["a100"] = Field(default="a100", examples=["a100"])
    """The fake GPUs nvml-mock serves on each node."""
    gpu_nodes: Annotated[list[DnsSubdomain] | None, AfterValidator(_unique)] = Field(
        default=None, examples=[["kai-hami-test-control-plane"]]
    )
    """The nodes labelled as GPU nodes; by default the kind cluster's control-plane node."""
    nvml_mock: NvmlMockConfig = NvmlMockConfig()
    """nvml-mock, which serves the fake GPUs."""
    device_plugin_image: Image = Field(
        default="nvcr.io/nvidia/k8s-device-plugin:v0.18.2", examples=["nvcr.io/nvidia/k8s-device-plugin:v0.18.2"]
    )
    """The NVIDIA device plugin's image, which advertises the fake GPUs."""
    isolator: IsolatorConfig = IsolatorConfig()
    """kai-resource-isolator, which injects HAMi-core into fractional pods."""
    await_workloads: Switch = True
    """Wait for the lab's whole-GPU pod to run; false to leave it pending."""
    prove: Switch = True
    """Check allocatable GPUs, queue accounting, the isolator's injection and the reservation boundary during `up`."""

    @property
    def gpu(self) -> GpuProfile:
        return GPU_PROFILES[self.gpu_profile]

    @property
    def node_names(self) -> list[str]:
        if self.gpu_nodes:
            return self.gpu_nodes
        if self.kind is not None:
            return [f"{self.kind.name}-control-plane"]
        return []

    @model_validator(mode="after")
    def _nodes_known(self) -> LabConfig:
        if not self.node_names:
            raise ValueError("without a kind cluster, name the GPU nodes to label in `gpuNodes`")
        return self


# The rows of the build guide's prerequisites table that preflight checks.
CheckId = Literal[
    "cluster-admin",
    "gpu-operator-version",
    "runtime-class",
    "gpu-present-label",
    "gpu-memory-label",
    "container-runtime",
    "nri-socket",
    "driver-version",
    "mps-namespace",
    "fabricmanager",
    "mpsd-memory",
    "allocatable-gpus",
]


def _ssh_command(command: list[str]) -> list[str]:
    if not command:
        raise ValueError('must name the ssh program, such as ["ssh", "-o", "BatchMode=yes"]')
    if command[0].startswith("-"):
        raise ValueError("must start with the ssh program, not an option")
    return command


def _ssh_user(user: str | None) -> str | None:
    if user is not None and ("@" in user or " " in user):
        raise ValueError("must be a user name alone, without '@' or spaces")
    return user


class SshAccessConfig(Model):
    """Host rows read over SSH, from the machine that runs Pulumi."""

    command: Annotated[list[Text], AfterValidator(_ssh_command)] = Field(
        default=["ssh", "-o", "BatchMode=yes"], examples=[["ssh", "-o", "BatchMode=yes"]]
    )
    """The ssh program and its options."""
    user: Annotated[Argument | None, AfterValidator(_ssh_user)] = Field(default=None, examples=["ubuntu"])
    """The user to log in as, without `@`; by default ssh's own choice."""
    addresses: dict[DnsSubdomain, Argument] = Field(default={}, examples=[{"gpu-node-0": "10.0.0.5"}])
    """Node name to SSH host; by default the node's name."""
    timeout_seconds: Annotated[Count, Field(ge=1, le=3600)] = Field(default=60, examples=[60])
    """How long the host checks of one node may take."""


class CheckPodAccessConfig(Model):
    """A short-lived privileged pod per GPU node: it is created during preview too."""

    namespace: DnsLabel = Field(default="kube-system", examples=["kube-system"])
    """The namespace the check pods run in."""
    image: Image = Field(default="busybox:1.37", examples=["busybox:1.37"])
    """The check pods' image."""
    timeout_seconds: Annotated[Count, Field(ge=10, le=3600)] = Field(default=120, examples=[120])
    """How long the host checks of one node may take."""


class HostAccessConfig(Model):
    """How preflight reads the rows it can only read on the GPU nodes themselves: over SSH or through a check pod,
    exactly one."""

    ssh: SshAccessConfig | None = Field(default=None, examples=[{"user": "ubuntu"}])
    """Read the host rows over SSH."""
    check_pod: CheckPodAccessConfig | None = Field(default=None, examples=[{"namespace": "kube-system"}])
    """Read the host rows through a short-lived privileged pod on each GPU node."""

    @model_validator(mode="after")
    def _one_way(self) -> HostAccessConfig:
        if (self.ssh is None) == (self.check_pod is None):
            raise ValueError("must set exactly one of `ssh` and `checkPod` (or set hostAccess to null)")
        return self


def _unique_rows(rows: list[str]) -> list[str]:
    if len(set(rows)) != len(rows):
        raise ValueError("names a row more than once")
    return rows


class PreflightConfig(Model):
    """The checks of the build guide's prerequisites table, on the cluster as it is, before anything is installed."""

    enabled: Switch = True
    """Run the checks at every preview and `up`."""
    warn_only: Annotated[list[CheckId], AfterValidator(_unique_rows)] = Field(default=[], examples=[["fabricmanager"]])
    """Rows that only warn instead of stopping `up`."""
    host_access: HostAccessConfig | None = None
    """How the host rows are read; null to report them as not checked."""


def _unique_namespaces(names: list[str]) -> list[str]:
    if len(set(names)) != len(names):
        raise ValueError("names a namespace more than once")
    return names


# What the stack warns of when admission.enabled is false.
ADMISSION_OFF = (
    "admission.enabled is false: no admission policy holds the cluster's fractional pods to the guide's "
    "rules, so a pod that runs as root, or outside the nvidia runtime, can raise its own GPU share or reach "
    "its neighbours' MPS pipes; the policy pack sees only the pods a Pulumi program registers"
)


class AdmissionConfig(Model):
    """The admission policy that holds every fractional pod in the cluster to the guide's rules
    (components/gpu_cluster/fraction_admission.py)."""

    enabled: Switch = True
    """Install the admission policy; off, every preview and `up` warns that the pack then guards this stack's pods
    alone."""
    mode: Literal["deny", "warn", "audit"] = Field(default="deny", examples=["deny", "warn", "audit"])
    """`deny` refuses a fractional pod that breaks a rule; `warn` admits it with the message as a warning; `audit` only
    records it."""
    runtime_class: DnsSubdomain | None = Field(
        default=None,
        examples=[RUNTIME_CLASS],
    )
    """The RuntimeClass every fractional pod must name; by default `kai.binderRuntimeClass`, the one KAI's admission
    gives fractional pods."""
    exempt_namespaces: Annotated[list[DnsLabel], AfterValidator(_unique_namespaces)] = Field(
        default=[], examples=[["gpu-operator", "kai-scheduler", "gpu-fractioning"]]
    )
    """Existing namespaces of GPU daemons this stack does not install, labelled as system namespaces so that their
    non-fractional GPU pods may go without the runtime class (the namespaces it creates are labelled already)."""
    ready_timeout_seconds: ReadyTimeout = Field(default=120, examples=[120])
    """How long `up` waits for the admission policy to hold after the install."""


class StackConfig(Model):
    """The whole stack configuration, read once from `pulumi config`."""

    profile: Literal["fork", "lab", "admission"] = Field(default="fork", examples=["fork", "lab", "admission"])
    cluster: ClusterConfig = ClusterConfig()
    registry: RegistryConfig | None = None
    forks: ForksConfig = ForksConfig()
    gpu_operator: GpuOperatorConfig = GpuOperatorConfig()
    kai: KaiConfig = KaiConfig()
    gpu_fractioning: GpuFractioningConfig = GpuFractioningConfig()
    nodes: NodesConfig = NodesConfig()
    smoke_test: SmokeTestConfig = SmokeTestConfig()
    lab: LabConfig = LabConfig()
    preflight: PreflightConfig = PreflightConfig()
    admission: AdmissionConfig = AdmissionConfig()

    @property
    def fork_registry(self) -> RegistryConfig:
        """The fork profile's registry, which reading the config requires."""
        if self.registry is None:
            raise ValueError("the fork profile needs a registry")
        return self.registry

    def cross_key_problems(self) -> list[tuple[str, str]]:
        """Rules between sections, as (key path, reason with the fix): the GPU Operator this stack
        installs must be one gpu-fractioning starts with; the admission policy must ask fractional
        pods for the runtime class KAI gives them."""
        problems = []
        admission, kai = self.admission, self.kai
        for index, namespace in enumerate(admission.exempt_namespaces):
            if namespace in self.created_namespaces:
                problems.append(
                    (
                        f"admission.exemptNamespaces[{index}]",
                        f"{namespace} is a namespace this stack creates, and labels as a system namespace "
                        "already; list only namespaces that exist without this stack; for example: "
                        '"gpu-operator"',
                    )
                )
        chosen = admission.runtime_class
        if self.profile != "admission" and admission.enabled and chosen not in (None, kai.binder_runtime_class):
            problems.append(
                (
                    "admission.runtimeClass",
                    f"{chosen} is not kai.binderRuntimeClass ({kai.binder_runtime_class}), the runtime class "
                    "KAI gives fractional pods, so the policy would refuse them; leave it unset or set both to "
                    f'one name; for example: "{kai.binder_runtime_class}"',
                )
            )
        operator, minimum = self.gpu_operator, self.gpu_fractioning.minimum_gpu_operator_version
        version = operator.chart.version
        if self.profile == "fork" and operator.enabled and version is not None:
            order, floor = version_order(version), version_order(minimum)
            if order is not None and floor is not None and order < floor:
                spelled = minimum if uses_v_prefix(version) else minimum.removeprefix("v")
                problems.append(
                    (
                        "gpuOperator.chart.version",
                        f"{version} is older than {minimum}, the oldest GPU Operator gpu-fractioning starts with "
                        f"(gpuFractioning.minimumGpuOperatorVersion); pin {spelled} or newer; "
                        f'for example: "{spelled}"',
                    )
                )
        return problems

    @property
    def fraction_runtime_class(self) -> str:
        """The RuntimeClass the admission policy asks of every fractional pod."""
        return self.admission.runtime_class or self.kai.binder_runtime_class

    @property
    def created_namespaces(self) -> frozenset[str]:
        """The namespaces the configured profile creates for the releases it installs."""
        if self.profile == "fork":
            operator = {self.gpu_operator.namespace} if self.gpu_operator.enabled else set()
            return frozenset({*operator, self.kai.namespace, self.gpu_fractioning.namespace})
        if self.profile == "lab":
            return frozenset({self.lab.nvml_mock.namespace, self.lab.isolator.namespace, self.kai.namespace})
        return frozenset()

    @property
    def kai_chart(self) -> ChartSource | None:
        """The KAI chart: configured, else the fork checkout's (fork) or the public v0.17.0 (lab)."""
        return self.kai.chart or (PUBLIC_KAI_CHART if self.profile == "lab" else None)

    @property
    def gpu_side_versions(self) -> dict[str, str]:
        """What fractional pods run on, in install order, as the stack asks for it: a change of any
        entry is a new install for every gate after it and for the proof to check again."""
        if self.profile == "lab":
            lab = self.lab
            return {
                "nvmlMock": _chart_label(lab.nvml_mock.chart),
                "kaiScheduler": _chart_label(self.kai_chart),
                "kaiResourceIsolator": _chart_label(lab.isolator.chart),
            }
        operator, forks = self.gpu_operator, self.forks
        return {
            "driver": operator.installed_driver or "the host's",
            "gpuOperator": _chart_label(operator.chart) if operator.enabled else "not managed by this stack",
            "kaiScheduler": _fork_label(forks.kai_scheduler.commit, self.kai.chart),
            "gpuFractioning": _fork_label(forks.gpu_fractioning.commit, self.gpu_fractioning.chart),
            "images": forks.image_tag,
        }

    def gpu_side_versions_up_to(self, name: str) -> dict[str, str]:
        """The GPU-side versions installed up to and including `name`."""
        versions = list(self.gpu_side_versions.items())
        return dict(versions[: [key for key, _ in versions].index(name) + 1])


def _chart_label(chart: ChartSource | None) -> str:
    if chart is None:
        return ""
    return f"{chart.chart} {chart.version}" if chart.version else chart.chart


def _fork_label(commit: str, chart: ChartSource | None) -> str:
    return f"fork {commit}" + (f" with chart {_chart_label(chart)}" if chart is not None else "")
