"""At destroy: what the uninstalls wait for, and what a chart keeps that destroy deletes (waits.py).

Stacks last updated before the package layout hold their teardown wait's provider pickled as
`components.teardown._PodsGoneProvider`, and load it from here on refresh and destroy.
"""

from components.teardown.waits import _PodsGoneProvider

__all__ = ["_PodsGoneProvider"]
