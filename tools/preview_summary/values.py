"""Property values as the Pulumi CLI serializes them: secrets, unknowns, paths, diffs and masking.

Secrets reach JSON in two shapes, and both become `Marker.SECRET` before anything else sees them:
the preview digest (`pulumi preview --json`) replaces each secret with the string "[secret]"; engine
events (`--event-log`, streaming JSON) keep Pulumi's secret envelope
`{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": ...}`,
which carries `plaintext` instead of `ciphertext` under `--show-secrets`. The envelope is dropped
whole, so a plaintext never reaches the summary. Values unknown during preview arrive as Pulumi's
placeholder string and become `Marker.UNKNOWN`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

SIGNATURE_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIGNATURE = "1b47061264138c4ac30d75fd1eb44270"
UNKNOWN_PLACEHOLDER = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
DIGEST_SECRET = "[secret]"

# Any key on the way to a value that contains one of these words hides the value, secret-marked or not.
SENSITIVE_WORDS = ("password", "token", "secret", "dockerconfigjson")
# Every value under these inputs of these resource types is sensitive, whatever its key.
SENSITIVE_INPUTS = {"kubernetes:core/v1:Secret": ("data", "stringData")}

MAX_VALUE_CHARS = 80

PathPart = str | int
Path = tuple[PathPart, ...]


class Marker(Enum):
    """A value the summary must not, or cannot, show."""

    SECRET = "[secret]"
    UNKNOWN = "(known after apply)"
    ABSENT = "(unset)"


@dataclass(frozen=True)
class Change:
    """One changed leaf (or added/removed subtree) between two input maps."""

    path: Path
    old: Any
    new: Any


def normalize(value: Any) -> Any:
    """A JSON property value with secrets and unknowns replaced by markers."""
    if isinstance(value, str):
        if value == UNKNOWN_PLACEHOLDER:
            return Marker.UNKNOWN
        if value == DIGEST_SECRET:
            return Marker.SECRET
        return value
    if isinstance(value, Mapping):
        if value.get(SIGNATURE_KEY) == SECRET_SIGNATURE:
            return Marker.SECRET
        return {str(key): normalize(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalize(item) for item in value]
    return value


def normalize_inputs(inputs: Any) -> dict[str, Any] | None:
    """A resource's input map without the engine's and providers' internal keys (`__provider`, `__inputs`)."""
    if not isinstance(inputs, Mapping):
        return None
    return {str(key): normalize(value) for key, value in inputs.items() if not str(key).startswith("__")}


def changes(old: Any, new: Any, path: Path = ()) -> Iterator[Change]:
    """Changed leaves from `old` to `new`; a subtree that appears or disappears is one change."""
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys = [*old, *(key for key in new if key not in old)]
        for key in keys:
            yield from changes(old.get(key, Marker.ABSENT), new.get(key, Marker.ABSENT), (*path, key))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            yield from changes(before, after, (*path, index))
    else:
        yield Change(path, old, new)


def drifted(desired: Any, live: Any, path: Path = ()) -> Iterator[Change]:
    """Values the program set (`desired`) that the live state no longer has; fields only the server sets are ignored."""
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        for key, value in desired.items():
            yield from drifted(value, live.get(key, Marker.ABSENT), (*path, key))
    elif isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        for index, (want, have) in enumerate(zip(desired, live, strict=True)):
            yield from drifted(want, have, (*path, index))
    elif desired != live and desired is not Marker.UNKNOWN:
        yield Change(path, desired, live)


def lookup(value: Any, path: Path) -> Any:
    """The value at `path`, or `Marker.ABSENT`."""
    for part in path:
        if isinstance(value, Mapping):
            if part not in value:
                return Marker.ABSENT
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return Marker.ABSENT
    return value


def is_sensitive(path: Path, resource_type: str = "") -> bool:
    """Whether a value at `path` of a resource's inputs must be hidden because of where it is."""
    keys = [part.lower() for part in path if isinstance(part, str)]
    if any(word in key for key in keys for word in SENSITIVE_WORDS):
        return True
    sensitive_inputs = SENSITIVE_INPUTS.get(resource_type, ())
    return bool(path) and path[0] in sensitive_inputs


def mask(value: Any, path: Path = (), resource_type: str = "") -> Any:
    """`value` with every secret, and every value under a sensitive key, replaced by `Marker.SECRET`."""
    if is_sensitive(path, resource_type):
        return value if value in (Marker.ABSENT, Marker.UNKNOWN) else Marker.SECRET
    if isinstance(value, Mapping):
        return {key: mask(item, (*path, key), resource_type) for key, item in value.items()}
    if isinstance(value, list):
        return [mask(item, (*path, index), resource_type) for index, item in enumerate(value)]
    return value


_PLAIN_KEY = re.compile(r'^[^."\[\]\s]+$')


def format_path(path: Sequence[PathPart]) -> str:
    """A property path as the kubernetes provider writes `detailedDiff` keys: `a.b-c[0]["key.with.dots"]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            escaped = part.replace('"', '\\"')
            text += f'["{escaped}"]'
    return text


def parse_path(text: str) -> Path:
    """Parses a property path (`a.b[0]["c.d"]`) as found in `detailedDiff` keys; never raises."""
    parts: list[PathPart] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == ".":
            index += 1
        elif text.startswith('["', index):
            end = index + 2
            key: list[str] = []
            while end < len(text) and text[end] != '"':
                if text[end] == "\\" and end + 1 < len(text):
                    end += 1
                key.append(text[end])
                end += 1
            parts.append("".join(key))
            index = end + 2  # past `"]`
        elif char == "[":
            end = text.find("]", index)
            if end < 0:
                parts.append(text[index:])
                break
            token = text[index + 1 : end]
            parts.append(int(token) if token.isdigit() else token)
            index = end + 1
        else:
            end = index
            while end < len(text) and text[end] not in ".[":
                end += 1
            parts.append(text[index:end])
            index = end
    return tuple(parts)


def overlaps(a: Path, b: Path) -> bool:
    """Whether one path is a prefix of the other (they name the same value or nested values)."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def render(value: Any, limit: int = MAX_VALUE_CHARS) -> str:
    """A short, single-line text for a (normalized, masked) value."""
    if isinstance(value, Marker):
        return value.value
    text = value if isinstance(value, str) else json.dumps(_plain(value), separators=(",", ":"))
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
    return _clip(text, limit)


def render_change(old: Any, new: Any, limit: int = MAX_VALUE_CHARS) -> tuple[str, str]:
    """Texts for both sides of a change; long values are cut around where they first differ."""
    before, after = render(old, limit=0), render(new, limit=0)
    if before == after or (len(before) <= limit and len(after) <= limit):
        return _clip(before, limit), _clip(after, limit)
    start = max(0, len(os.path.commonprefix([before, after])) - limit // 4)
    return _clip(before, limit, start), _clip(after, limit, start)


def _clip(text: str, limit: int, start: int = 0) -> str:
    """`text` from `start`, at most `limit` characters (0: no limit), with `…` where it is cut."""
    if not limit:
        return text
    clipped = "…" + text[start:] if start and start < len(text) else text
    return clipped if len(clipped) <= limit else clipped[: limit - 1] + "…"


def _plain(value: Any) -> Any:
    """A JSON-serializable copy with markers as their display text."""
    if isinstance(value, Marker):
        return value.value
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
