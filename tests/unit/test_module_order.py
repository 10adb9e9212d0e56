"""The order the parallel workers take test modules in (tests/module_order.py), and the times it
records, checked on a small suite run by pytest itself, alone and on two xdist workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.module_order import alternate_longest_and_shortest, read_times

REPO = Path(__file__).resolve().parents[2]


def test_the_longest_and_the_shortest_left_alternate() -> None:
    seconds = {"a": 1.0, "b": 9.0, "c": 5.0, "d": 0.0, "e": 7.0}
    assert alternate_longest_and_shortest(seconds) == ["b", "d", "e", "a", "c"]


def test_equal_times_keep_the_collection_order() -> None:
    assert alternate_longest_and_shortest(dict.fromkeys("wxyz", 3.0)) == ["w", "z", "x", "y"]


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '"x"'])
def test_a_missing_or_foreign_file_gives_no_times(tmp_path: Path, text: str | None) -> None:
    path = tmp_path / "times.json"
    if text is not None:
        path.write_text(text)
    assert read_times(path) == {}


def test_only_numbers_are_read_as_times(tmp_path: Path) -> None:
    path = tmp_path / "times.json"
    path.write_text(json.dumps({"a.py": 2, "b.py": 1.5, "c.py": True, "d.py": "3", "e.py": None}))
    assert read_times(path) == {"a.py": 2.0, "b.py": 1.5}


SUITE = {
    "t/test_quick.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "t/test_long.py": "def test_one():\n    pass\n",
    "t/test_middle.py": "import time\n\ndef test_one():\n    time.sleep(0.3)\n",
    "t/test_new_integration.py": "import pytest\n\n@pytest.mark.integration\ndef test_one():\n    pass\n",
}


def suite(tmp_path: Path) -> Path:
    root = tmp_path / "suite"
    for name, text in SUITE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = t\nmarkers =\n    integration: slow\n")
    return root


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.module_order", "-p", "no:cacheprovider", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def collected_modules(output: str) -> list[str]:
    modules: list[str] = []
    for line in output.splitlines():
        module = line.split("::", 1)[0]
        if "::" in line and module not in modules:
            modules.append(module)
    return modules


def test_modules_run_in_the_recorded_order_and_an_unknown_integration_module_first(tmp_path: Path) -> None:
    root = suite(tmp_path)
    times = tmp_path / "times.json"
    times.write_text(json.dumps({"t/test_quick.py": 0.1, "t/test_long.py": 50.0, "t/test_middle.py": 7.0}))
    listed = run_pytest(root, f"--module-times={times}", "--collect-only", "-q")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert collected_modules(listed.stdout) == [
        "t/test_new_integration.py",
        "t/test_quick.py",
        "t/test_long.py",
        "t/test_middle.py",
    ]


@pytest.mark.parametrize(
    "workers", [[], ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder"]], ids=["alone", "xdist"]
)
def test_a_whole_run_records_every_modules_time_and_keeps_the_others(tmp_path: Path, workers: list[str]) -> None:
    root = suite(tmp_path)
    times = tmp_path / "cache" / "times.json"
    times.parent.mkdir()
    times.write_text(json.dumps({"t/test_gone.py": 4.0, "t/test_middle.py": 99.0}))
    run = run_pytest(root, f"--module-times={times}", *workers)
    assert run.returncode == 0, run.stdout + run.stderr
    recorded = read_times(times)
    assert set(recorded) == {"t/test_gone.py", *SUITE}
    assert recorded["t/test_gone.py"] == 4.0, "a module this run did not see keeps its time"
    assert 0.3 <= recorded["t/test_middle.py"] < 99.0, "this run's time replaces the last one"


def test_a_run_of_part_of_the_suite_records_nothing(tmp_path: Path) -> None:
    root = suite(tmp_path)
    times = tmp_path / "times.json"
    for narrowed in (["t/test_middle.py"], ["-k", "middle"]):
        run = run_pytest(root, f"--module-times={times}", *narrowed)
        assert run.returncode == 0, run.stdout + run.stderr
        assert not times.exists(), f"{narrowed} ran part of the suite"


@pytest.mark.parametrize(
    ("test", "args"),
    [
        ("def test_one():\n    raise KeyboardInterrupt\n", []),
        ("def test_one():\n    assert False\n", ["-x"]),
    ],
    ids=["interrupted", "stopped-at-a-failure"],
)
def test_a_run_stopped_early_records_nothing(tmp_path: Path, test: str, args: list[str]) -> None:
    root = suite(tmp_path)
    (root / "t" / "test_long.py").write_text(test)
    times = tmp_path / "times.json"
    run = run_pytest(root, f"--module-times={times}", "-p", "no:randomly", *args)
    assert run.returncode in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), run.stdout + run.stderr
    assert not times.exists(), "a run stopped early has only part of some modules' times"
