"""The rules ARCHITECTURE.md states, checked on the source: who may import whom, and file sizes.

Imports are read from the syntax tree of every module (function-level imports included), so a lazy
import cannot slip past a rule.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specengine"
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _imports(path: Path, *, typing_only: bool = True) -> frozenset[str]:
    """Every specengine module a file imports, at any depth of the file (without `typing_only`, not
    the imports under `if TYPE_CHECKING:`, which never run)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    if not typing_only:
        for block in ast.walk(tree):
            if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING"):
                skipped.update(id(node) for statement in block.body for node in ast.walk(statement))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(name for name in found if name.split(".")[0] == "specengine")


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _in(module: str, *packages: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """`module imports target` for each module inside `importers` that imports from `forbidden`."""
    return sorted(
        f"{module} imports {target}"
        for module, path in MODULES.items()
        if _in(module, *importers)
        for target in _imports(path)
        if _in(target, *forbidden)
    )


def test_scoring_knows_no_http() -> None:
    """Grading, judges, results and reviews read transcripts (specengine.transcript), never endpoints."""
    assert (
        _violations(
            ("specengine.grade", "specengine.judge", "specengine.results", "specengine.review"),
            ("specengine.endpoints",),
        )
        == []
    )


DECLARATIONS = ("specengine.judge.kinds", "specengine.judge.named")
"""Judge modules that only declare (the kinds of judge, named judges): validation checks specs by them."""


def test_validation_runs_nothing() -> None:
    """Validation reads files and checks them; it never reaches the stages that send or score."""
    found = _violations(
        ("specengine.validation", "specengine.source"),
        (
            "specengine.engine",
            "specengine.flows",
            "specengine.endpoints",
            "specengine.judge",
            "specengine.report",
            "specengine.serve",
            "specengine.mlflow",
        ),
    )
    assert [line for line in found if not any(f" imports {name}" in line for name in DECLARATIONS)] == []


def test_nothing_imports_the_command_line() -> None:
    """The CLI sits on top: only the commands, the entry point and the stored help import it."""
    on_top = ("specengine.cli", "specengine.commands", "specengine.entry", "specengine.help_text")
    importers = tuple(module for module in MODULES if module != "specengine" and not _in(module, *on_top))
    assert _violations(importers, ("specengine.cli", "specengine.commands")) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_500_lines(module: str) -> None:
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


def test_the_rules_see_every_package() -> None:
    """A package added later is covered by the rules above (they match by prefix), and the walk works."""
    packages = {module.split(".")[1] for module in MODULES if module.count(".") >= 1}
    assert {"source", "validation", "compile", "engine", "grade", "judge", "results", "report"} <= packages
    assert "specengine.endpoints" in _imports(MODULES["specengine.engine.scheduler"])


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Which module imports which (imports that run: `TYPE_CHECKING` ones left out), modules only."""
    return {
        module: {target for target in _imports(path, typing_only=False) if target in MODULES} - {module}
        for module, path in MODULES.items()
    }


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def _package(module: str) -> str:
    """`specengine.report.facts` -> `report`; a module at the top (`specengine.databricks_auth`) is a
    package of its own."""
    return module.split(".")[1]


def test_no_package_imports_in_a_circle() -> None:
    """Packages (and the modules at the top) form layers: no chain of imports leads from a package
    back to itself, as `source -> databricks_auth -> mlflow -> report -> source` once did."""
    packages: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        if module == "specengine":
            continue
        packages.setdefault(_package(module), set()).update(
            _package(target) for target in targets if target != "specengine"
        )
    for package, targets in packages.items():
        targets.discard(package)
    assert _circles(packages) == []


def test_no_module_circles() -> None:
    """Modules import in one direction too: a circle, deferred import or not, means two modules that
    are one job or a third module missing."""
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
