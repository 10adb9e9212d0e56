"""Fixtures of the unit tier."""

import pytest

from tests.unit.harness import ProgramRunner


@pytest.fixture
def run_program(monkeypatch: pytest.MonkeyPatch) -> ProgramRunner:
    """Runs the real program under mocks; see ProgramRunner."""
    return ProgramRunner(monkeypatch)
