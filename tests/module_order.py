"""The order the parallel workers take test modules in, so that no long module starts last and runs
alone while the other workers idle (scripts/test.sh: `--dist loadfile --no-loadscope-reorder`).

Modules go alternately the longest and the shortest left, by their wall times in the last run
(a whole run of the suite that was not stopped early: a part of a module would read as short): a
worker that starts a module's last two tests is sent the next module at once, so the module after
a long one is best a short one, and the next long one goes to whichever worker is free first.
The times are kept in the JSON file `--module-times` names (scripts/test.sh keeps it in the cache,
so a fresh clone on a warm machine has them); a module it does not name counts as the longest when
it is an integration module and as the shortest otherwise.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import pytest

OPTION = "--module-times"


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def alternate_longest_and_shortest(seconds: Mapping[str, float]) -> list[str]:
    """The modules, longest first, then the shortest, then the longest left, and so on; equal
    times keep their order in `seconds` (the collection's)."""
    longest_first = sorted(seconds, key=lambda module: -seconds[module])
    order = []
    while longest_first:
        order.append(longest_first.pop(0))
        if longest_first:
            order.append(longest_first.pop())
    return order


def read_times(path: Path) -> dict[str, float]:
    """The recorded times; none when the file is missing or not what this module writes."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): float(v) for k, v in found.items() if isinstance(v, int | float) and not isinstance(v, bool)}


class ModuleTimes:
    """Orders the collected modules by the recorded times and, in the process that sees every test's
    report (the xdist controller, or pytest alone), records this run's times for the next."""

    def __init__(self, path: Path, records: bool) -> None:
        self.path = path
        self.records = records
        self.ran: defaultdict[str, float] = defaultdict(float)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        recorded = read_times(self.path)
        seconds: dict[str, float] = {}
        for item in items:
            module = module_of(item.nodeid)
            if module not in seconds:
                default = math.inf if item.get_closest_marker("integration") else 0.0
                seconds[module] = recorded.get(module, default)
        rank = {module: index for index, module in enumerate(alternate_longest_and_shortest(seconds))}
        items.sort(key=lambda item: rank[module_of(item.nodeid)])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.records:
            self.ran[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # A run stopped early (Ctrl-C, -x, --maxfail) has only part of some modules' times.
        stopped = exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        if stopped or session.shouldfail or session.shouldstop:
            return
        if self.records and self.ran:
            times = {**read_times(self.path), **{m: round(s, 1) for m, s in self.ran.items()}}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        type=Path,
        metavar="PATH",
        help="order test modules by the wall times recorded in this JSON file, and record this run's there",
    )


def runs_the_whole_suite(config: pytest.Config) -> bool:
    """A run of part of the suite (test paths, -k) would record part of a module's time."""
    return config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(OPTION)
    if path is not None:
        # An xdist worker sees only its own tests: the controller records for all of them.
        records = not hasattr(config, "workerinput") and runs_the_whole_suite(config)
        config.pluginmanager.register(ModuleTimes(path, records), "module-times")
