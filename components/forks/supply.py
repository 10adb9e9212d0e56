"""What the stack takes from each fork: its pinned tree (for its chart and its build), and its images
built, pushed and verified as far as `forks.images` asks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.config.model import StackConfig
from components.forks.recipes import GPU_FRACTIONING, KAI_SCHEDULER, ForkRecipe
from components.forks.registry import RegistryCredentials
from components.forks.source import ForkSource, SourceError, prepare_fork_source


@dataclass(frozen=True)
class ForkSupply:
    digests: pulumi.Output[dict[str, str]]
    # The chart directory in the fork's tree, when the stack installs the fork's own chart.
    chart: str | None
    # Depending on it waits until every image is pushed and found in the registry.
    images: pulumi.Resource | None


def fork_source(config: StackConfig, recipe: ForkRecipe, needs_tree: bool) -> ForkSource | None:
    """The fork's tree at its pin when its chart or a build needs it, or a user-facing error
    naming the config keys to check."""
    if not needs_tree:
        return None
    try:
        return prepare_fork_source(recipe, recipe.pin(config.forks), config.forks.workdir)
    except Exception as error:  # git, the file system or the workdir: all a finding for the user
        reason = str(error) if isinstance(error, SourceError) else f"{type(error).__name__}: {error}"
        raise pulumi.RunError(
            f"Could not prepare the {recipe.key} fork at kai-gpu-fractions:{recipe.config_key} "
            f"(repository, pullRequest, commit) under kai-gpu-fractions:forks.workdir: {reason}"
        ) from None


def fork_images(
    config: StackConfig, recipe: ForkRecipe, source: ForkSource | None, credentials: RegistryCredentials | None
) -> ForkSupply:
    """Builds and verifies one fork's images as far as the configuration asks."""
    mode = config.forks.images
    if mode == "prebuilt":
        return chart_only(source)
    # Imported here: pulumi-command and pulumi-docker are needed only when images are built or checked.
    from components.forks.images import ForkImages, ForkImagesArgs

    images = ForkImages(
        f"{recipe.key}-images",
        ForkImagesArgs(
            recipe=recipe,
            commit=recipe.pin(config.forks).commit,
            registry=config.fork_registry,
            tag=config.forks.image_tag,
            platform=config.forks.platform,
            mode=mode,
            credentials=credentials,
            checkout_path=str(source.path) if source else None,
        ),
    )
    return ForkSupply(images.digests, chart_only(source).chart, images)


def chart_only(source: ForkSource | None) -> ForkSupply:
    """The fork's chart, with no images built or checked."""
    return ForkSupply(pulumi.Output.from_input({}), str(source.chart_path) if source else None, None)


@dataclass(frozen=True)
class ForkSupplies:
    """What the install steps take of both forks: each one's chart and images."""

    kai: ForkSupply
    fractioning: ForkSupply

    @property
    def digests(self) -> pulumi.Output[dict[str, Any]]:
        return pulumi.Output.all(**{KAI_SCHEDULER.key: self.kai.digests, GPU_FRACTIONING.key: self.fractioning.digests})


def supply_forks(config: StackConfig, credentials: RegistryCredentials | None, charts: bool = True) -> ForkSupplies:
    """Each fork's chart from its tree at its pin (unless `charts` is false or the config names
    another chart) and its images as far as `forks.images` asks."""
    build = config.forks.images == "build"
    # Sources first: a fork that cannot be checked out stops the program before anything registers.
    kai_source = fork_source(config, KAI_SCHEDULER, build or (charts and config.kai.chart is None))
    fractioning_chart = charts and config.gpu_fractioning.chart is None
    fractioning_source = fork_source(config, GPU_FRACTIONING, build or fractioning_chart)
    kai = fork_images(config, KAI_SCHEDULER, kai_source, credentials)
    return ForkSupplies(kai, fork_images(config, GPU_FRACTIONING, fractioning_source, credentials))


def fork_chart(config: StackConfig, recipe: ForkRecipe, configured: bool) -> ForkSupply:
    """One fork's chart from its tree at its pin, unless the config names another (`configured`);
    its images are another component's to build and push."""
    return chart_only(fork_source(config, recipe, not configured))
