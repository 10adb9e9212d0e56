"""The GitHub workflows' actions: each pinned by commit SHA with its release named, on the Node 24
major that docs/ci.md's table records, and kept current by Dependabot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / ".github"
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<target>[^\s#]+)\s*(?:#\s*(?P<comment>.*?))?\s*$")
PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+(?:/[\w./-]+)?)@(?P<sha>[0-9a-f]{40})")
RELEASE = re.compile(r"v(?P<major>\d+)\.\d+\.\d+")
TABLE_ROW = re.compile(r"^\| `(?P<action>[\w.-]+/[\w.-]+)` \| (?P<release>v[\d.]+) \| v(?P<node24>\d+) \|")


@dataclass(frozen=True)
class Use:
    file: str
    line: int
    target: str
    comment: str | None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def workflow_files() -> list[Path]:
    return sorted(p for p in GITHUB.rglob("*") if p.suffix in (".yml", ".yaml") and p.name != "dependabot.yml")


def uses_of(path: Path) -> list[Use]:
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := USES.match(line):
            found.append(Use(str(path.relative_to(ROOT)), number, match["target"].strip("'\""), match["comment"]))
    return found


def yaml_uses(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "uses"] + [u for v in node.values() for u in yaml_uses(v)]
    if isinstance(node, list):
        return [u for item in node for u in yaml_uses(item)]
    return []


def remote(uses: list[Use]) -> list[Use]:
    return [u for u in uses if not u.target.startswith("./")]


def node24_table() -> dict[str, tuple[str, int]]:
    """docs/ci.md's "Pinned actions" table: action → (release pinned, first Node 24 major)."""
    text = (ROOT / "docs" / "ci.md").read_text()
    section = text[text.index("## Pinned actions") :]
    section = section[: section.index("\n## ", 1)]
    return {m["action"]: (m["release"], int(m["node24"])) for m in map(TABLE_ROW.match, section.splitlines()) if m}


ALL_USES = [use for path in workflow_files() for use in uses_of(path)]


def problems_of(use: Use, table: dict[str, tuple[str, int]]) -> list[str]:
    """What is wrong with one `uses:` of another repository's action."""
    pinned = PINNED.fullmatch(use.target)
    if not pinned:
        return [f"{use.where}: {use.target} is not pinned by a full commit SHA"]
    release = RELEASE.fullmatch(use.comment or "")
    if not release:
        return [f"{use.where}: {use.target} has no '# vX.Y.Z' comment naming its release"]
    action = "/".join(pinned["action"].split("/")[:2])
    if action not in table:
        return [f"{use.where}: {action} is not in docs/ci.md's table of pinned actions and their Node 24 majors"]
    expected, node24 = table[action]
    problems = []
    if int(release["major"]) < node24:
        problems.append(f"{use.where}: {action} {use.comment} runs on an older Node than v{node24}'s Node 24")
    if use.comment != expected:
        problems.append(f"{use.where}: {action} is pinned to {use.comment}, docs/ci.md says {expected}")
    return problems


def test_every_uses_line_is_seen_and_the_yaml_agrees() -> None:
    for path in workflow_files():
        parsed = yaml_uses(yaml.safe_load(path.read_text()))
        assert sorted(parsed) == sorted(u.target for u in uses_of(path)), f"{path}: a uses: the line scan missed"
    assert len(remote(ALL_USES)) >= 10, "checkout, setup-python, github-script and pulumi/actions in every workflow"


def test_every_action_is_pinned_by_sha_with_its_release_on_its_node24_major() -> None:
    table = node24_table()
    assert {"actions/checkout", "actions/setup-python", "actions/github-script", "pulumi/actions"} <= table.keys()
    problems = [p for use in remote(ALL_USES) for p in problems_of(use, table)]
    assert problems == [], "\n".join(problems)


def test_one_action_is_pinned_to_one_commit_everywhere() -> None:
    pins: dict[str, set[tuple[str, str | None]]] = {}
    for use in remote(ALL_USES):
        action, _, sha = use.target.partition("@")
        pins.setdefault(action, set()).add((sha, use.comment))
    assert {a: p for a, p in pins.items() if len(p) > 1} == {}, "a Dependabot update moves every step at once"


def test_every_action_in_the_table_is_used() -> None:
    used = {"/".join(u.target.split("@")[0].split("/")[:2]) for u in remote(ALL_USES)}
    assert node24_table().keys() <= used, "a table row for an action no workflow uses is stale"


@pytest.mark.parametrize(
    ("target", "comment", "problem"),
    [
        ("pulumi/actions@v6.0.0", None, "is not pinned by a full commit SHA"),
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683", None, "has no '# vX.Y.Z' comment"),
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2", "runs on an older Node than v5's"),
        ("actions/cache@0400d5f644dc74513175e3cd8d07132dd4860809", "v4.2.4", "is not in docs/ci.md's table"),
    ],
)
def test_the_check_refuses_a_tag_a_bare_sha_a_node20_major_and_an_unlisted_action(
    target: str, comment: str | None, problem: str
) -> None:
    table = {"actions/checkout": ("v7.0.1", 5), "pulumi/actions": ("v7.0.0", 7)}
    problems = problems_of(Use("x.yml", 1, target, comment), table)
    assert any(problem in p for p in problems), problems


def test_dependabot_keeps_the_actions_of_the_workflows_and_the_composite_action_current() -> None:
    config = yaml.safe_load((GITHUB / "dependabot.yml").read_text())
    assert config["version"] == 2
    (actions,) = [u for u in config["updates"] if u["package-ecosystem"] == "github-actions"]
    directories = set(actions.get("directories") or [actions.get("directory")])
    assert "/" in directories, "/ covers .github/workflows"
    composite = {str(p.parent.relative_to(ROOT)) for p in (GITHUB / "actions").glob("*/action.yml")}
    assert all(f"/{c}" in directories or "/.github/actions/*" in directories for c in composite), (
        "Dependabot reads composite actions only in the directories it is given"
    )
    assert actions["schedule"]["interval"] in ("daily", "weekly", "monthly")
