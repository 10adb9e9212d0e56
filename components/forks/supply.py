"""What the stack takes from each fork: its pinned tree (for its chart and its build), and its images
built, pushed and verified as far as `forks.images` asks."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.config.model import StackConfig
from components.forks.recipes import ForkRecipe
from components.forks.registry import RegistryCredentials
from components.forks.source import ForkSource, SourceError, prepare_fork_source


@dataclass(frozen=True)
class ForkSupply:
    digests: pulumi.Output[dict[str, str]]
    # The chart directory in the fork's tree, when the stack installs the fork's own chart.
    chart: str | None
    # Depending on it waits until every image is pushed and found in the registry.
    images: pulumi.Resource | None


def fork_source(config: StackConfig, recipe: ForkRecipe, needs_chart: bool) -> ForkSource | None:
    """The fork's tree at its pin when its chart or a build needs it, or a user-facing error
    naming the config keys to check."""
    if not needs_chart and config.forks.images != "build":
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
    chart = str(source.chart_path) if source else None
    if mode == "prebuilt":
        return ForkSupply(pulumi.Output.from_input({}), chart, None)
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
    return ForkSupply(images.digests, chart, images)
