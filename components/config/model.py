"""The stack configuration's model: every key, its type, default and validation."""

from __future__ import annotations

import os
import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """What every section shares: camelCase keys, no unknown keys, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


# Tags that a chart or Makefile falls back to when an override is forgotten: deploying one of
# them means running code that is not the pinned fork.
FORBIDDEN_TAGS = ("", "0.0.0", "0.1.0", "latest")
TAG_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")


class ChartSource(Model):
    """Where a Helm chart comes from: a chart name in `repo`, an `oci://` reference, or a local directory."""

    chart: str = Field(examples=["gpu-operator", "oci://ghcr.io/org/charts/name", "./mirror/gpu-operator"])
    version: str | None = Field(default=None, examples=["v26.7.1"])
    repo: str | None = Field(default=None, examples=["https://helm.ngc.nvidia.com/nvidia"])

    @property
    def is_local(self) -> bool:
        return self.repo is None and not self.chart.startswith("oci://")

    @model_validator(mode="after")
    def _remote_charts_are_pinned(self) -> ChartSource:
        if not self.is_local and not self.version:
            raise ValueError("a chart from a repository or OCI registry needs a pinned `version`")
        return self


class ForkPin(Model):
    repository: str = Field(examples=["https://github.com/kai-scheduler/KAI-Scheduler.git"])
    pull_request: int = Field(ge=1, examples=[2368])
    commit: str = Field(examples=["44d1d0a966465c69b1fd0d24b40b9a1ebb73699e"])

    @field_validator("commit")
    @classmethod
    def _full_sha(cls, value: str) -> str:
        if not COMMIT_PATTERN.fullmatch(value):
            raise ValueError("must be a full 40-character lowercase commit SHA, not a branch or short SHA")
        return value

    @property
    def short(self) -> str:
        return self.commit[:7]


class RegistryConfig(Model):
    server: str = Field(examples=["registry.example.com/team/kai-fork"])
    username: str | None = Field(default=None, examples=["robot$kai"])
    pull_secret_name: str = Field(default="kai-fork-registry", examples=["kai-fork-registry"])

    @field_validator("server")
    @classmethod
    def _no_scheme_or_tag(cls, value: str) -> str:
        if "://" in value or value.endswith("/") or not value:
            raise ValueError("must be a registry host and path without scheme or trailing slash")
        return value

    @property
    def host(self) -> str:
        return self.server.split("/", 1)[0]


ImageMode = Literal["build", "verify", "prebuilt"]


class ForksConfig(Model):
    kai_scheduler: ForkPin = ForkPin(
        repository="https://github.com/kai-scheduler/KAI-Scheduler.git",
        pull_request=2368,
        commit="44d1d0a966465c69b1fd0d24b40b9a1ebb73699e",
    )
    gpu_fractioning: ForkPin = ForkPin(
        repository="https://github.com/kai-scheduler/gpu-fractioning.git",
        pull_request=147,
        commit="af0544e4dbd1d8e03ca14fc1e06d6265fabed99b",
    )
    tag: str | None = Field(default=None, examples=["smshare-44d1d0a-af0544e"])
    images: ImageMode = Field(default="build", examples=["build", "verify", "prebuilt"])
    platform: str | None = Field(default=None, examples=["linux/amd64"])
    workdir: str = Field(default=".forks", examples=[".forks", "/var/tmp/kai-forks"])

    @field_validator("tag")
    @classmethod
    def _usable_tag(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if value in FORBIDDEN_TAGS:
            raise ValueError(f"{value!r} is a chart or Makefile fallback tag, not a build of the pinned forks")
        if not TAG_PATTERN.fullmatch(value):
            raise ValueError("is not a valid image tag")
        return value

    @property
    def image_tag(self) -> str:
        """One tag for both forks; by default it names both commits, so it records the pairing."""
        return self.tag or f"smshare-{self.kai_scheduler.short}-{self.gpu_fractioning.short}"


class DriverConfig(Model):
    source: Literal["operator", "host"] = Field(default="operator", examples=["operator", "host"])
    version: str = Field(default="615.71.09", examples=["615.71.09"])

    @field_validator("version")
    @classmethod
    def _r615_or_newer(cls, value: str) -> str:
        major = value.split(".", 1)[0]
        if not major.isdigit() or int(major) < 615:
            raise ValueError("must be an r615 or newer driver (MPS v3 namespaces need it)")
        return value


class GpuOperatorConfig(Model):
    enabled: bool = True
    namespace: str = "gpu-operator"
    chart: ChartSource = ChartSource(chart="gpu-operator", version="v26.7.1", repo="https://helm.ngc.nvidia.com/nvidia")
    driver: DriverConfig = DriverConfig()


class KaiConfig(Model):
    namespace: str = "kai-scheduler"
    chart: ChartSource | None = Field(default=None, description="default: the fork checkout's chart")
    # The Config CR is otherwise applied by a post-install hook Job; rendering it inline keeps it in
    # the release itself, so it cannot be lost when a hook does not fire.
    render_config_inline: bool = True
    binder_runtime_class: str = Field(default="nvidia", examples=["nvidia"])


NodeRuntime = Literal["containerd", "microk8s", "k3s", "rke2"]


class GpuFractioningConfig(Model):
    namespace: str = "gpu-fractioning"
    chart: ChartSource | None = Field(default=None, description="default: the fork checkout's chart")
    minimum_gpu_operator_version: Literal["v26.7.1", "v26.7.0"] = Field(default="v26.7.1", examples=["v26.7.1"])
    node_runtime: NodeRuntime = Field(default="containerd", examples=["containerd", "microk8s", "k3s"])


class NodesConfig(Model):
    gpus_per_node: int = Field(default=8, ge=1, le=256, examples=[8])
    gpu_memory_mib: int = Field(default=40960, ge=1024, examples=[40960])


class SmokeTestConfig(Model):
    enabled: bool = True
    namespace: str = "default"
    queue: str = Field(default="default-queue", examples=["default-queue"])
    image: str = Field(default="nvidia/cuda:13.3.1-base-ubuntu24.04")
    gpu_fraction: Annotated[float, Field(gt=0, le=1)] = 0.5
    # Runs the guide's four checks and the SM-share measurement on the smoke pods during `up`.
    prove: bool = True


class ClusterConfig(Model):
    kubeconfig: str | None = Field(default=None, examples=["~/.kube/config"])
    context: str | None = Field(default=None, examples=["gpu-cluster"])

    @property
    def kubeconfig_path(self) -> str | None:
        """The kubeconfig as the provider and the client take it: a path with `~` expanded (neither
        expands it), or the file's contents."""
        return os.path.expanduser(self.kubeconfig) if self.kubeconfig else None


