"""What each fork is: where its chart lives, how its Makefile builds, which images it must push."""

from __future__ import annotations

from dataclasses import dataclass

from components.config.model import ForkPin, ForksConfig


@dataclass(frozen=True)
class ForkRecipe:
    key: str
    # The fork's pin in the stack config: the ForksConfig field and its key as users write it.
    config_field: str
    config_key: str
    checkout_dir: str
    chart_path: str
    image_path: str
    images: tuple[str, ...]
    make_command: str
    chart_needs_dependencies: bool
    # The Makefile variables that take the tag and the platform, and what else the guide passes.
    tag_variable: str
    platform_variable: str
    extra_variables: tuple[tuple[str, str], ...] = ()

    def pin(self, forks: ForksConfig) -> ForkPin:
        pin: ForkPin = getattr(forks, self.config_field)
        return pin

    def repo_base(self, registry_server: str) -> str:
        """Where this fork's images live: `<repo_base>/<image>:<tag>`."""
        return f"{registry_server}/{self.image_path}"

    def image_references(self, registry_server: str, tag: str) -> dict[str, str]:
        return {image: f"{self.repo_base(registry_server)}/{image}:{tag}" for image in self.images}

    def build_variables(self, registry_server: str, tag: str, platform: str | None) -> dict[str, str]:
        """The exact Makefile variables the build guide passes for this fork, in its order."""
        variables = {"DOCKER_REPO_BASE": self.repo_base(registry_server), self.tag_variable: tag}
        variables |= dict(self.extra_variables)
        if platform:
            variables[self.platform_variable] = platform
        return variables


KAI_SCHEDULER = ForkRecipe(
    key="kai-scheduler",
    config_field="kai_scheduler",
    config_key="forks.kaiScheduler",
    checkout_dir="KAI-Scheduler",
    chart_path="deployments/kai-scheduler",
    image_path="kai-scheduler",
    # The pinned fork ships `helm-hooks` where upstream KAI builds `crd-upgrader`.
    images=(
        "podgrouper",
        "scheduler",
        "binder",
        "resourcereservation",
        "snapshot-tool",
        "scalingpod",
        "nodescaleadjuster",
        "podgroupcontroller",
        "queuecontroller",
        "fairshare-simulator",
        "admission",
        "operator",
        "time-based-fairshare-simulator",
        "numa-placement-exporter",
        "helm-hooks",
    ),
    make_command="make build",
    chart_needs_dependencies=True,
    tag_variable="DOCKER_TAG",
    platform_variable="DOCKER_BUILD_PLATFORM",
    # `make push` is only an alias of `make build`: buildx pushes only with this flag.
    extra_variables=(("DOCKER_BUILDX_ADDITIONAL_ARGS", "--push"),),
)

GPU_FRACTIONING = ForkRecipe(
    key="kai-gpu-fractioning",
    config_field="gpu_fractioning",
    config_key="forks.gpuFractioning",
    checkout_dir="kai-gpu-fractioning",
    chart_path="operator/charts",
    image_path="kai-gpu-fractioning",
    images=("operator", "mpsd", "fractiond", "metricsd"),
    make_command="make docker-build docker-push",
    chart_needs_dependencies=False,
    tag_variable="VERSION",
    platform_variable="PLATFORM",
)
