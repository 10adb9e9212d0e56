"""ForkImages: build and push one fork's images with its own Makefile, then prove they are in the registry."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker
from pulumi_command import local

from components.config.model import ImageMode, RegistryConfig
from components.forks.recipes import ForkRecipe
from components.forks.registry import RegistryCredentials

LOGIN = """set -eu
cd "$FORK_CHECKOUT"
if [ -n "${REGISTRY_PASSWORD:-}" ]; then
  if ! printf '%s' "$REGISTRY_PASSWORD" | docker login "$REGISTRY_HOST" -u "$REGISTRY_USERNAME" --password-stdin >&2
  then
    echo "docker login to $REGISTRY_HOST failed:" \\
      "check kai-gpu-fractions:registry.username and registryPassword" >&2
    exit 1
  fi
fi
"""


def make_invocation(recipe: ForkRecipe, variables: dict[str, str]) -> str:
    """The fork's make invocation, reading each variable from the command's environment.

    Variables go on the make command line, as in the build guide: the environment alone does not
    override a Makefile's plain assignments."""
    arguments = " ".join(f'{key}="${key}"' for key in variables)
    return f"{recipe.make_command} {arguments} >&2\n"


def build_command(recipe: ForkRecipe, variables: dict[str, str]) -> str:
    """Builds and pushes the fork's images; its stdout is the tag pushed, for the next retag."""
    return f"{LOGIN}{make_invocation(recipe, variables)}printf '%s\\n' \"${recipe.tag_variable}\"\n"


def retag_command(recipe: ForkRecipe, variables: dict[str, str]) -> str:
    """Runs when the build's inputs change but not its triggers: the pair's tag names both pins, so
    a bump of the other fork gives this one a new tag; its images are tagged in the registry, not
    rebuilt. A state without the previous tag (stdout) rebuilds."""
    tag = f"${{{recipe.tag_variable}}}"
    return (
        f"{LOGIN}previous=${{PULUMI_COMMAND_STDOUT:-}}\n"
        f'if [ -z "$previous" ]; then\n  {make_invocation(recipe, variables)}'
        f'elif [ "$previous" != "{tag}" ]; then\n'
        f"  for image in {' '.join(recipe.images)}; do\n"
        f'    docker buildx imagetools create --tag "$DOCKER_REPO_BASE/$image:{tag}" \\\n'
        '      "$DOCKER_REPO_BASE/$image:$previous" >&2\n'
        "  done\nfi\n"
        f"printf '%s\\n' \"{tag}\"\n"
    )


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

    Rebuilds happen only when the fork's pin, the registry or the platform change; a new tag alone
    is put on the images already pushed. Depending on this component means waiting until every
    image is pushed and found in the registry.
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
            # A Stash keeps its first value until replaced, so new digests replace it.
            verified = pulumi.Stash(
                f"{name}-verified",
                input=self._verify(name, args, pushed),
                opts=pulumi.ResourceOptions(parent=self, replace_on_changes=["input"]),
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
            update=retag_command(args.recipe, variables),
            environment=environment,
            triggers=[args.commit, registry.server, args.platform or "host"],
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
