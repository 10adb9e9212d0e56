"""Markdown for a preview: a header line with counts, policy violations, diagnostics, one table per component."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.preview_summary.model import (
    Diagnostic,
    PolicyViolation,
    Preview,
    Step,
    urn_ancestor_types,
    urn_name,
    urn_type,
)
from tools.preview_summary.values import (
    Change,
    Path,
    changes,
    drifted,
    format_path,
    lookup,
    mask,
    overlaps,
    parse_path,
    render_change,
)

COMPONENT_PREFIX = "kai-gpu-fractions:"
STACK_TYPE = "pulumi:pulumi:Stack"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"

# Engine step ops (pulumi pkg/resource/deploy/step.go) by the change they make to a resource.
CATEGORY = {
    "same": "same",
    "refresh": "same",
    "create": "create",
    "update": "update",
    "delete": "delete",
    "remove-pending-replace": "delete",
    "replace": "replace",
    "create-replacement": "replace",
    "delete-replaced": "replace",
    "discard-replaced": "replace",
    "import": "import",
    "import-replacement": "replace",
    "read": "read",
    "read-replacement": "read",
    "discard": "read",
}
ORDER = ("create", "update", "replace", "delete", "import", "read", "same")
PRECEDENCE = {"same": 0, "read": 1, "update": 2, "import": 3, "create": 3, "delete": 4, "replace": 5}
SYMBOL = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "import": "=", "read": ">"}
PLANNED = {
    "create": "to create",
    "update": "to update",
    "replace": "to replace",
    "delete": "to delete",
    "import": "to import",
    "read": "to read",
    "same": "unchanged",
}
DONE = {
    "create": "created",
    "update": "updated",
    "replace": "replaced",
    "delete": "deleted",
    "import": "imported",
    "read": "read",
    "same": "unchanged",
}
DIFF_KIND = {"add": "added", "update": "changed", "delete": "removed"}
# Steps the engine marks internal: event logs carry them, the CLI's display and digest do not.
INTERNAL_OPS = ("remove-pending-replace", "extend-parameterize")
GENERIC_FAILURES = ("preview failed", "update failed", "refresh failed", "destroy failed")

MAX_DETAIL_LINES = 8
COMPACT_DETAIL_LINES = 3
MAX_DIAGNOSTICS = 10
MAX_MESSAGE_CHARS = 400
DEFAULT_MAX_LENGTH = 60_000  # a GitHub comment holds 65,536 characters


@dataclass(frozen=True)
class ResourceChange:
    urn: str
    type: str
    category: str
    component: str | None  # URN of the kai-gpu-fractions component, a bare component type, or None
    details: tuple[str, ...]


def summarize(preview: Preview, stack: str | None = None, title: str | None = None, max_length: int = 0) -> str:
    """The markdown summary of `preview`; `max_length` (default 60,000) keeps it within a PR comment."""
    limit = max_length or DEFAULT_MAX_LENGTH
    text = render_markdown(preview, stack, title)
    if len(text) > limit:
        text = render_markdown(preview, stack, title, detail_lines=COMPACT_DETAIL_LINES)
    if len(text) > limit:
        note = "\n\n_Summary truncated; the job log has the full diff._\n"
        cut = text.rfind("\n", 0, limit - len(note))
        text = text[: max(cut, 0)] + note
    return text


def render_markdown(
    preview: Preview, stack: str | None = None, title: str | None = None, detail_lines: int = MAX_DETAIL_LINES
) -> str:
    stack = stack or ", ".join(preview.stacks) or "stack"
    title = title or ("Pulumi preview" if preview.is_preview else "Pulumi update")
    resources = resource_changes(preview, detail_lines)
    failed = preview.result == "failed" or any(d.severity == "error" for d in preview.diagnostics)
    lines = [f"### {title}: `{escape(stack)}`", "", header_line(preview, resources, failed)]
    if preview.violations:
        lines += ["", *violation_section(preview.violations)]
    elif failed and preview.source == "digest":
        lines += [
            "",
            "> `pulumi preview --json` carries no policy results. If a policy failed the preview, the job log names "
            "it; `tools.preview_summary` shows violations from the engine event log (`--event-log`).",
        ]
    if preview.rollout_plan:
        lines += ["", "#### Rollout plan", "", *(f"- {shorten(line)}" for line in preview.rollout_plan)]
    problems = [d for d in preview.diagnostics if d.message not in GENERIC_FAILURES]
    if problems:
        lines += ["", *diagnostic_section(problems)]
    if resources:
        lines += ["", *change_section(resources)]
    return "\n".join(lines) + "\n"


def header_line(preview: Preview, resources: Sequence[ResourceChange], failed: bool) -> str:
    verbs = PLANNED if preview.is_preview else DONE
    counts = operation_counts(preview, resources)
    changed = [f"{counts[c]} {verbs[c]}" for c in ORDER if c != "same" and counts.get(c)]
    parts = [", ".join(changed) if changed else "no changes"]
    if counts.get("same"):
        parts.append(f"{counts['same']} {verbs['same']}")
    mandatory = sum(1 for v in preview.violations if v.level == "mandatory")
    advisory = len(preview.violations) - mandatory
    if mandatory:
        parts.append(f"**{plural(mandatory, 'mandatory policy violation')}**")
    if advisory:
        parts.append(plural(advisory, "advisory policy violation"))
    if failed:
        parts.append("**" + ("preview failed" if preview.is_preview else "update failed") + "**")
    return " · ".join(parts)


def has_changes(preview: Preview) -> bool:
    """Whether the preview proposes any change, as `--expect-no-changes` judges it (reads do not count)."""
    resources = resource_changes(preview)
    counts = operation_counts(preview, resources)
    return any(count for category, count in counts.items() if category not in ("same", "read")) or bool(resources)


def operation_counts(preview: Preview, resources: Sequence[ResourceChange]) -> dict[str, int]:
    """Counts per change; the engine's own `changeSummary` when present (it also counts unchanged resources)."""
    counts: dict[str, int] = {}
    if preview.change_summary is not None:
        summary = dict(preview.change_summary)
        if "replace" in summary:  # the replacement's create and delete halves are part of it
            for half in ("create-replacement", "delete-replaced", "discard-replaced"):
                summary.pop(half, None)
        for op, count in summary.items():
            category = CATEGORY.get(op, op)
            counts[category] = counts.get(category, 0) + count
        return counts
    for resource in resources:
        counts[resource.category] = counts.get(resource.category, 0) + 1
    return counts


