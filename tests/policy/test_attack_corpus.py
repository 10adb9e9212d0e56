"""The attacker's corpus (tests/attack_corpus.py) through every policy of the pack, as the shared table's
pack tier runs a case: it refuses every attack but the recorded gaps and no compliant entry, and its
figures are the README's."""

from __future__ import annotations

from tests.attack_corpus import corpus, measured
from tests.guide_rules import GuideCase
from tests.policy.guide_stack import case_stack
from tests.policy.test_guide_rules import verdicts_of


def refused_by_the_pack(case: GuideCase) -> bool:
    stack = case_stack(case)
    return any(v.resource == stack.target for v in verdicts_of(stack.resources))


def test_the_pack_refuses_every_attack_but_the_recorded_gaps() -> None:
    entries = corpus("pack")
    refused = {entry.case.case: "pack" for entry in entries if refused_by_the_pack(entry.case)}
    assert measured("pack", entries, refused) == []
