"""Typed stack configuration: the one place where keys, defaults and validation live."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from components.preflight import PreflightConfig

PROJECT = "kai-gpu-fractions"
SECRET_KEYS = ("registryPassword",)

# Tags that a chart or Makefile falls back to when an override is forgotten: deploying one of
# them means running code that is not the pinned fork.
FORBIDDEN_TAGS = ("", "0.0.0", "0.1.0", "latest")
TAG_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")


class ConfigError(Exception):
    """Raised with one message that lists every invalid config key."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class ChartSource(_Model):
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


class ForkPin(_Model):
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


class Registry(_Model):
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


class Forks(_Model):
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


class Driver(_Model):
    source: Literal["operator", "host"] = Field(default="operator", examples=["operator", "host"])
    version: str = Field(default="615.71.09", examples=["615.71.09"])

    @field_validator("version")
    @classmethod
    def _r615_or_newer(cls, value: str) -> str:
        major = value.split(".", 1)[0]
        if not major.isdigit() or int(major) < 615:
            raise ValueError("must be an r615 or newer driver (MPS v3 namespaces need it)")
        return value


class GpuOperator(_Model):
    enabled: bool = True
    namespace: str = "gpu-operator"
    chart: ChartSource = ChartSource(chart="gpu-operator", version="v26.7.1", repo="https://helm.ngc.nvidia.com/nvidia")
    driver: Driver = Driver()


class Kai(_Model):
    namespace: str = "kai-scheduler"
    chart: ChartSource | None = Field(default=None, description="default: the fork checkout's chart")
    # The Config CR is otherwise applied by a post-install hook Job; rendering it inline keeps it in
    # the release itself, so it cannot be lost when a hook does not fire.
    render_config_inline: bool = True
    binder_runtime_class: str = Field(default="nvidia", examples=["nvidia"])


NodeRuntime = Literal["containerd", "microk8s", "k3s", "rke2"]


class GpuFractioning(_Model):
    namespace: str = "gpu-fractioning"
    chart: ChartSource | None = Field(default=None, description="default: the fork checkout's chart")
    minimum_gpu_operator_version: Literal["v26.7.1", "v26.7.0"] = Field(default="v26.7.1", examples=["v26.7.1"])
    node_runtime: NodeRuntime = Field(default="containerd", examples=["containerd", "microk8s", "k3s"])


class Nodes(_Model):
    gpus_per_node: int = Field(default=8, ge=1, le=256, examples=[8])
    gpu_memory_mib: int = Field(default=40960, ge=1024, examples=[40960])


class SmokeTest(_Model):
    enabled: bool = True
    namespace: str = "default"
    queue: str = Field(default="default-queue", examples=["default-queue"])
    image: str = Field(default="nvidia/cuda:13.3.1-base-ubuntu24.04")
    gpu_fraction: Annotated[float, Field(gt=0, le=1)] = 0.5
    # Runs the guide's four checks and the SM-share measurement on the smoke pods during `up`.
    prove: bool = True


class Cluster(_Model):
    kubeconfig: str | None = Field(default=None, examples=["~/.kube/config"])
    context: str | None = Field(default=None, examples=["gpu-cluster"])


