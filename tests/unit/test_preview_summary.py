"""tools.preview_summary: `pulumi preview` JSON in, a short markdown summary out.

Fixtures live in tests/fixtures/previews/ (its README says how each was made):
  - standin-*.json: REAL output of the pulumi v3.260.0 CLI for a stand-in program (a dynamic-provider
    resource inside a kai-gpu-fractions component, plus a stand-in policy pack);
  - handmade-*.json: written BY HAND (by a script over the program's mock-run inputs) in the exact shapes
    of pulumi v3.260.0: handmade-pin-bump.json, handmade-pin-bump-prebuilt.json, handmade-tag-mismatch.json;
  - pin-bump.json and tag-mismatch.json, once recorded from this project's stacks on the local control plane,
    run through the same tests as their handmade stand-ins.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from components.rollout.plan import LOG_PREFIX
from tools.preview_summary import has_changes, parse, resource_changes, summarize
from tools.preview_summary.__main__ import main
from tools.preview_summary.model import ROLLOUT_PREFIX, PreviewFormatError
from tools.preview_summary.values import SECRET_SIGNATURE, SIGNATURE_KEY, UNKNOWN_PLACEHOLDER, format_path, parse_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "previews"
OLD_TAG = "smshare-44d1d0a-af0544e"
# Any other pairing of two short SHAs: a real recording may bump either fork's pin.
NEW_TAG = re.compile(r"smshare-(?!44d1d0a-af0544e)[0-9a-f]{7}-[0-9a-f]{7}")
ROOT = "urn:pulumi:a100::kai-gpu-fractions::pulumi:pulumi:Stack::kai-gpu-fractions-a100"
KAI = "urn:pulumi:a100::kai-gpu-fractions::kai-gpu-fractions:kai:KaiScheduler::kai-scheduler"
KAI_RELEASE = (
    "urn:pulumi:a100::kai-gpu-fractions::kai-gpu-fractions:kai:KaiScheduler$kubernetes:helm.sh/v3:Release"
    "::kai-scheduler-release"
)
RELEASE = "kubernetes:helm.sh/v3:Release"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def recorded_or(handmade: str, real: str) -> list[str]:
    """The handmade fixture, plus the real recording once it exists."""
    return [handmade, *([real] if (FIXTURES / real).exists() else [])]


def table_rows(summary: str) -> dict[str, str]:
    """Resource name -> its table row."""
    rows = {}
    for line in summary.splitlines():
        if match := re.match(r"^\| `([^`]+)` \|", line):
            rows[match.group(1)] = line
    return rows


def section(summary: str, heading: str) -> str:
    """The lines from a component heading (`**`name`**`) up to the next blank line after its table."""
    start = summary.index(heading)
    end = summary.find("\n\n**", start + len(heading))
    return summary[start : end if end >= 0 else len(summary)]


def release_step(values: dict[str, Any], new_values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One digest step updating the KAI release from `values` to `new_values`."""
    return {
        "op": "update",
        "urn": KAI_RELEASE,
        "oldState": {"urn": KAI_RELEASE, "type": RELEASE, "parent": KAI, "inputs": {"values": values}},
        "newState": {"urn": KAI_RELEASE, "type": RELEASE, "parent": KAI, "inputs": {"values": new_values}},
        "diffReasons": ["values"],
        "detailedDiff": None,
        **extra,
    }


def digest(*steps: dict[str, Any], **fields: Any) -> str:
    return json.dumps({"steps": list(steps), **fields})


# --- the two scenarios -------------------------------------------------------------------


