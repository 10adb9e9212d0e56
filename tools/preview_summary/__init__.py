"""Turns what `pulumi preview` writes as JSON into a short markdown summary for PR comments and terminals.

    python -m tools.preview_summary [--stack NAME] [FILE] > summary.md

FILE (default: standard input) is `pulumi preview --json` output or an engine event log
(`PULUMI_DEBUG_COMMANDS=true pulumi preview --event-log FILE`); only the event log carries policy
violations. See docs/ci.md.
"""

from tools.preview_summary.model import Preview, PreviewFormatError, parse
from tools.preview_summary.render import has_changes, resource_changes, summarize

__all__ = ["Preview", "PreviewFormatError", "has_changes", "parse", "resource_changes", "summarize"]