PUBLIC_KAI_CHART = ChartSource(chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", version="v0.17.0")


class GpuProfile(_Model):
    count: int = Field(ge=1, examples=[8])
    memory_mib: int = Field(ge=1024, examples=[40960])
    product: str = Field(examples=["NVIDIA-A100-SXM4-40GB"])


# nvml-mock's profiles, as the node labels GPU Feature Discovery would publish for them.
GPU_PROFILES = {"a100": GpuProfile(count=8, memory_mib=40960, product="NVIDIA-A100-SXM4-40GB")}


class KindCluster(_Model):
    name: str = Field(default="kai-hami-test", examples=["kai-hami-test"])


class NvmlMock(_Model):
    namespace: str = "nvml-mock"
    build_image: bool = True
    source_repository: str = "https://github.com/NVIDIA/k8s-test-infra.git"
    source_commit: str = Field(default="3b2b865d91b1844baa9feeca2820d2fab65414c7", pattern=COMMIT_PATTERN.pattern)
    chart: ChartSource = ChartSource(chart="oci://ghcr.io/nvidia/k8s-test-infra/chart/nvml-mock", version="0.3.0")
    image_repository: str = "nvml-mock"
    image_tag: str = "local"


class Isolator(_Model):
    namespace: str = "kai-resource-isolator"
    chart: ChartSource = ChartSource(chart="oci://docker.io/projecthami/kai-resource-isolator", version="1.1.0-chart")


class Lab(_Model):
    """The laptop lab: kind + nvml-mock + KAI v0.17.0 with HAMi-core + kai-resource-isolator."""

    kind: KindCluster | None = Field(default=KindCluster(), description="null: use `cluster` as it is")
    gpu_profile: Literal["a100"] = Field(default="a100", examples=["a100"])
    gpu_nodes: list[str] | None = Field(default=None, examples=[["kai-hami-test-control-plane"]])
    nvml_mock: NvmlMock = NvmlMock()
    device_plugin_image: str = "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    isolator: Isolator = Isolator()
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
    def _nodes_known(self) -> Lab:
        if not self.node_names:
            raise ValueError("without a kind cluster, name the GPU nodes to label in `gpuNodes`")
        return self


class StackConfig(_Model):
    """The whole stack configuration, read once from `pulumi config`."""

    profile: Literal["fork", "lab"] = Field(default="fork", examples=["fork", "lab"])
    cluster: Cluster = Cluster()
    registry: Registry | None = None
    forks: Forks = Forks()
    gpu_operator: GpuOperator = GpuOperator()
    kai: Kai = Kai()
    gpu_fractioning: GpuFractioning = GpuFractioning()
    nodes: Nodes = Nodes()
    smoke_test: SmokeTest = SmokeTest()
    lab: Lab = Lab()
    preflight: PreflightConfig = PreflightConfig()

    @property
    def kai_chart(self) -> ChartSource | None:
        """The KAI chart: configured, else the fork checkout's (fork) or the public v0.17.0 (lab)."""
        return self.kai.chart or (PUBLIC_KAI_CHART if self.profile == "lab" else None)


def _example_for(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The documented example of the field a validation error points at, if any."""
    current: type[BaseModel] | None = model
    examples: list[Any] | None = None
    for part in loc:
        if current is None:
            break
        field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
        if field is None:
            return None
        examples = field.examples
        current = _nested_model(field.annotation)
    if examples:
        return json.dumps(examples[0])
    if current is not None:
        required = {
            f.alias or n: f.examples[0] for n, f in current.model_fields.items() if f.is_required() and f.examples
        }
        return json.dumps(required) if required else None
    return None


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    for candidate in getattr(annotation, "__args__", None) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _describe(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    loc = tuple(error["loc"])
    path = f"{PROJECT}:{loc[0]}" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc[1:])
    reason = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        reason = "is not a known key (check the spelling; see Pulumi.yaml for the schema)"
    elif error["type"] == "missing":
        reason = "is required"
    example = _example_for(model, loc)
    hint = f"; for example: {example}" if example else ""
    return f"  - {path}: {reason}{hint}"


def parse_config(raw: Mapping[str, Any], secret_keys: frozenset[str] = frozenset()) -> StackConfig:
    """Validate raw `pulumi config` values (keys without the project prefix, values as stored).

    Raises ConfigError naming every bad key with the reason and a valid example.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key in SECRET_KEYS:
            if key not in secret_keys:
                problems.append(
                    f"  - {PROJECT}:{key}: must be stored encrypted; run `pulumi config set --secret {key} <value>`"
                )
            continue
        values[key] = _decode(value)
    if values.get("profile", "fork") == "fork" and "registry" not in values:
        problems.append(
            f"  - {PROJECT}:registry: is required for the fork profile; "
            'for example: {"server": "registry.example.com/team/kai-fork"}'
        )
    if "registryPassword" in raw and not _as_dict(values.get("registry")).get("username"):
        problems.append(
            f'  - {PROJECT}:registry.username: is required when registryPassword is set; for example: "robot$kai"'
        )
    try:
        config = StackConfig.model_validate(values)
    except ValidationError as error:
        problems += [_describe(e, StackConfig) for e in error.errors()]
        config = None
    if problems or config is None:
        raise ConfigError("Invalid stack configuration:\n" + "\n".join(problems))
    return config


def _decode(value: Any) -> Any:
    """Structured config arrives as JSON text; scalars stay strings for pydantic to coerce."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def load_from_pulumi() -> tuple[StackConfig, Any]:
    """Reads this project's keys from the running stack's config; returns the model and the
    registry password as a Pulumi secret Output (or None)."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    prefix = f"{PROJECT}:"
    stored = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    raw = {key.removeprefix(prefix): value for key, value in stored.items() if key.startswith(prefix)}
    secret = frozenset(key for key in raw if runtime_config.is_config_secret(prefix + key))
    config = parse_config(raw, secret)
    return config, pulumi.Config(PROJECT).get_secret("registryPassword")
