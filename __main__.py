"""kai-gpu-fractions: hard, enforced GPU shares for Kubernetes pods, as one Pulumi graph."""

import pulumi

from components.config.load import ConfigError, load_from_pulumi
from components.stack import deploy

try:
    loaded = load_from_pulumi()
except ConfigError as error:
    # A user mistake: report it without a traceback, before any resource is registered.
    raise pulumi.RunError(str(error)) from None

for warning in loaded.warnings:
    pulumi.log.warn(warning)
for name, value in deploy(loaded.config, loaded.registry_password).items():
    pulumi.export(name, value)
