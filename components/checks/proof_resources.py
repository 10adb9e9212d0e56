"""Where stacks find the gates' and proofs' providers they pickled at this path (see __init__.py)."""

from components.gates.steps import StepGateProvider
from components.proofs.resources import GpusAllocatableProvider, LabProofProvider, SmokeProofProvider

__all__ = ["GpusAllocatableProvider", "LabProofProvider", "SmokeProofProvider", "StepGateProvider"]
