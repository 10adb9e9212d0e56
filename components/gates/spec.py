"""What a step's gate checks: the StepGate resource's inputs, which components/stack.py builds from
the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.vocabulary import kai
from components.vocabulary.nvidia import MINIMUM_DRIVER_BRANCH, RUNTIME_CLASS

Step = Literal["gpu-operator", "kai-scheduler", "gpu-fractioning", "fraction-admission"]

# Where the dry-run probes of KAI's webhooks and the admission policy are admitted: a namespace every cluster has, which
# KAI's pod webhooks select (they skip only kube-system and KAI's own namespace).
PROBE_NAMESPACE = "default"


@dataclass(frozen=True)
class GateSpec:
    """What one gate checks; its fields are the StepGate resource's inputs (components/stack.py
    builds them from the config)."""

    step: Step
    # The step's own namespace (the dry-run probes' for fraction-admission).
    namespace: str
    timeout_seconds: int
    # KAI's namespace, which the gpu-fractioning gate names when kai-config does not see the agents;
    # stacks gated before it was an input used the default.
    kai_namespace: str = kai.DEFAULT_NAMESPACE
    minimum_driver_major: int = MINIMUM_DRIVER_BRANCH
    runtime_class: str = RUNTIME_CLASS
    sharing_mode: str | None = None
    admission_mode: str | None = None
