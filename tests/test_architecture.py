"""The rules ARCHITECTURE.md states, checked on the source: who may import whom, and file sizes.

Imports are read from the syntax tree of every module (function-level imports included), so a lazy
import cannot slip past a rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specengine"
MAX_LINES = 500


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every specengine module a file imports, at any depth of the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "specengine"}


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
        ("specengine.validate", "specengine.source"),
        (
            "specengine.run",
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
    assert {"source", "validate", "compile", "run", "grade", "judge", "results", "report"} <= packages
    assert "specengine.endpoints" in _imports(MODULES["specengine.run.scheduler"])
