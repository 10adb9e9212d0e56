"""Reads what the Pulumi CLI writes about a preview into one model.

Two inputs are accepted, and told apart by their shape:

* the preview digest, `pulumi preview --json`: one JSON object with `steps` (`op`, `urn`, `oldState`,
  `newState`, `diffReasons`, `replaceReasons`, `detailedDiff` of `{kind, inputDiff}`), `diagnostics`
  and `changeSummary` (pulumi pkg/display/json.go, backend/display/json.go). The digest never
  carries policy results: the CLI drops policy events from it.
* engine events, one JSON object per line: the file of `pulumi preview --event-log FILE` (with
  `PULUMI_DEBUG_COMMANDS=true`) or the output of `pulumi preview --json` with
  `PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true` (apitype.EngineEvent). Steps come from
  `resourcePreEvent.metadata` (`op`, `urn`, `type`, `old`, `new`, `keys`, `diffs`, `detailedDiff` of
  `{diffKind, inputDiff}`), policy violations from `policyEvent`, counts from `summaryEvent`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools.preview_summary.values import normalize_inputs

# Color directives (`<{%fg 1%}>`) survive in messages unless the CLI ran with --color never.
_COLOR_DIRECTIVE = re.compile(r"<\{%[^%]*%\}>")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
EVENT_KEYS = frozenset(
    {
        "resourcePreEvent",
        "resOutputsEvent",
        "resOpFailedEvent",
        "diagnosticEvent",
        "policyEvent",
        "summaryEvent",
        "preludeEvent",
        "stdoutEvent",
        "cancelEvent",
        "policyLoadEvent",
        "policyAnalyzeSummaryEvent",
        "policyRemediateSummaryEvent",
        "policyAnalyzeStackSummaryEvent",
        "policyRemediationEvent",
        "startDebuggingEvent",
        "progressEvent",
        "errorEvent",
    }
)
DIGEST_KEYS = frozenset({"steps", "diagnostics", "changeSummary", "config", "duration", "maybeCorrupt"})


class PreviewFormatError(ValueError):
    """The input is neither a preview digest nor engine events."""


@dataclass(frozen=True)
class Step:
    """One step the engine plans for a resource; inputs are normalized (secrets and unknowns are markers)."""

    op: str
    urn: str
    type: str
    parent: str | None
    old_inputs: dict[str, Any] | None
    new_inputs: dict[str, Any] | None
    diff_reasons: tuple[str, ...] = ()
    replace_reasons: tuple[str, ...] = ()
    # Property path -> diff kind (add, update, delete, and their -replace forms).
    detailed_diff: tuple[tuple[str, str], ...] = ()
    # Set on steps that report what a refresh found (op "update" or "delete"); their `new_inputs` are the
    # live outputs the refresh read, so that details compare the desired value with the live one.
    drift: bool = False


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    message: str
    urn: str | None


@dataclass(frozen=True)
class PolicyViolation:
    policy: str
    pack: str
    level: str  # mandatory, advisory (remediate is reported as a remediation, not a violation)
    message: str
    urn: str | None


@dataclass(frozen=True)
class Preview:
    steps: tuple[Step, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    violations: tuple[PolicyViolation, ...] = ()
    change_summary: Mapping[str, int] | None = None
    # "succeeded" or "failed" when the engine said so (events); None for a digest.
    result: str | None = None
    is_preview: bool = True
    has_policy_results: bool = False
    stacks: tuple[str, ...] = ()
    # "digest" (`pulumi preview --json`) or "events" (event log or streaming JSON).
    source: str = "digest"
    # What the program said the update will do to the running cluster, one line each.
    rollout_plan: tuple[str, ...] = ()


def parse(text: str) -> Preview:
    """Parses a preview digest or an engine event stream (see the module docstring)."""
    stripped = text.strip()
    if not stripped:
        raise PreviewFormatError("the input is empty")
    try:
        document = json.loads(stripped)
    except json.JSONDecodeError:
        return from_events(_json_lines(stripped))
    if isinstance(document, Mapping) and isinstance(document.get("events"), list):
        return from_events(document["events"])  # the service's GetUpdateEvents response
    if isinstance(document, list):
        return from_events(document)
    if isinstance(document, Mapping) and EVENT_KEYS & document.keys():
        return from_events([document])
    if isinstance(document, Mapping) and (DIGEST_KEYS & document.keys() or not document):
        return from_digest(document)
    raise PreviewFormatError("expected the output of `pulumi preview --json` or an engine event log")


def _json_lines(text: str) -> list[Any]:
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise PreviewFormatError(f"line {number} is not JSON ({error.msg}): {line[:80]!r}") from None
    return events


def from_digest(digest: Mapping[str, Any]) -> Preview:
    steps = tuple(
        _step(
            step,
            old=step.get("oldState"),
            new=step.get("newState"),
            diff_reasons=step.get("diffReasons"),
            replace_reasons=step.get("replaceReasons"),
            kind_key="kind",
        )
        for step in digest.get("steps") or ()
        if isinstance(step, Mapping)
    )
    diagnostics = tuple(
        _diagnostic(item)
        for item in digest.get("diagnostics") or ()
        if isinstance(item, Mapping) and _shown(item.get("severity"))
    )
    summary = digest.get("changeSummary")
    return Preview(
        steps=steps,
        diagnostics=diagnostics,
        rollout_plan=_rollout_plan(digest.get("diagnostics") or ()),
        change_summary=_counts(summary),
        stacks=_stacks(step.urn for step in steps),
    )


def from_events(events: Iterable[Any]) -> Preview:
    steps: list[Step] = []
    diagnostics: list[Diagnostic] = []
    infos: list[Mapping[str, Any]] = []
    violations: list[PolicyViolation] = []
    refreshing: set[str] = set()
    summary: Mapping[str, Any] | None = None
    has_policy_results = False
    for event in events:
        if not isinstance(event, Mapping):
            raise PreviewFormatError("an engine event is not a JSON object")
        if pre := event.get("resourcePreEvent"):
            metadata = pre.get("metadata") or {}
            if metadata.get("op") == "refresh":
                refreshing.add(str(metadata.get("urn")))
            else:
                steps.append(_event_step(metadata))
        elif outputs := event.get("resOutputsEvent"):
            metadata = outputs.get("metadata") or {}
            urn = str(metadata.get("urn"))
            # The first outputs event after a refresh step is the refresh's own; later ones belong to the
            # program's step for the same resource (`preview --refresh`).
            if urn in refreshing:
                refreshing.discard(urn)
                if drift := _refresh_result(metadata):
                    steps.append(_drift_step(metadata, drift))
        elif diagnostic := event.get("diagnosticEvent"):
            if _shown(diagnostic.get("severity")) and not diagnostic.get("ephemeral"):
                diagnostics.append(_diagnostic(diagnostic))
            infos.append(diagnostic)
        elif policy := event.get("policyEvent"):
            has_policy_results = True
            violations.append(
                PolicyViolation(
                    policy=str(policy.get("policyName") or "?"),
                    pack=str(policy.get("policyPackName") or "?"),
                    level=str(policy.get("enforcementLevel") or "advisory"),
                    message=_violation_text(str(policy.get("message") or "")),
                    urn=policy.get("resourceUrn") or None,
                )
            )
        elif (
            "policyLoadEvent" in event
            or "policyAnalyzeSummaryEvent" in event
            or "policyAnalyzeStackSummaryEvent" in event
        ):
            has_policy_results = True
        elif "summaryEvent" in event:
            summary = event["summaryEvent"] or {}
    return Preview(
        steps=tuple(steps),
        diagnostics=tuple(diagnostics),
        violations=tuple(violations),
        change_summary=_counts(summary.get("resourceChanges")) if summary else None,
        result=str(summary["result"]) if summary and summary.get("result") else None,
        is_preview=bool(summary.get("isPreview", True)) if summary else True,
        has_policy_results=has_policy_results,
        stacks=_stacks(step.urn for step in steps),
        source="events",
        rollout_plan=_rollout_plan(infos),
    )


def _refresh_result(metadata: Mapping[str, Any]) -> str | None:
    """What a finished refresh found: "delete" (gone), "update" (the provider reports a difference) or None.

    Older CLIs rewrite the op of a refresh that found something; newer ones keep `refresh` and report
    the provider's diff (live state against the program's last inputs) in `diffs` and `detailedDiff`.
    """
    op = metadata.get("op")
    if op == "delete" or (op == "refresh" and not metadata.get("new")):
        return "delete"
    if op == "update" or metadata.get("diffs") or metadata.get("detailedDiff"):
        return "update"
    return None


def _drift_step(metadata: Mapping[str, Any], op: str) -> Step:
    """A drift finding; its "new inputs" are the live outputs, so details compare desired with live values."""
    step = _event_step(metadata, drift=True)
    new_state = metadata.get("new")
    live = normalize_inputs(new_state.get("outputs")) if isinstance(new_state, Mapping) else None
    return dataclasses.replace(step, op=op, new_inputs=live)


def _event_step(metadata: Mapping[str, Any], drift: bool = False) -> Step:
    return _step(
        metadata,
        old=metadata.get("old"),
        new=metadata.get("new"),
        diff_reasons=metadata.get("diffs"),
        replace_reasons=metadata.get("keys"),
        kind_key="diffKind",
        drift=drift,
    )


def _step(
    raw: Mapping[str, Any],
    old: Any,
    new: Any,
    diff_reasons: Any,
    replace_reasons: Any,
    kind_key: str,
    drift: bool = False,
) -> Step:
    old_state = old if isinstance(old, Mapping) else {}
    new_state = new if isinstance(new, Mapping) else {}
    urn = str(raw.get("urn") or new_state.get("urn") or old_state.get("urn") or "")
    detailed = raw.get("detailedDiff")
    return Step(
        op=str(raw.get("op") or "same"),
        urn=urn,
        type=str(raw.get("type") or new_state.get("type") or old_state.get("type") or urn_type(urn)),
        parent=new_state.get("parent") or old_state.get("parent") or None,
        old_inputs=normalize_inputs(old_state.get("inputs")) if old_state else None,
        new_inputs=normalize_inputs(new_state.get("inputs")) if new_state else None,
        diff_reasons=tuple(str(key) for key in diff_reasons or ()),
        replace_reasons=tuple(str(key) for key in replace_reasons or ()),
        detailed_diff=tuple(
            (str(path), str(diff.get(kind_key) or diff.get("kind") or "update"))
            for path, diff in (detailed.items() if isinstance(detailed, Mapping) else ())
            if isinstance(diff, Mapping)
        ),
        drift=drift,
    )


# The prefix the program logs each line of its rollout plan with (components/rollout/plan.py).
ROLLOUT_PREFIX = "rollout plan: "


def _rollout_plan(diagnostics: Iterable[Any]) -> tuple[str, ...]:
    found = (
        clean_text(str(d.get("message") or "")).removeprefix("info: ").strip()
        for d in diagnostics
        if isinstance(d, Mapping) and d.get("severity") == "info"
    )
    return tuple(dict.fromkeys(line.removeprefix(ROLLOUT_PREFIX) for line in found if line.startswith(ROLLOUT_PREFIX)))


def _shown(severity: Any) -> bool:
    # Debug output and the program's own stdout and stderr (info, info#err) are noise in a summary.
    return severity in ("error", "warning")


def _diagnostic(raw: Mapping[str, Any]) -> Diagnostic:
    severity = str(raw.get("severity"))
    message = clean_text(str(raw.get("message") or ""))
    # The digest folds the prefix ("error: ") into the message; events keep it apart.
    return Diagnostic(severity=severity, message=message.removeprefix(f"{severity}: "), urn=raw.get("urn") or None)


def _violation_text(message: str) -> str:
    """The violation without the policy description the policy SDK puts on its first line."""
    lines = [line for line in clean_text(message).splitlines() if line.strip()]
    return " ".join(lines[1:] if len(lines) > 1 else lines)


def clean_text(text: str) -> str:
    return _ANSI.sub("", _COLOR_DIRECTIVE.sub("", text)).strip()


def _counts(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, Mapping):
        return None
    return {str(op): int(count) for op, count in raw.items() if isinstance(count, int | float)}


def _stacks(urns: Iterable[str]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for urn in urns:
        if name := urn_stack(urn):
            found[name] = None
    return tuple(found)


def urn_parts(urn: str) -> tuple[str, str, str, str]:
    """(stack, project, qualified type, name) of `urn:pulumi:<stack>::<project>::<qualified type>::<name>`."""
    if not urn.startswith("urn:pulumi:"):
        return "", "", "", urn
    pieces = urn.removeprefix("urn:pulumi:").split("::", 3)
    while len(pieces) < 4:
        pieces.append("")
    return pieces[0], pieces[1], pieces[2], pieces[3]


def urn_stack(urn: str) -> str:
    return urn_parts(urn)[0]


def urn_type(urn: str) -> str:
    """The resource's own type: the last `$`-separated segment of the qualified type."""
    return urn_parts(urn)[2].rsplit("$", 1)[-1]


def urn_ancestor_types(urn: str) -> tuple[str, ...]:
    """The types of the resource's ancestors, outermost first, as encoded in its URN."""
    return tuple(urn_parts(urn)[2].split("$")[:-1])


def urn_name(urn: str) -> str:
    return urn_parts(urn)[3]
