"""Reading API objects as plain JSON: their name, labels and conditions, an operator's message on one line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Json = Mapping[str, Any]


def conditions(obj: Json | None) -> dict[str, Json]:
    return {str(c.get("type")): c for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def name(obj: Json) -> str:
    return str(obj["metadata"]["name"])


def labels_of(obj: Json) -> dict[str, str]:
    return {str(k): str(v) for k, v in (obj["metadata"].get("labels") or {}).items()}


def one_line(message: object) -> str:
    """An operator's multi-line message (KAI's joins one line per operand) as one line of progress."""
    return "; ".join(str(message or "").splitlines())
