"""ForkImages: build and push one fork's images with its own Makefile, then prove they are in the registry."""

from __future__ import annotations

import pulumi
import pulumi_docker as docker
from pulumi_command import local

from components.config import ImageMode, Registry
from components.forks import ForkRecipe

# Variables go on the make command line, as in the build guide: the environment alone does not
# override a Makefile's plain assignments.
BUILD_SCRIPT = """set -eu
cd "$FORK_CHECKOUT"
if [ -n "${REGISTRY_PASSWORD:-}" ]; then
  printf '%s' "$REGISTRY_PASSWORD" | docker login "$REGISTRY_HOST" -u "$REGISTRY_USERNAME" --password-stdin >&2
fi
"""


def build_command(recipe: ForkRecipe, variables: dict[str, str]) -> str:
    """The fork's make invocation, reading each variable from the command's environment."""
    arguments = " ".join(f'{key}="${key}"' for key in variables)
    return f"{BUILD_SCRIPT}{recipe.make_command} {arguments} >&2\n"


def image_references(recipe: ForkRecipe, registry: Registry, tag: str) -> dict[str, str]:
    repo_base = f"{registry.server}/{recipe.image_path}"
    return {image: f"{repo_base}/{image}:{tag}" for image in recipe.images}


class ForkImages(pulumi.ComponentResource):
    """Builds and pushes one fork's images (mode `build`), then reads each image's digest from the
    registry (modes `build` and `verify`); `prebuilt` trusts images mirrored out of band.

    Rebuilds happen only when the pin, registry, tag or platform change.
    """

    tag: pulumi.Output[str]
    digests: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        recipe: ForkRecipe,
        commit: str,
        registry: Registry,
        registry_password: pulumi.Output[str] | None,
        tag: str,
        platform: str | None,
        mode: ImageMode,
        checkout_path: pulumi.Input[str] | None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:forks:ForkImages", name, None, opts)
        references = image_references(recipe, registry, tag)
        pushed: pulumi.Output[str] = pulumi.Output.from_input(tag)
        if mode == "build":
            pushed = self._build(name, recipe, commit, registry, registry_password, tag, platform, checkout_path)
        if mode == "prebuilt":
            self.digests = pulumi.Output.from_input({})
        else:
            self.digests = self._verify(name, references, registry, registry_password, pushed)
        # The tag is handed on only once every image is proven present, so releases that use
        # it are ordered after the push by data, not by hand.
        self.tag = pulumi.Output.all(pushed, self.digests).apply(lambda _: tag)
        self.register_outputs({"tag": self.tag, "digests": self.digests})

    def _build(
        self,
        name: str,
        recipe: ForkRecipe,
        commit: str,
        registry: Registry,
        registry_password: pulumi.Output[str] | None,
        tag: str,
        platform: str | None,
        checkout_path: pulumi.Input[str] | None,
    ) -> pulumi.Output[str]:
        if checkout_path is None:
            raise ValueError("building images needs the fork checkout")
        variables = recipe.build_variables(f"{registry.server}/{recipe.image_path}", tag, platform)
        environment: dict[str, pulumi.Input[str]] = {
            **variables,
            "FORK_CHECKOUT": checkout_path,
            "REGISTRY_HOST": registry.host,
            # The guide's builds need a buildx builder with the docker driver: a docker-container
            # builder keeps images in its cache and cannot reach a registry on localhost.
            "BUILDX_BUILDER": "default",
        }
        if registry_password is not None and registry.username:
            environment["REGISTRY_USERNAME"] = registry.username
            environment["REGISTRY_PASSWORD"] = registry_password
        build = local.Command(
            f"{name}-build",
            create=build_command(recipe, variables),
            environment=environment,
            triggers=[commit, registry.server, tag, platform or "host"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        return build.stdout.apply(lambda _: tag)

    def _verify(
        self,
        name: str,
        references: dict[str, str],
        registry: Registry,
        registry_password: pulumi.Output[str] | None,
        pushed: pulumi.Output[str],
    ) -> pulumi.Output[dict[str, str]]:
        auth = None
        if registry_password is not None and registry.username:
            auth = [
                docker.ProviderRegistryAuthArgs(
                    address=registry.host, username=registry.username, password=registry_password
                )
            ]
        provider = docker.Provider(f"{name}-registry", registry_auth=auth, opts=pulumi.ResourceOptions(parent=self))
        # Each lookup waits for the push through `pushed`, so a build is verified only after it ran.
        digests = {
            image: docker.get_registry_image_output(
                name=pulumi.Output.concat(pushed.apply(lambda _: ""), reference),
                opts=pulumi.InvokeOutputOptions(provider=provider, parent=self),
            ).sha256_digest
            for image, reference in references.items()
        }
        return pulumi.Output.all(**digests).apply(dict)
