"""What the stand-in operators read, kept as a controller's informers keep it: each watched kind's
objects, filled by its watch (watching.py) and read without asking the API server again.

A watch opened from the current state streams every object first and then a bookmark that says so
(watching.INITIAL_EVENTS_END, the API server's streaming list); until that bookmark a kind is not
synced, and a read of it goes to the API server as before. The operators' own writes
go into the store at once (the API server answers them with the object), so a round reads what it
just wrote; anyone else's change arrives with its event, which also wakes the operators.
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

Json = dict[str, Any]
# /api/v1[/namespaces/NS]/PLURAL[/NAME] or /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME]
_PATH = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)(?:/namespaces/([^/]+)(?=/[^/]+))?/([^/]+)(?:/([^/]+))?$")


def split_path(url: str) -> tuple[str, str, str] | None:
    """(collection, namespace, name) of an object or collection path, the collection as WATCHED
    names it (cluster-wide); "" for no namespace or no name. None for a subresource or other path."""
    match = _PATH.match(url)
    if match is None:
        return None
    base, namespace, plural, name = match.groups()
    return f"{base}/{plural}", namespace or "", name or ""


# One requirement of a label selector (k8s.io/apimachinery v0.37.2 pkg/labels/selector.go):
# `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`.
_REQUIREMENT = re.compile(
    r"^\s*(?:(?P<absent>!)\s*(?P<akey>[^\s=!,()]+)|(?P<key>[^\s=!,()]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,()]*)|\s(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?)\s*$"
)


def _requirements(selector: str) -> list[str]:
    """The selector's requirements: split at the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in (*parts, current) if p.strip()]


def matches(labels: Mapping[str, str], selector: str) -> bool:
    """Whether `labels` satisfy the label selector `selector` ("" selects everything); `!=` and
    `notin` select objects without the key too, as the API server's selectors do."""
    for requirement in _requirements(selector):
        found = _REQUIREMENT.match(requirement)
        if found is None:
            raise ValueError(f"not a label selector requirement: {requirement!r}")
        if found["absent"]:
            if found["akey"] in labels:
                return False
            continue
        key, value = found["key"], labels.get(found["key"])
        if found["op"] in ("=", "=="):
            ok = value == found["value"]
        elif found["op"] == "!=":
            ok = value != found["value"]
        elif found["setop"]:
            values = {v.strip() for v in found["values"].split(",")}
            ok = (value in values) if found["setop"] == "in" else (value not in values)
        else:
            ok = key in labels
        if not ok:
            return False
    return True


def _version(obj: Mapping[str, Any]) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    metadata = obj["metadata"]
    return str(metadata.get("namespace") or ""), str(metadata["name"])


class Store:
    """The objects of each watched collection by (namespace, name), and which collections are synced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[tuple[str, str], Json]] = {}
        self._synced: set[str] = set()
        # The version each object was deleted at: an answer to a write the API server gave before
        # the deletion (a patch removing the last finalizer) can reach the store after its event.
        self._deleted: dict[str, dict[tuple[str, str], int]] = {}

    def restart(self, collection: str) -> None:
        """A watch starts again from the current state: forget what it had until it is synced again."""
        with self._lock:
            self._objects[collection], self._deleted[collection] = {}, {}
            self._synced.discard(collection)

    def synced(self, collection: str) -> None:
        with self._lock:
            self._objects.setdefault(collection, {})
            self._synced.add(collection)

    def apply(self, collection: str, kind: str, obj: Json) -> None:
        """An event of the collection's watch, or the API server's answer to a write; an older
        version of an object never replaces a newer one."""
        if not (obj.get("metadata") or {}).get("name"):
            return
        with self._lock:
            objects, deleted = self._objects.setdefault(collection, {}), self._deleted.setdefault(collection, {})
            key, version = _key(obj), _version(obj)
            held = objects.get(key)
            if kind == "DELETED":
                deleted[key] = max(version, deleted.get(key, 0))
                if held is None or _version(held) <= version:
                    objects.pop(key, None)
            elif (held is None or _version(held) <= version) and deleted.get(key, -1) < version:
                objects[key] = obj

    def forget(self, collection: str, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.get(collection, {}).pop((namespace, name), None)

    def get(self, url: str) -> tuple[bool, Json | None]:
        """(whether the store answers, the object or None) for an object's path."""
        where = split_path(url)
        if where is None or not where[2]:
            return False, None
        collection, namespace, name = where
        with self._lock:
            if collection not in self._synced:
                return False, None
            found = self._objects[collection].get((namespace, name))
            return True, copy.deepcopy(found)

    def list(self, url: str, selector: str = "") -> list[Json] | None:
        """The objects of a collection's path (all namespaces, or one) that `selector` selects;
        None when the store does not answer."""
        where = split_path(url)
        if where is None or where[2]:
            return None
        collection, namespace, _ = where
        with self._lock:
            if collection not in self._synced:
                return None
            held: Iterable[Json] = list(self._objects[collection].values())
        return [
            copy.deepcopy(obj)
            for obj in held
            if (not namespace or obj["metadata"].get("namespace") == namespace)
            and matches(obj["metadata"].get("labels") or {}, selector)
        ]
