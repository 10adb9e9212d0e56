"""kai-gpu-fractions: hard, enforced GPU shares for Kubernetes pods, as one Pulumi graph."""

import pulumi

from components.config.load import ConfigError, load_from_pulumi
from components.config.secrets import keep_secret, redact
from components.stack import deploy

try:
    loaded = load_from_pulumi()
except ConfigError as error:
    # A user mistake: report it without a traceback, before any resource is registered.
    raise pulumi.RunError(str(error)) from None

# Config keys stored as secrets stay secret in every input, output and message derived from them.
keep_secret(loaded.secrets)
for warning in loaded.warnings:
    pulumi.log.warn(redact(warning))
try:
    outputs = deploy(loaded.config, loaded.registry_password)
except pulumi.RunError as error:
    raise pulumi.RunError(redact(str(error))) from None
for name, value in outputs.items():
    pulumi.export(name, loaded.secrets.protect(value))
