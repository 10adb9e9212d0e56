"""kai-release-require-valid-sharing-mode: exact, case-sensitive global.gpuSharingMode values."""

from __future__ import annotations

import pytest
from gpu_policies.kai_release_require_valid_sharing_mode import policy
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from tests.policy import golden
from tests.policy.harness import run_resource

MODES = ("NvFractions", "HamiCore", "NonMemoryEnforced", "Disabled")


def kai_in_mode(mode: object) -> golden.Props:
    kai = golden.kai_release()
    kai["values"]["global"]["gpuSharingMode"] = mode
    return kai


@pytest.mark.parametrize("mode", MODES)
def test_every_exact_mode_passes(mode: str) -> None:
    assert run_resource(policy, golden.RELEASE, kai_in_mode(mode)).violations == [], f"{mode} is a KAI mode"


def test_an_absent_or_empty_mode_passes_because_the_chart_derives_it() -> None:
    assert run_resource(policy, golden.RELEASE, golden.lab_kai_release()).violations == [], (
        "the lab uses legacy global.gpuSharing"
    )
    assert run_resource(policy, golden.RELEASE, kai_in_mode("")).violations == [], "'' is the chart default"


@pytest.mark.parametrize("mode", ["nvfractions", "NVFractions", "nv-fractions", "MPS"])
def test_a_misspelled_mode_fails(mode: str) -> None:
    assert run_resource(policy, golden.RELEASE, kai_in_mode(mode)).violations == [
        f"global.gpuSharingMode is {mode!r}; set it to one of 'NvFractions', 'HamiCore', "
        "'NonMemoryEnforced', 'Disabled', spelled exactly, because the value is case-sensitive."
    ], "the mode is a case-sensitive enum"


def test_allowed_modes_are_configurable() -> None:
    config = {"allowedModes": ["NvFractions"]}
    assert run_resource(policy, golden.RELEASE, kai_in_mode("NvFractions"), config).violations == [], (
        "the one allowed mode passes"
    )
    assert run_resource(policy, golden.RELEASE, kai_in_mode("HamiCore"), config).violations == [
        "global.gpuSharingMode is 'HamiCore'; set it to one of 'NvFractions', spelled exactly, because the "
        "value is case-sensitive."
    ], "a production stack may allow only NvFractions"


def test_other_releases_are_ignored() -> None:
    operator = golden.gpu_operator_release()
    operator["values"]["global"] = {"gpuSharingMode": "nvfractions"}
    assert run_resource(policy, golden.RELEASE, operator).violations == [], "only the KAI release is checked"


def test_a_mode_unknown_during_preview_is_not_applicable() -> None:
    outcome = run_resource(policy, golden.RELEASE, kai_in_mode(UNKNOWN_STRING_VALUE))
    assert outcome.violations == [] and outcome.not_applicable, "unknown means not applicable, not a crash"
