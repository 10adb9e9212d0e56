"""The guide-shaped evidence under tests/fixtures/proof, read back as the cluster would hand it to
the proofs: both the unit tests of the decisions and the integration tier's stand-in binder use it."""

from __future__ import annotations

import re


def parse_annotation_grep(text: str) -> dict[str, str]:
    """The guide's `jsonpath='{.metadata.annotations}' | grep -o '"nvidia\\.com/[^"]*":"[^"]*"'` lines."""
    return dict(re.findall(r'"(nvidia\.com/[^"]*)":"([^"]*)"', text))
