"""Where stacks last updated before the package layout find their proofs' providers.

Pulumi pickles a dynamic resource's provider into the state by module and class name and loads it
from there on refresh and destroy.
"""

from components.proofs.resources import GpusAllocatableProvider, LabProofProvider, SmokeProofProvider

__all__ = ["GpusAllocatableProvider", "LabProofProvider", "SmokeProofProvider"]
