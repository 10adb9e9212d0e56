"""What the package's schema leaves undocumented, for the unit tier (the schema the plugin makes) and
the integration tier (the one `pulumi package get-schema` prints)."""

from __future__ import annotations

from typing import Any


def undescribed(document: dict[str, Any]) -> list[str]:
    """Each component and type without a description, and each of their inputs, outputs and properties
    without one: an SDK shows them as its documentation."""
    bare = []
    for kind in ("resources", "types"):
        for token, entry in document.get(kind, {}).items():
            name = token.rsplit(":", 1)[-1]
            if not entry.get("description"):
                bare.append(name)
            for key in ("inputProperties", "properties"):
                bare += [f"{name}.{p}" for p, spec in entry.get(key, {}).items() if not spec.get("description")]
    return bare
