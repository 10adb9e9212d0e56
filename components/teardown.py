"""Where stacks last updated before the package layout find their teardown wait's provider.

Pulumi pickles a dynamic resource's provider into the state by module and class name and loads it
from there on refresh and destroy. Any `pulumi up` since rewrites it to components.checks.
"""

from components.checks.teardown import _PodsGoneProvider

__all__ = ["_PodsGoneProvider"]
