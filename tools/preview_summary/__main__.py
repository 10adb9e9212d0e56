"""Command line: `python -m tools.preview_summary [--stack NAME] [--title TEXT] [FILE] > summary.md`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.preview_summary.model import PreviewFormatError, parse
from tools.preview_summary.render import DEFAULT_MAX_LENGTH, has_changes, summarize

EXIT_CHANGES = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preview_summary",
        description=(
            "Summarize `pulumi preview --json` output, or an engine event log "
            "(`PULUMI_DEBUG_COMMANDS=true pulumi preview --event-log FILE`), as markdown. "
            "Only the event log carries policy violations."
        ),
    )
    parser.add_argument("file", nargs="?", default="-", help="preview JSON or event log (default: standard input)")
    parser.add_argument("--stack", help="stack name for the header (default: read from the resource URNs)")
    parser.add_argument("--title", help='header title (default: "Pulumi preview", or "Pulumi update" for an up)')
    parser.add_argument(
        "--max-length",
        type=int,
        default=DEFAULT_MAX_LENGTH,
        help=f"shorten the summary to at most this many characters (default: {DEFAULT_MAX_LENGTH}, fits a PR comment)",
    )
    parser.add_argument(
        "--detect-changes",
        action="store_true",
        help=f"exit with status {EXIT_CHANGES} when the preview proposes changes or shows drift (after printing)",
    )
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        preview = parse(text)
    except (OSError, PreviewFormatError) as error:
        print(f"preview_summary: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(summarize(preview, stack=args.stack, title=args.title, max_length=args.max_length))
    return EXIT_CHANGES if args.detect_changes and has_changes(preview) else 0


if __name__ == "__main__":
    sys.exit(main())
