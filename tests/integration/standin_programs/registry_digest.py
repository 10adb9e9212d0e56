"""getRegistryImage through an explicit docker provider with registry credentials, as ForkImages does."""

import pulumi
import pulumi_docker as docker

config = pulumi.Config()
provider = docker.Provider(
    "registry",
    registry_auth=[
        docker.ProviderRegistryAuthArgs(
            address=config.require("registry"),
            username=config.require("username"),
            password=config.require_secret("password"),
        )
    ],
)
image = docker.get_registry_image_output(
    name=config.require("image"), opts=pulumi.InvokeOutputOptions(provider=provider)
)
pulumi.export("digest", image.sha256_digest)
