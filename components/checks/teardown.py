"""Where stacks find the teardown waits' providers they pickled at this path (see __init__.py)."""

from components.teardown.waits import _KeptObjectsProvider, _PodsGoneProvider

__all__ = ["_KeptObjectsProvider", "_PodsGoneProvider"]