def test_a_fork_pin_bump_shows_the_images_of_both_forks_rebuilt() -> None:
    summary = summarize(parse(fixture("handmade-pin-bump.json")))
    rows = table_rows(summary)
    for build in ("kai-scheduler-images-build", "kai-gpu-fractioning-images-build"):
        assert "+- replace" in rows[build], f"{build} must be shown as replaced (the images are rebuilt)"
        assert "replaced because `triggers` changed" in rows[build], "the summary must say why it is replaced"
        assert re.search(rf"`{OLD_TAG}` → `{NEW_TAG.pattern}`", rows[build]), "the rebuilt tag must be visible"
    assert "`kai-scheduler-images-build`" in section(summary, "**`kai-scheduler-images`** (ForkImages)"), (
        "a build command is listed under the ForkImages component that owns it"
    )


def test_with_images_built_in_the_stack_both_releases_get_the_tag_once_the_build_ran() -> None:
    rows = table_rows(summarize(parse(fixture("handmade-pin-bump.json"))))
    assert f"`global.tag`: `{OLD_TAG}` → `(known after apply)`" in rows["kai-scheduler-release"], (
        "the KAI release takes its tag from the image build, which preview cannot run"
    )
    for image in ("operator", "mpsd", "fractiond", "metricsd"):
        assert f"`images.{image}.tag`: `{OLD_TAG}` → `(known after apply)`" in rows["gpu-fractioning-release"]


@pytest.mark.parametrize("name", recorded_or("handmade-pin-bump-prebuilt.json", "pin-bump.json"))
def test_a_fork_pin_bump_updates_both_releases_with_the_new_tag(name: str) -> None:
    summary = summarize(parse(fixture(name)))
    kai = section(summary, "**`kai-scheduler`** (KaiScheduler)")
    agents = section(summary, "**`gpu-fractioning`** (GpuFractioning)")
    assert "~ update" in table_rows(kai)["kai-scheduler-release"], "the KAI release must be updated in place"
    assert re.search(rf"`global.tag`: `{OLD_TAG}` → `{NEW_TAG.pattern}`", kai), "KAI's new tag must be shown"
    for image in ("operator", "mpsd", "fractiond", "metricsd"):
        assert re.search(rf"`images.{image}.tag`: `{OLD_TAG}` → `{NEW_TAG.pattern}`", agents), (
            f"the node agents' {image} image must move to the new tag"
        )


@pytest.mark.parametrize("name", recorded_or("handmade-tag-mismatch.json", "tag-mismatch.json"))
def test_a_tag_mismatch_shows_the_mandatory_policy_violation_first(name: str) -> None:
    summary = summarize(parse(fixture(name)))
    header = summary.splitlines()[2]
    assert "mandatory policy violation" in header and "**preview failed**" in header, (
        "the header line must say the change is blocked"
    )
    violations = summary.index("#### Policy violations")
    assert violations < summary.index("| Resource | Type | Change | Details |"), "violations come before changes"
    rows = [line for line in summary.splitlines() if "`kai-fork-require-paired-image-tags`" in line]
    assert rows and all(row.startswith("| **mandatory** |") for row in rows), "each violation is called mandatory"
    assert any("smshare-a" in row and "smshare-b" in row for row in rows), "the message names both tags"
    assert "block this change" in summary or "blocks this change" in summary


# --- real CLI output of the stand-in program -----------------------------------------------------


def test_policy_violations_come_from_the_event_log_with_the_description_line_dropped() -> None:
    preview = parse(fixture("standin-replace-events.json"))
    assert [(v.policy, v.level) for v in preview.violations] == [
        ("exp-res-policy", "advisory"),
        ("exp-stack-policy", "mandatory"),
        ("exp-stack-policy", "mandatory"),
    ], "every policyEvent becomes one violation, in order"
    assert preview.violations[1].message == "KAI global.tag 'bad' differs from the agents' tag 'x'", (
        "the policy SDK's first line (the policy description) is not part of the violation"
    )
    summary = summarize(preview)
    assert "| **mandatory** | `exp-stack-policy` | (stack) |" in summary, "a stack-level violation names the stack"