PUBLIC_KAI_CHART = ChartSource(chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", version="v0.17.0")


class GpuProfile(Model):
    count: int = Field(ge=1, examples=[8])
    memory_mib: int = Field(ge=1024, examples=[40960])
    product: str = Field(examples=["NVIDIA-A100-SXM4-40GB"])


# nvml-mock's profiles, as the node labels GPU Feature Discovery would publish for them.
GPU_PROFILES = {"a100": GpuProfile(count=8, memory_mib=40960, product="NVIDIA-A100-SXM4-40GB")}


class KindClusterConfig(Model):
    name: str = Field(default="kai-hami-test", examples=["kai-hami-test"])


class NvmlMockConfig(Model):
    namespace: str = "nvml-mock"
    build_image: bool = True
    source_repository: str = "https://github.com/NVIDIA/k8s-test-infra.git"
    source_commit: str = Field(default="3b2b865d91b1844baa9feeca2820d2fab65414c7", pattern=COMMIT_PATTERN.pattern)
    chart: ChartSource = ChartSource(chart="oci://ghcr.io/nvidia/k8s-test-infra/chart/nvml-mock", version="0.3.0")
    image_repository: str = "nvml-mock"
    image_tag: str = "local"


class IsolatorConfig(Model):
    namespace: str = "kai-resource-isolator"
    chart: ChartSource = ChartSource(chart="oci://docker.io/projecthami/kai-resource-isolator", version="1.1.0-chart")


class LabConfig(Model):
    """The laptop lab: kind + nvml-mock + KAI v0.17.0 with HAMi-core + kai-resource-isolator."""

    kind: KindClusterConfig | None = Field(default=KindClusterConfig(), description="null: use `cluster` as it is")
    gpu_profile: Literal["a100"] = Field(default="a100", examples=["a100"])
    gpu_nodes: list[str] | None = Field(default=None, examples=[["kai-hami-test-control-plane"]])
    nvml_mock: NvmlMockConfig = NvmlMockConfig()
    device_plugin_image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    isolator: IsolatorConfig = IsolatorConfig()
    await_workloads: bool = Field(default=True, description="false: do not wait for the whole-GPU pod to run")
    # Checks allocatable GPUs, queue accounting, the isolator's injection and the reservation boundary.
    prove: bool = True

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


class SshAccessConfig(Model):
    command: list[str] = Field(default=["ssh", "-o", "BatchMode=yes"], examples=[["ssh", "-o", "BatchMode=yes"]])
    user: str | None = Field(default=None, examples=["ubuntu"])
    addresses: dict[str, str] = Field(default={}, description="node name → SSH host; default: the node name")
    timeout_seconds: int = Field(default=60, ge=1)


class CheckPodAccessConfig(Model):
    """A short-lived privileged pod per GPU node: it is created during preview too."""

    namespace: str = Field(default="kube-system", examples=["kube-system"])
    image: str = Field(default="busybox:1.37", examples=["busybox:1.37"])
    timeout_seconds: int = Field(default=120, ge=10)


class HostAccessConfig(Model):
    ssh: SshAccessConfig | None = None
    check_pod: CheckPodAccessConfig | None = None


class PreflightConfig(Model):
    enabled: bool = True
    warn_only: list[CheckId] = Field(default=[], examples=[["fabricmanager"]])
    host_access: HostAccessConfig | None = Field(
        default=None, description="null: host rows are reported as not checked"
    )


class StackConfig(Model):
    """The whole stack configuration, read once from `pulumi config`."""

    profile: Literal["fork", "lab"] = Field(default="fork", examples=["fork", "lab"])
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

    @property
    def fork_registry(self) -> RegistryConfig:
        """The fork profile's registry, which reading the config requires."""
        if self.registry is None:
            raise ValueError("the fork profile needs a registry")
        return self.registry

    @property
    def kai_chart(self) -> ChartSource | None:
        """The KAI chart: configured, else the fork checkout's (fork) or the public v0.17.0 (lab)."""
        return self.kai.chart or (PUBLIC_KAI_CHART if self.profile == "lab" else None)
