"""The attacker's corpus (tests/attack_corpus.py) through every policy of the pack, as the shared table's
pack tier runs a case: it refuses every attack but the recorded gaps and no compliant entry, and its
figures are the README's."""

from __future__ import annotations

from pathlib import Path

from tests.attack_corpus import corpus, expected_misses, figures
from tests.guide_rules import GuideCase
from tests.policy.guide_stack import case_stack
from tests.policy.test_guide_rules import verdicts_of

README = Path(__file__).resolve().parents[2] / "README.md"


def refused_by_the_pack(case: GuideCase) -> bool:
    stack = case_stack(case)
    return any(v.resource == stack.target for v in verdicts_of(stack.resources))


def test_the_pack_refuses_every_attack_but_the_recorded_gaps() -> None:
    entries = corpus("pack")
    refused = {entry.case.case: "pack" for entry in entries if refused_by_the_pack(entry.case)}
    row = figures("pack", entries, refused)
    print(row)  # noqa: T201
    missed = {e.case.case for e in entries if e.case.expect == "deny" and e.case.case not in refused}
    false_positives = sorted(e.case.case for e in entries if e.case.expect == "allow" and e.case.case in refused)
    assert false_positives == [], f"compliant entries refused: {false_positives}"
    expected = expected_misses("pack", entries)
    assert sorted(missed - expected) == [], "attacks let through that gaps.yaml does not record"
    assert sorted(expected - missed) == [], "recorded gaps the pack now refuses: remove them from gaps.yaml"
    assert row in README.read_text(), f"the README's figures are not the pack's: {row}"