def test_a_digest_and_an_event_log_of_one_preview_show_the_same_changes() -> None:
    from_digest = resource_changes(parse(fixture("standin-replace-digest.json")))
    from_events = resource_changes(parse(fixture("standin-replace-events.json")))
    assert from_digest == from_events, "both formats describe one preview"
    assert [(r.category, r.details[0]) for r in from_events] == [("replace", "replaced because `triggers` changed")], (
        "create-replacement, replace and delete-replaced are one replacement"
    )


def test_a_failed_digest_says_that_policy_results_are_not_in_it() -> None:
    summary = summarize(parse(fixture("standin-replace-digest.json")))
    assert "carries no policy results" in summary, "a reader must not take the digest's silence for a pass"
    assert "#### Diagnostics" not in summary, "the generic 'preview failed' is in the header, not listed"


def test_debug_messages_and_unchanged_resources_stay_out_of_the_summary() -> None:
    summary = summarize(parse(fixture("standin-replace-events.json")))
    assert "registering resource" not in summary, "debug diagnostics are noise"
    assert "kgf-exp-dev" not in summary, "the root stack is not a row"


def test_a_refresh_that_finds_an_out_of_band_edit_shows_desired_and_live_values() -> None:
    preview = parse(fixture("standin-refresh-events.json"))
    assert has_changes(preview), "drift is a change"
    rows = table_rows(summarize(preview, title="Drift check"))
    assert "changed outside Pulumi" in rows["kai-scheduler-release"]
    assert "`values.global.tag`: `smshare-44d1d0a-af0544e` → `edited-by-hand` (live)" in rows["kai-scheduler-release"]


def test_a_preview_with_refresh_reports_drift_as_a_change() -> None:
    preview = parse(fixture("standin-drift-events.json"))
    assert has_changes(preview), "`preview --refresh` proposes to undo the edit"
    assert "1 to update" in summarize(preview), "the engine's own counts make the header"


def test_a_converged_stack_has_no_changes_and_a_one_line_summary() -> None:
    preview = parse(fixture("standin-no-changes-events.json"))
    assert not has_changes(preview)
    summary = summarize(preview)
    assert summary.splitlines()[2] == "no changes · 3 unchanged", "nothing but the counts"
    assert "|" not in summary, "no tables without changes"


# --- secrets -------------------------------------------------------------------------------------


def test_a_secret_envelope_is_masked_even_when_it_carries_its_plaintext() -> None:
    secret = {SIGNATURE_KEY: SECRET_SIGNATURE, "plaintext": '"hunter2"'}
    rpc_secret = {SIGNATURE_KEY: SECRET_SIGNATURE, "value": "hunter2"}
    text = digest(release_step({"auth": secret, "other": rpc_secret}, {"auth": "new-value", "other": "x"}))
    summary = summarize(parse(text))
    assert "hunter2" not in summary, "a secret's plaintext must never be printed"
    assert "`auth`: `[secret]` → `new-value`" in summary, "the change is still shown, with the secret masked"


def test_values_under_password_token_secret_or_dockerconfigjson_keys_are_masked_unmarked() -> None:
    old = {"registry": {"password": "p1", "apiToken": "t1", "clientSecret": "s1", ".dockerconfigjson": "d1"}}
    new = {"registry": {"password": "p2", "apiToken": "t2", "clientSecret": "s2", ".dockerconfigjson": "d2"}}
    summary = summarize(parse(digest(release_step(old, new))))
    for plaintext in ("p1", "p2", "t1", "t2", "s1", "s2", "d1", "d2"):
        assert f"`{plaintext}`" not in summary, f"{plaintext} sits under a sensitive key and must be masked"
    assert "`registry.password`: changed (secret)" in summary, "a masked value still shows that it changed"


def test_a_whole_added_subtree_is_masked_below_sensitive_keys() -> None:
    summary = summarize(parse(digest(release_step({}, {"auth": {"user": "robot", "password": "p"}}))))
    assert '`auth`: `(unset)` → `{"user":"robot","password":"[secret]"}`' in summary, (
        "an added map is shown compactly, its sensitive members masked"
    )


