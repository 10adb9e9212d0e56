"""What each fork is: where its chart lives, how its Makefile builds, which images it must push."""

from __future__ import annotations

from dataclasses import dataclass

from components.config.model import ForkPin, ForksConfig


@dataclass(frozen=True)
class ForkRecipe:
    key: str
    config_key: str
    checkout_dir: str
    chart_path: str
    image_path: str
    images: tuple[str, ...]
    make_command: str
    chart_needs_dependencies: bool

    def pin(self, forks: ForksConfig) -> ForkPin:
        return forks.kai_scheduler if self is KAI_SCHEDULER else forks.gpu_fractioning

    def build_variables(self, repo_base: str, tag: str, platform: str | None) -> dict[str, str]:
        """The exact Makefile variables the build guide passes for this fork."""
        if self is KAI_SCHEDULER:
            variables = {
                "DOCKER_REPO_BASE": repo_base,
                "DOCKER_TAG": tag,
                # `make push` is only an alias of `make build`: buildx pushes only with this flag.
                "DOCKER_BUILDX_ADDITIONAL_ARGS": "--push",
            }
            if platform:
                variables["DOCKER_BUILD_PLATFORM"] = platform
            return variables
        variables = {"DOCKER_REPO_BASE": repo_base, "VERSION": tag}
        if platform:
            variables["PLATFORM"] = platform
        return variables


KAI_SCHEDULER = ForkRecipe(
    key="kai-scheduler",
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
)

GPU_FRACTIONING = ForkRecipe(
    key="kai-gpu-fractioning",
    config_key="forks.gpuFractioning",
    checkout_dir="kai-gpu-fractioning",
    chart_path="operator/charts",
    image_path="kai-gpu-fractioning",
    images=("operator", "mpsd", "fractiond", "metricsd"),
    make_command="make docker-build docker-push",
    chart_needs_dependencies=False,
)

FORKS = (KAI_SCHEDULER, GPU_FRACTIONING)
