"""Comparing chart and driver versions written with or without a leading `v`."""

from __future__ import annotations

import re

_VERSION = re.compile(r"v?(?P<release>\d+(?:\.\d+)*)(?:-(?P<prerelease>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?")

VERSION_PATTERN = r"^v?[0-9]+(\.[0-9]+)*$"


def _sort_key(text: str, width: int) -> tuple[int, ...] | None:
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        return None
    release = [int(part) for part in match["release"].split(".")]
    release += [0] * (width - len(release))
    # A pre-release sorts before its release: 26.7.1-rc.1 < 26.7.1.
    return (*release, 0 if match["prerelease"] else 1)


def version_at_least(actual: str, minimum: str) -> bool | None:
    """Whether `actual` >= `minimum` (missing parts count as 0), or None when `actual` is no version."""
    width = max(text.count(".") for text in (actual, minimum)) + 1
    actual_key, minimum_key = _sort_key(actual, width), _sort_key(minimum, width)
    if minimum_key is None:
        raise ValueError(f"minimum version {minimum!r} is not a version number")
    return None if actual_key is None else actual_key >= minimum_key