def test_every_value_of_a_kubernetes_secret_is_masked() -> None:
    urn = "urn:pulumi:a100::kai-gpu-fractions::kubernetes:core/v1:Secret::pull"
    step = {
        "op": "update",
        "urn": urn,
        "oldState": {"type": "kubernetes:core/v1:Secret", "inputs": {"data": {"auth": "b2xk"}}},
        "newState": {"type": "kubernetes:core/v1:Secret", "inputs": {"data": {"auth": "bmV3"}}},
        "detailedDiff": None,
    }
    summary = summarize(parse(digest(step)))
    assert "b2xk" not in summary and "bmV3" not in summary, "Secret data is sensitive whatever its key"
    assert "`data.auth`: changed (secret)" in summary


def test_a_changed_secret_that_both_sides_mask_is_reported_from_the_detailed_diff() -> None:
    step = release_step(
        {"global": {"tag": "a"}, "password": "[secret]"},
        {"global": {"tag": "a"}, "password": "[secret]"},
        detailedDiff={"values.password": {"kind": "update", "inputDiff": True}},
    )
    assert "`password`: changed" in summarize(parse(digest(step))), "the provider's diff shows the secret changed"


def test_the_handmade_fixtures_hold_no_plaintext_registry_password() -> None:
    for name in ("handmade-pin-bump.json", "handmade-pin-bump-prebuilt.json"):
        summary = summarize(parse(fixture(name)))
        assert "hunter2" not in fixture(name) and "hunter2" not in summary


# --- shape handling ------------------------------------------------------------------------------


def test_values_unknown_during_preview_read_as_known_after_apply() -> None:
    step = release_step({"global": {"tag": OLD_TAG}}, {"global": {"tag": UNKNOWN_PLACEHOLDER}})
    assert f"`global.tag`: `{OLD_TAG}` → `(known after apply)`" in summarize(parse(digest(step)))


def test_helm_release_inputs_outside_values_are_marked_as_release_inputs() -> None:
    step = release_step({}, {})
    step["oldState"]["inputs"]["version"] = "v26.7.0"
    step["newState"]["inputs"]["version"] = "v26.7.1"
    assert "release `version`: `v26.7.0` → `v26.7.1`" in summarize(parse(digest(step)))


def test_resources_are_grouped_by_their_component_even_when_the_component_is_not_in_the_preview() -> None:
    step = release_step({"a": 1}, {"a": 2})
    summary = summarize(parse(digest(step)))
    assert "**`kai-scheduler`** (KaiScheduler)" in summary, "the parent URN names the component"
    provider = {"op": "create", "urn": "urn:pulumi:a100::kai-gpu-fractions::pulumi:providers:kubernetes::cluster"}
    assert "**Stack** (top-level resources)" in summarize(parse(digest(provider)))


def test_the_header_counts_come_from_the_engines_change_summary() -> None:
    text = digest(release_step({"a": 1}, {"a": 2}), changeSummary={"update": 1, "same": 17})
    assert summarize(parse(text)).splitlines()[2] == "1 to update · 17 unchanged"


def test_the_stack_name_comes_from_the_urns_unless_given() -> None:
    text = digest(release_step({"a": 1}, {"a": 2}))
    assert summarize(parse(text)).startswith("### Pulumi preview: `a100`\n")
    assert summarize(parse(text), stack="prod", title="Drift check").startswith("### Drift check: `prod`\n")


def test_table_cells_survive_pipes_and_backticks_in_values() -> None:
    summary = summarize(parse(digest(release_step({"cmd": "a | b"}, {"cmd": "echo `x`"}))))
    assert "`cmd`: `a \\| b` → `` echo `x` ``" in summary, "a pipe would end the cell; a backtick the code span"


