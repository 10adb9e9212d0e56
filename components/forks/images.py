"""ForkImages: build and push one fork's images with its own Makefile, then prove they are in the registry."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker
from pulumi_command import local

from components.config.model import ImageMode, RegistryConfig
from components.forks.recipes import ForkRecipe
from components.forks.registry import RegistryCredentials

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


@dataclass(frozen=True)
class ForkImagesArgs:
    recipe: ForkRecipe
    commit: str
    registry: RegistryConfig
    tag: str
    platform: str | None
    mode: ImageMode
    credentials: RegistryCredentials | None = None
    checkout_path: pulumi.Input[str] | None = None


class ForkImages(pulumi.ComponentResource):
    """Builds and pushes one fork's images (mode `build`), then reads each image's digest from the
    registry (modes `build` and `verify`); `prebuilt` trusts images mirrored out of band.

    Rebuilds happen only when the pin, registry, tag or platform change. Depending on this
    component means waiting until every image is pushed and found in the registry.
    """

    digests: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, args: ForkImagesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kai-gpu-fractions:forks:ForkImages", name, None, opts)
        pushed: pulumi.Output[str] = pulumi.Output.from_input(args.tag)
        if args.mode == "build":
            pushed = self._build(name, args)
        if args.mode == "prebuilt":
            self.digests = pulumi.Output.from_input({})
        else:
            # Recording the digests as a resource makes "depends on this component" include the
            # registry check, not only the build: invokes are not resources and carry no edge.
            verified = pulumi.Stash(
                f"{name}-verified", input=self._verify(name, args, pushed), opts=pulumi.ResourceOptions(parent=self)
            )
            self.digests = verified.output
        self.register_outputs({"digests": self.digests})

    def _build(self, name: str, args: ForkImagesArgs) -> pulumi.Output[str]:
        if args.checkout_path is None:
            raise ValueError("building images needs the fork checkout")
        registry = args.registry
        variables = args.recipe.build_variables(registry.server, args.tag, args.platform)
        environment: dict[str, pulumi.Input[str]] = {
            **variables,
            "FORK_CHECKOUT": args.checkout_path,
            "REGISTRY_HOST": registry.host,
            # The guide's builds need a buildx builder with the docker driver: a docker-container
            # builder keeps images in its cache and cannot reach a registry on localhost.
            "BUILDX_BUILDER": "default",
        }
        if args.credentials:
            environment["REGISTRY_USERNAME"] = args.credentials.username
            environment["REGISTRY_PASSWORD"] = args.credentials.password
        build = local.Command(
            f"{name}-build",
            create=build_command(args.recipe, variables),
            environment=environment,
            triggers=[args.commit, registry.server, args.tag, args.platform or "host"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        return build.stdout.apply(lambda _: args.tag)

    def _verify(self, name: str, args: ForkImagesArgs, pushed: pulumi.Output[str]) -> pulumi.Output[dict[str, str]]:
        auth = None
        if credentials := args.credentials:
            auth = [
                docker.ProviderRegistryAuthArgs(
                    address=credentials.host, username=credentials.username, password=credentials.password
                )
            ]
        provider = docker.Provider(f"{name}-registry", registry_auth=auth, opts=pulumi.ResourceOptions(parent=self))
        # Each lookup waits for the push through `pushed`, so a build is verified only after it ran.
        digests = {
            image: docker.get_registry_image_output(
                name=pulumi.Output.concat(pushed.apply(lambda _: ""), reference),
                opts=pulumi.InvokeOutputOptions(provider=provider, parent=self),
            ).sha256_digest
            for image, reference in args.recipe.image_references(args.registry.server, args.tag).items()
        }
        return pulumi.Output.all(**digests).apply(dict)
