"""The fork registry's credentials: read once, handed to the builds' `docker login`, the registry
checks and the clusters' image pull secrets."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.config.model import RegistryConfig


@dataclass(frozen=True)
class RegistryCredentials:
    host: str
    username: str
    password: pulumi.Output[str]  # a Pulumi secret

    @staticmethod
    def of(registry: RegistryConfig, password: pulumi.Output[str] | None) -> RegistryCredentials | None:
        """The credentials, when the stack configures both a username and a password."""
        if password is None or not registry.username:
            return None
        return RegistryCredentials(registry.host, registry.username, password)

    def docker_config(self) -> pulumi.Output[str]:
        """A docker config JSON for the registry, as a Pulumi secret."""
        auth = {"auths": {self.host: {"username": self.username, "password": self.password}}}
        return pulumi.Output.secret(pulumi.Output.json_dumps(auth))
