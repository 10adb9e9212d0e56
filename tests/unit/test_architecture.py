"""The shape of the house: dependencies point one way, the config model sits at the ground.

Every import counts, including those inside functions: a hidden import is still a dependency.
"""

from __future__ import annotations

import ast
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
# The stack, an install, a check, the Kubernetes adapter, the config model, its types, the vocabulary.
MAX_LEVELS = 7
# Where stacks deployed before the package layout unpickle their dynamic providers from: nothing in
# the program imports them, so they add no level to it.
STATE_ALIASES = frozenset({"components.proof_resource", "components.teardown"})


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


def imported(path: Path, name: str, known: set[str]) -> Iterator[str]:
    """The project modules `path` imports; `from package import module` names the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
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


def test_the_longest_import_chain_is_at_most_seven_levels() -> None:
    edges = graph()

    @cache
    def depth(module: str) -> tuple[str, ...]:
        below = [depth(target) for target in edges[module]]
        return (module, *max(below, key=len, default=()))

    deepest = max((depth(module) for module in edges if module not in STATE_ALIASES), key=len)
    assert len(deepest) <= MAX_LEVELS, "too deep: " + " -> ".join(deepest)


# What each floor of the program may import besides itself: the vocabulary of the upstream components
# at the ground, the config model on it, the checks (with their Kubernetes adapter) on both.
FLOORS = {
    "components.vocabulary": frozenset(),
    "components.config": frozenset({"components.vocabulary"}),
    "components.checks": frozenset({"components.vocabulary", "components.config"}),
}


def upward_imports(edges: dict[str, frozenset[str]]) -> list[tuple[str, str]]:
    """Each import from a floor's module of a package that is neither that floor nor one below it."""
    found = []
    for module, targets in sorted(edges.items()):
        floor = package_of(module)
        if floor in FLOORS:
            found += [(module, t) for t in sorted(targets) if package_of(t) not in FLOORS[floor] | {floor}]
    return found


def test_each_floor_imports_only_the_floors_below_it() -> None:
    upward = upward_imports(graph())
    assert not upward, "a floor imports upwards: " + ", ".join(f"{m} -> {t}" for m, t in upward)


def test_a_floor_that_reaches_up_is_found() -> None:
    edges = {
        "components.checks.a": frozenset({"components.gpu_cluster.b", "components.config.c", "components.checks.d"}),
        "components.vocabulary.e": frozenset({"components.config.c"}),
        "components.gpu_cluster.b": frozenset({"components.checks.a"}),
    }
    assert upward_imports(edges) == [
        ("components.checks.a", "components.gpu_cluster.b"),
        ("components.vocabulary.e", "components.config.c"),
    ]


def test_the_checks_never_see_the_whole_stack_config() -> None:
    """components/stack.py turns the config into each check's spec; a check takes its spec only."""
    for path in sorted((REPO / "components" / "checks").glob("*.py")):
        names = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
        names |= {
            a.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ImportFrom) for a in n.names
        }
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
    """`components.checks.kube` is in `components.checks`; a module beside the packages
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