def test_long_values_are_cut_around_where_they_first_differ() -> None:
    old, new = "/charts/" + "x" * 120 + "/v1", "/charts/" + "x" * 120 + "/v2"
    summary = summarize(parse(digest(release_step({"path": old}, {"path": new}))))
    line = table_rows(summary)["kai-scheduler-release"]
    assert "x/v1`" in line and "x/v2`" in line, "the differing ends must be visible"
    assert "`…x" in line, "the cut-off common start is marked"


def test_long_summaries_are_cut_to_fit_a_github_comment() -> None:
    steps = [release_step({"k": "x" * 60, "n": i}, {"k": "y" * 60, "n": i + 1}) for i in range(400)]
    for index, step in enumerate(steps):
        step["urn"] = step["oldState"]["urn"] = f"{KAI_RELEASE}-{index}"
    summary = summarize(parse(digest(*steps)), max_length=20_000)
    assert len(summary) <= 20_000, "the summary must fit the limit"
    assert summary.rstrip().endswith("_Summary truncated; the job log has the full diff._")


def test_property_paths_read_like_detailed_diff_keys_both_ways() -> None:
    path = ("values", "gpu-operator", "tag", 0, ".dockerconfigjson", "nvidia.com/gpu", 'say "hi"')
    text = format_path(path)
    assert text == 'values.gpu-operator.tag[0][".dockerconfigjson"]["nvidia.com/gpu"]["say \\"hi\\""]'
    assert parse_path(text) == path, "a detailedDiff key parses back into the same path"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the input is empty"),
        ('{"unexpected": true}', "expected the output of"),
        ('{"sequence": 1, "diagnosticEvent": {}}\nnot json\n', "line 2 is not JSON"),
    ],
)
def test_input_that_is_neither_format_is_rejected_with_a_reason(text: str, reason: str) -> None:
    with pytest.raises(PreviewFormatError, match=reason):
        parse(text)


# --- the command line ----------------------------------------------------------------------------


def test_the_command_reads_a_file_argument_and_prints_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(FIXTURES / "handmade-tag-mismatch.json")]) == 0
    assert capsys.readouterr().out.startswith("### Pulumi preview: `violating`")


def test_the_command_reads_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(fixture("standin-replace-digest.json")))
    assert main(["--stack", "dev"]) == 0
    assert "+- replace" in capsys.readouterr().out


def test_detect_changes_exits_2_on_changes_and_0_without(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--detect-changes", str(FIXTURES / "standin-refresh-events.json")]) == 2, "drift is a change"
    assert main(["--detect-changes", str(FIXTURES / "standin-no-changes-events.json")]) == 0
    assert main([str(FIXTURES / "standin-refresh-events.json")]) == 0, "without the flag, changes are not an error"
    capsys.readouterr()


def test_the_command_reports_unreadable_input_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "preview.json"
    broken.write_text("error: no stack selected\n")
    assert main([str(broken)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "", "nothing half-rendered on stdout"
    assert "line 1 is not JSON" in captured.err


def test_the_rollout_plan_the_program_logs_gets_a_section_of_its_own() -> None:
    plan = "driver 615.71.09 -> 615.80.01: full driver reinstall on each of 2 GPU nodes"
    events = [
        {
            "diagnosticEvent": {
                "urn": ROOT,
                "prefix": "info: ",
                "message": f"{ROLLOUT_PREFIX}{plan}\n",
                "severity": "info",
            }
        },
        {"diagnosticEvent": {"urn": ROOT, "message": "unrelated chatter\n", "severity": "info"}},
        {"summaryEvent": {"resourceChanges": {"same": 3}, "result": "succeeded", "isPreview": True}},
    ]
    summary = summarize(parse("\n".join(json.dumps(e) for e in events)))
    assert f"#### Rollout plan\n\n- {plan}\n" in summary
    assert "unrelated chatter" not in summary, "other info messages stay out"


def test_the_summary_knows_the_prefix_the_program_logs_its_plan_with() -> None:
    assert ROLLOUT_PREFIX == LOG_PREFIX