def violation_section(violations: Sequence[PolicyViolation]) -> list[str]:
    packs = sorted({v.pack for v in violations})
    mandatory = sum(1 for v in violations if v.level == "mandatory")
    lines = [f"#### Policy violations ({', '.join(f'`{escape(p)}`' for p in packs)})", ""]
    if mandatory:
        verb = "blocks" if mandatory == 1 else "block"
        lines += [f"**{plural(mandatory, 'mandatory violation')} {verb} this change.**", ""]
    lines += ["| Level | Policy | Resource | Message |", "|---|---|---|---|"]
    ordered = sorted(violations, key=lambda v: (v.level != "mandatory", v.policy))
    for v in ordered:
        level = f"**{v.level}**" if v.level == "mandatory" else v.level
        lines.append(f"| {level} | {code(v.policy)} | {resource_label(v.urn)} | {cell(shorten(v.message))} |")
    return lines


def diagnostic_section(diagnostics: Sequence[Diagnostic]) -> list[str]:
    ordered = sorted(diagnostics, key=lambda d: d.severity != "error")
    unique = list(dict.fromkeys(ordered))
    lines = ["#### Diagnostics", ""]
    for d in unique[:MAX_DIAGNOSTICS]:
        where = f" {resource_label(d.urn)}" if d.urn else ""
        lines.append(f"- **{d.severity}**{where}: {shorten(d.message)}")
    if len(unique) > MAX_DIAGNOSTICS:
        lines.append(f"- … and {len(unique) - MAX_DIAGNOSTICS} more in the job log")
    return lines


def change_section(resources: Sequence[ResourceChange]) -> list[str]:
    groups: dict[str | None, list[ResourceChange]] = {}
    for resource in resources:
        groups.setdefault(resource.component, []).append(resource)
    lines: list[str] = []
    for component, members in groups.items():
        if lines:
            lines.append("")
        lines += [
            component_label(component),
            "",
            "| Resource | Type | Change | Details |",
            "|---|---|---|---|",
        ]
        for r in members:
            change = f"{SYMBOL.get(r.category, '?')} {r.category}"
            lines.append(f"| {code(urn_name(r.urn))} | {code(r.type)} | {change} | {'<br>'.join(r.details)} |")
    return lines


def resource_changes(preview: Preview, detail_lines: int = MAX_DETAIL_LINES) -> list[ResourceChange]:
    """One entry per resource that changes (or drifted), in the order the engine reported them."""
    parents = {step.urn: step.parent for step in preview.steps if step.parent}
    by_urn: dict[str, list[Step]] = {}
    for step in preview.steps:
        by_urn.setdefault(step.urn, []).append(step)
    result = []
    for urn, steps in by_urn.items():
        kind = steps[0].type
        if kind == STACK_TYPE or kind.startswith(COMPONENT_PREFIX):
            continue  # the stack and this project's components are the grouping, not rows
        if is_default_provider(urn) or all(s.op in INTERNAL_OPS for s in steps):
            continue  # the engine's own bookkeeping, which the CLI does not display either
        planned = [s for s in steps if not s.drift]
        drifted = [s for s in steps if s.drift]
        category = max((CATEGORY.get(s.op, s.op) for s in planned or drifted), key=lambda c: PRECEDENCE.get(c, 2))
        if category in ("same", "read") and not drifted:
            continue
        step = representative(planned or drifted, category)
        details = [line for d in drifted[:1] for line in describe_drift(d)]
        details += describe(step, category) if planned else []
        if len(details) > detail_lines:
            details = [*details[: detail_lines - 1], f"… and {len(details) - detail_lines + 1} more"]
        result.append(ResourceChange(urn, kind, category, component_of(step, parents), tuple(details)))
    return result


