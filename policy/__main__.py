"""Builds the kai-gpu-fractions policy pack; constructing it serves the engine and never returns."""

from gpu_policies import POLICIES
from pulumi_policy import EnforcementLevel, PolicyPack

# The pack default stays advisory: each policy that guards a real invariant sets MANDATORY itself.
PolicyPack(
    name="kai-gpu-fractions",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=list(POLICIES),
)
