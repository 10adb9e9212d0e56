"""The shape of the house: dependencies point one way, the config model sits at the ground.

Every import counts, including those inside functions: a hidden import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Where each package's modules live, and the name they are imported by.
PACKAGES = {
    "components": REPO / "components",
    "gpu_policies": REPO / "policy" / "gpu_policies",
    "standins": REPO / "standins",
}
# The stack, an install, a gate, a shared decision, a check's result, the wait (the longest chain today).
MAX_LEVELS = 6
# Where stacks deployed before today's layout unpickle their dynamic providers from: nothing in
# the program imports them, so they add no level to it.
STATE_ALIASES = frozenset(
    {
        "components.proof_resource",
        "components.teardown",
        "components.checks",
        "components.checks.proof_resources",
        "components.checks.teardown",
    }
)

# Where a run enters the program, as `__main__.py` does: the provider plugin the engine starts, and
# the package's components any program constructs through it. They stand on the stack; nothing below
# imports them, so they add no level to the library.
ENTRY_POINTS = frozenset({"components.plugin", "components.package.stacks", "components.package.pieces"})


def module_name(path: Path, package: str) -> str:
    parts = path.relative_to(PACKAGES[package].parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {
        module_name(path, package): path
        for package, root in PACKAGES.items()
        for path in sorted(root.rglob("*.py"))
        if "venv" not in path.parts
    }


def syntax_tree(path: Path) -> ast.Module:
    """`path` parsed. CPython 3.11.7 once raised SystemError ("AST constructor recursion depth mismatch")
    from this parse in a test worker running other threads (a fresh clone's CI run at 6b1c2dc); the parse
    is pure, so a second one gives the answer the first should have."""
    try:
        return ast.parse(path.read_text())
    except SystemError:
        return ast.parse(path.read_text())


def imported(path: Path, name: str, known: set[str]) -> Iterator[str]:
    """The project modules `path` imports; `from package import module` names the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        yield from (target for target in targets if target in known)


@cache
def graph() -> dict[str, frozenset[str]]:
    found = modules()
    known = set(found)
    return {name: frozenset(imported(path, name, known)) - {name} for name, path in found.items()}


def find_cycle(edges: dict[str, frozenset[str]]) -> list[str] | None:
    visiting: list[str] = []
    done: set[str] = set()

    def visit(module: str) -> list[str] | None:
        if module in visiting:
            return [*visiting[visiting.index(module) :], module]
        if module in done:
            return None
        visiting.append(module)
        for target in sorted(edges[module]):
            if cycle := visit(target):
                return cycle
        visiting.pop()
        done.add(module)
        return None

    for module in sorted(edges):
        if cycle := visit(module):
            return cycle
    return None


def test_no_module_imports_itself_back_through_others() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_longest_import_chain_is_at_most_six_levels() -> None:
    edges = graph()

    @cache
    def depth(module: str) -> tuple[str, ...]:
        below = [depth(target) for target in edges[module]]
        return (module, *max(below, key=len, default=()))

    deepest = max((depth(module) for module in edges if module not in STATE_ALIASES | ENTRY_POINTS), key=len)
    assert len(deepest) <= MAX_LEVELS, "too deep: " + " -> ".join(deepest)


def test_only_an_entry_point_imports_an_entry_point() -> None:
    edges = graph()
    assert set(edges) >= ENTRY_POINTS, "the entry points must be read"
    importers = sorted(m for m, targets in edges.items() if targets & ENTRY_POINTS and m not in ENTRY_POINTS)
    assert importers == [], "an entry point imported by the library hides its depth"


# ---------------------------------------------------------------- the map


def readme_map() -> dict[str, int]:
    """The README's map: each package (or module beside the packages) of components/, by its floor."""
    section = (REPO / "README.md").read_text().split("### The map", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| `components/([\w/.]+?)/?` \|", section, re.MULTILINE)
    return {"components." + path.removesuffix(".py").replace("/", "."): int(floor) for floor, path in rows}


def place(module: str, floors: dict[str, int]) -> str | None:
    """The map's row a module belongs to: the longest package name it is in."""
    rows = [row for row in floors if module == row or module.startswith(row + ".")]
    return max(rows, key=len, default=None)


def wrong_way_imports(edges: dict[str, frozenset[str]], floors: dict[str, int]) -> list[tuple[str, str]]:
    """Each import of a package on the importer's own floor or above it."""
    found = []
    for module, targets in sorted(edges.items()):
        row = place(module, floors)
        for target in sorted(targets):
            other = place(target, floors)
            if row and other and other != row and floors[other] >= floors[row]:
                found.append((module, target))
    return found


def test_the_map_names_every_package_and_module_of_the_program() -> None:
    floors = readme_map()
    assert "components.stack" in floors and "components.cluster" in floors, "the README's map must be read"
    unplaced = sorted(m for m in graph() if m.startswith("components.") and place(m, floors) is None)
    assert not unplaced, f"not on the README's map (### The map): {unplaced}"
    missing = sorted(row for row in floors if not any(place(m, floors) == row for m in graph()))
    assert not missing, f"the README's map names what does not exist: {missing}"


def test_each_import_goes_down_the_map() -> None:
    wrong = wrong_way_imports(graph(), readme_map())
    assert not wrong, "imports that do not go down the README's map: " + ", ".join(f"{m} -> {t}" for m, t in wrong)


def test_an_import_up_or_across_the_map_is_found() -> None:
    floors = {"components.config": 1, "components.gates": 3, "components.proofs": 3, "components.stack": 6}
    edges = {
        "components.gates.kai": frozenset({"components.config.model", "components.gates.spec"}),
        "components.config.model": frozenset({"components.gates.spec"}),
        "components.proofs.lab": frozenset({"components.gates.kai"}),
        "components.stack": frozenset({"components.proofs.lab"}),
    }
    assert wrong_way_imports(edges, floors) == [
        ("components.config.model", "components.gates.spec"),
        ("components.proofs.lab", "components.gates.kai"),
    ]


def test_the_checks_never_see_the_whole_stack_config() -> None:
    """components/stack.py turns the config into each check's spec; a check takes its spec only."""
    jobs = ("cluster", "preflight", "gates", "proofs", "teardown", "rollout")
    for path in sorted(p for job in jobs for p in (REPO / "components" / job).glob("*.py")):
        nodes = list(ast.walk(syntax_tree(path)))
        names = {n.id for n in nodes if isinstance(n, ast.Name)}
        names |= {a.name for n in nodes if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "StackConfig" not in names, f"{path.name} reads the whole StackConfig: take a spec built in stack.py"


def test_the_stand_ins_and_the_program_import_nothing_of_each_other() -> None:
    """The stand-ins replay upstream components, not the program's belief about them; and the
    program never runs with a stand-in inside it."""
    for module, targets in graph().items():
        other = "components" if module.startswith("standins") else "standins"
        crossing = {t for t in targets if t == other or t.startswith(f"{other}.")}
        assert not crossing, f"{module} imports {sorted(crossing)}"


def test_the_graph_is_read_at_all() -> None:
    edges = graph()
    assert "components.config.model" in edges["components.stack"], "the reader must see the stack import its config"
    assert len(edges) > 20
    assert "standins.operators.cluster" in edges["standins.operators.knobs"], "the stand-ins must be read too"


# ---------------------------------------------------------------- packages


def package_of(module: str) -> str:
    """`components.cluster.client` is in `components.cluster`; a module beside the packages
    (`components.helm`) is a package of its own."""
    return ".".join(module.split(".")[:2])


def package_graph(edges: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for module, targets in edges.items():
        if module.startswith("components"):
            found.setdefault(package_of(module), set()).update(
                package_of(t) for t in targets if t.startswith("components") and package_of(t) != package_of(module)
            )
    return {package: frozenset(targets) for package, targets in found.items()}


def edges_in_cycles(edges: dict[str, frozenset[str]]) -> set[tuple[str, str]]:
    """Every edge from a node to one that reaches back to it."""

    @cache
    def reach(node: str) -> frozenset[str]:
        seen: set[str] = set()
        todo = [node]
        while todo:
            for target in edges.get(todo.pop(), frozenset()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return frozenset(seen)

    return {(source, target) for source, targets in edges.items() for target in targets if source in reach(target)}


def test_a_cycle_between_packages_is_found_edge_by_edge() -> None:
    modules = {
        "components.a.one": frozenset({"components.b.two"}),
        "components.b.two": frozenset({"components.c"}),
        "components.b.three": frozenset({"components.a.one"}),
        "components.c": frozenset(),
    }
    packages = package_graph(modules)
    assert packages == {
        "components.a": frozenset({"components.b"}),
        "components.b": frozenset({"components.c", "components.a"}),
        "components.c": frozenset(),
    }
    assert edges_in_cycles(packages) == {("components.a", "components.b"), ("components.b", "components.a")}


def test_no_import_cycle_between_packages() -> None:
    cycles = sorted(edges_in_cycles(package_graph(graph())))
    assert not cycles, "a cycle between packages: " + ", ".join(" -> ".join(edge) for edge in cycles)


# ---------------------------------------------------------------- module size

MAX_LINES = 350
# The config model is one schema on purpose: the stack config's every key in one place.
LONGER_ON_PURPOSE = frozenset({"components.config.model"})


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    long = {
        module: lines
        for module, path in modules().items()
        if module not in LONGER_ON_PURPOSE and (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}: split it by what it does"