def is_default_provider(urn: str) -> bool:
    name = urn_name(urn)
    return urn_type(urn).startswith("pulumi:providers:") and (name == "default" or name.startswith("default_"))


def representative(steps: Sequence[Step], category: str) -> Step:
    """The step that describes the change; a replacement shown only as its halves is put back together."""
    for step in steps:
        if CATEGORY.get(step.op, step.op) == category and step.op in (category, "replace"):
            return step
    if category == "replace":
        created = next((s for s in steps if s.op in ("create-replacement", "import-replacement")), None)
        deleted = next((s for s in steps if s.op in ("delete-replaced", "discard-replaced")), None)
        if created and deleted:
            return dataclasses.replace(
                created,
                op="replace",
                old_inputs=deleted.old_inputs,
                replace_reasons=created.replace_reasons or deleted.replace_reasons,
            )
    return steps[0]


def describe(step: Step, category: str) -> list[str]:
    """Detail lines: why a replacement happens and which input values change, old → new, secrets masked."""
    if category not in ("update", "replace"):
        return []
    lines = []
    if category == "replace" and step.replace_reasons:
        lines.append("replaced because " + ", ".join(code(r) for r in step.replace_reasons) + " changed")
    found: list[Change] = []
    if step.old_inputs is not None and step.new_inputs is not None:
        found = list(changes(step.old_inputs, step.new_inputs))
    for change in found:
        old, new = render_change(mask(change.old, change.path, step.type), mask(change.new, change.path, step.type))
        label = path_label(change.path, step.type)
        # Different values that read the same once masked are secrets.
        lines.append(f"{label}: changed (secret)" if old == new else f"{label}: {code(old)} → {code(new)}")
    for path_text, kind in step.detailed_diff:
        path = parse_path(path_text)
        if any(overlaps(path, change.path) for change in found):
            continue
        what = DIFF_KIND.get(kind.removesuffix("-replace"), "changed")
        forces = " (forces replacement)" if kind.endswith("-replace") else ""
        lines.append(f"{path_label(path, step.type)}: {what}{forces}")
    if not lines and step.diff_reasons:
        lines.append("changed: " + ", ".join(code(r) for r in step.diff_reasons))
    if not lines and category == "update":
        lines.append("the provider reports a difference from the current state")
    return lines


def path_label(path: Path, resource_type: str) -> str:
    """Helm values by their path inside `values` (`global.tag`); other release inputs marked as such."""
    if resource_type == HELM_RELEASE:
        if path[:1] == ("values",) and len(path) > 1:
            return code(format_path(path[1:]))
        return f"release {code(format_path(path))}"
    return code(format_path(path))


def describe_drift(step: Step) -> list[str]:
    """What a refresh found: the resource is gone, or which values differ, desired → live."""
    if step.op == "delete":
        return ["deleted outside Pulumi"]
    lines = ["changed outside Pulumi"]
    paths = [parse_path(path) for path, _ in step.detailed_diff] or [(key,) for key in step.diff_reasons]
    if not paths:  # the provider gave no paths: compare what the program set with what the refresh read
        paths = [change.path for change in drifted(step.old_inputs or {}, step.new_inputs or {})]
    for path in paths:
        desired, live = render_change(
            mask(lookup(step.old_inputs, path), path, step.type), mask(lookup(step.new_inputs, path), path, step.type)
        )
        label = path_label(path, step.type)
        lines.append(f"{label}: changed" if desired == live else f"{label}: {code(desired)} → {code(live)} (live)")
    return lines


def component_of(step: Step, parents: Mapping[str, str]) -> str | None:
    """The nearest ancestor that is one of this project's components (`kai-gpu-fractions:*`)."""
    seen = set()
    parent = step.parent
    while parent and parent not in seen:
        seen.add(parent)
        if urn_type(parent).startswith(COMPONENT_PREFIX):
            return parent
        parent = parents.get(parent)
    # A parent chain that leaves the preview (unchanged parents are not listed) still shows in the URN.
    for ancestor in reversed(urn_ancestor_types(step.urn)):
        if ancestor.startswith(COMPONENT_PREFIX):
            return ancestor
    return None


def component_label(component: str | None) -> str:
    if component is None:
        return "**Stack** (top-level resources)"
    if component.startswith("urn:"):
        return f"**{code(urn_name(component))}** ({urn_type(component).rsplit(':', 1)[-1]})"
    return f"**{component.rsplit(':', 1)[-1]}**"


def resource_label(urn: str | None) -> str:
    if not urn or urn_type(urn) == STACK_TYPE:
        return "(stack)"
    return code(urn_name(urn))


def code(text: str) -> str:
    """An inline code span that survives backticks and table pipes."""
    text = text.replace("|", "\\|")
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def escape(text: str) -> str:
    return text.replace("`", "'")


def shorten(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
