"""The matrix of a run: the endpoints and `vars` values every spec runs once per combination of.

The project file's `matrix:` and `--matrix AXIS=V1,V2` on the command line name the axes (the
command line's replace the project's of the same name); the cells are every combination, in the
order the axes and their values are written. A cell is named after its values (`agent-gpt · v1 ·
0`), so a cell's results line up across runs as long as its values do. A `vars` value naming a file
under the project's folder stands for that file's text (a system prompt kept in `prompts/v1.txt`),
and is named by the file's stem.

`{{ vars.NAME }}` in an endpoint's settings is replaced here, before the endpoint is built: a
setting that is nothing but the reference takes the value as it is (a number stays a number), one
that holds it among other text takes its text. No other template of an endpoint is touched, so an
`http` endpoint's `body` still renders its own variables per request.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from specengine.errors import UsageError
from specengine.plan import Cell
from specengine.source.loader import as_text
from specengine.suggest import suggest

ENDPOINT_AXIS = "endpoint"
VARS_PREFIX = "vars."
CELL_SEPARATOR = " · "
VAR_REFERENCE = re.compile(r"\{\{-?\s*vars\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}")
_WHOLE_REFERENCE = re.compile(r"^\s*\{\{-?\s*vars\.([A-Za-z_][A-Za-z0-9_]*)\s*-?\}\}\s*$")
_AXIS_ARGUMENT = re.compile(r"^(endpoint|vars\.[A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
MAX_VAR_FILE_BYTES = 1_000_000


CELL_MARK = " @ "


def cell_case_id(case_id: str, cell: str) -> str:
    """A case's id in a cell: `specs/a.yaml::sunny @ agent-gpt · v1`."""
    return f"{case_id}{CELL_MARK}{cell}"


def base_case_id(case_id: str, cell: str | None) -> str:
    """The id a case has in every cell (its cell's mark taken off)."""
    suffix = f"{CELL_MARK}{cell}" if cell else ""
    return case_id[: -len(suffix)] if suffix and case_id.endswith(suffix) else case_id


@dataclass(frozen=True)
class Axis:
    """One dimension of the matrix: `endpoint` or `vars.NAME`, and its values in order."""

    name: str
    values: tuple[Any, ...]


def is_axis_argument(argument: str) -> bool:
    """`endpoint=a,b` or `vars.NAME=x,y`: an axis given on the command line after `--matrix`."""
    return bool(_AXIS_ARGUMENT.match(argument)) and not Path(argument).exists()


def split_axis_arguments(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """The command line's paths, and the `AXIS=V1,V2` arguments among them (`--matrix` is a flag, so
    `--matrix endpoint=a,b` leaves the axis among the paths)."""
    paths = [argument for argument in arguments if not is_axis_argument(argument)]
    axes = [argument for argument in arguments if is_axis_argument(argument)]
    return paths, axes


def command_line_axes(arguments: Iterable[str]) -> list[Axis]:
    """`endpoint=a,b` → Axis("endpoint", ("a", "b")); each value read as YAML reads a plain scalar
    (`0.7` is a number, `v1` text)."""
    axes = []
    for argument in arguments:
        match = _AXIS_ARGUMENT.match(argument)
        if match is None:
            hint = "write AXIS=V1,V2 (endpoint=a,b or vars.NAME=x,y)"
            raise UsageError([f"error: --matrix {argument}: {hint}"])
        name, text = match.groups()
        values = tuple(_scalar(value.strip()) for value in text.split(",") if value.strip())
        if not values:
            raise UsageError([f"error: --matrix {argument}: the axis has no values"])
        axes.append(Axis(name, values))
    return axes


def _scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else text


def project_axes(data: Mapping[str, Any]) -> list[Axis]:
    """The axes of a project file's `matrix:` (validated: `endpoint` a list of names, `vars` a
    mapping of lists)."""
    matrix = data.get("matrix")
    if not isinstance(matrix, Mapping):
        return []
    axes = []
    if isinstance(matrix.get(ENDPOINT_AXIS), list):
        axes.append(Axis(ENDPOINT_AXIS, tuple(as_text(name) for name in matrix[ENDPOINT_AXIS])))
    variables = matrix.get("vars")
    for name, values in variables.items() if isinstance(variables, Mapping) else ():
        if isinstance(values, list):
            axes.append(Axis(VARS_PREFIX + str(name), tuple(values)))
    return axes


def merged_axes(project: list[Axis], command_line: list[Axis]) -> list[Axis]:
    """The project's axes with the command line's replacing those of the same name, new ones after."""
    given = {axis.name: axis for axis in command_line}
    axes = [given.pop(axis.name, axis) for axis in project]
    return axes + list(given.values())


def matrix_cells(axes: Sequence[Axis], folder: Path, endpoints: Iterable[str]) -> tuple[Cell, ...]:
    """Every combination of the axes' values, as cells; UsageError for an unknown endpoint name."""
    known = list(endpoints)
    problems = []
    for axis in axes:
        if axis.name != ENDPOINT_AXIS:
            continue
        for name in axis.values:
            if str(name) not in known:
                problems.append(f"error: matrix endpoint '{name}' is not defined{suggest(str(name), known)}")
    if problems:
        raise UsageError(problems)
    values = [[_value(axis, value, folder) for value in axis.values] for axis in axes]
    cells = []
    for combination in itertools.product(*values):
        endpoint = None
        variables: dict[str, Any] = {}
        shown: dict[str, str] = {}
        for axis, (value, text) in zip(axes, combination, strict=True):
            if axis.name == ENDPOINT_AXIS:
                endpoint = str(value)
            else:
                variables[axis.name[len(VARS_PREFIX) :]] = value
                shown[axis.name[len(VARS_PREFIX) :]] = text
        name = CELL_SEPARATOR.join(text for _, text in combination)
        cells.append(Cell(name=name, endpoint=endpoint, vars=variables, shown=shown))
    names = [cell.name for cell in cells]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:  # two files of one stem (prompts/a/v1.txt, prompts/b/v1.txt) would share their cells' ids
        shown_twice = ", ".join(repr(name) for name in twice)
        raise UsageError(
            [f"error: matrix: two cells would be named {shown_twice}: give the files distinct names"]
        )
    return tuple(cells)


def _value(axis: Axis, value: Any, folder: Path) -> tuple[Any, str]:
    """A value as templates read it and as the cell's name shows it: a file under the project's
    folder is its text, named by its stem."""
    text = as_text(value)
    if axis.name != ENDPOINT_AXIS and isinstance(value, str) and text.strip():
        path = (folder / text).resolve()
        if path.is_file() and path.is_relative_to(folder.resolve()):
            if path.stat().st_size > MAX_VAR_FILE_BYTES:
                raise UsageError([f"error: matrix {axis.name}: {text} is over 1 MB"])
            return path.read_text(encoding="utf-8"), path.stem
    return (text if isinstance(value, str) else value), text


def looks_like_path(text: str) -> bool:
    """A vars value written as a relative file path (`prompts/v1.txt`): no spaces, a `/` and a
    suffix."""
    return "/" in text and not any(c.isspace() for c in text) and bool(Path(text).suffix)


def chosen_cells(cells: Sequence[Cell], wanted: Sequence[str]) -> tuple[Cell, ...]:
    """The cells `--cell` names, by name or by their values joined with `,` or `/`; UsageError for
    a name that is no cell."""
    if not wanted:
        return tuple(cells)
    by_key = {cell_key(cell.name): cell for cell in cells}
    chosen: dict[str, Cell] = {}
    problems = []
    for name in wanted:
        cell = by_key.get(cell_key(name))
        if cell is None:
            names = [cell.name for cell in cells]
            hint = suggest(name, names) or f" (cells: {', '.join(names)})"
            problems.append(f"error: --cell {name}: no such cell{hint}")
        else:
            chosen[cell.name] = cell
    if problems:
        raise UsageError(problems)
    return tuple(cell for cell in cells if cell.name in chosen)


def cell_key(name: str) -> tuple[str, ...]:
    """A cell's name as `--cell` compares it: its values, whichever separator joined them."""
    return tuple(part.strip() for part in re.split(r"·|,|/", name))


def substitute_vars(value: Any, variables: Mapping[str, Any]) -> Any:
    """`{{ vars.NAME }}` in every string of value (recursively) replaced by the cell's value."""
    if isinstance(value, str):
        if "vars." not in value:
            return value
        whole = _WHOLE_REFERENCE.match(value)
        if whole and whole.group(1) in variables:
            return variables[whole.group(1)]
        return VAR_REFERENCE.sub(lambda m: _text(variables.get(m.group(1), m.group(0))), value)
    if isinstance(value, Mapping):
        return {key: substitute_vars(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute_vars(item, variables) for item in value]
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else as_text(value)


def var_references(value: Any) -> set[str]:
    """The names `{{ vars.NAME }}` reads anywhere in value."""
    if isinstance(value, str):
        return set(VAR_REFERENCE.findall(value))
    if isinstance(value, Mapping):
        return set().union(*(var_references(item) for item in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(var_references(item) for item in value)) if value else set()
    return set()


class AnyVars(dict):
    """The `vars` of a project whose matrix declares none: any name may come from `--matrix
    vars.NAME=…`, so validation takes every name as known (the run renders each cell's sends before
    the first is sent)."""

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: Any) -> str:
        return ""


def matrix_vars(data: Mapping[str, Any]) -> dict[str, Any]:
    """What validation proves `vars.NAME` against: the project matrix's vars, each at its first
    value, or AnyVars when it declares none."""
    matrix = data.get("matrix")
    variables = matrix.get("vars") if isinstance(matrix, Mapping) else None
    if not isinstance(variables, Mapping) or not variables:
        return AnyVars()
    return {
        str(name): values[0] if isinstance(values, list) and values else ""
        for name, values in variables.items()
    }


def declared_cells(data: Mapping[str, Any], folder: Path) -> tuple[Cell, ...]:
    """The cells of a project file's own matrix, for validation to prove each; none when it has no
    matrix or one that makes no cells (its mistakes are reported where they are written)."""
    axes = project_axes(data)
    endpoints = data.get("endpoints")
    try:
        return matrix_cells(axes, folder, endpoints if isinstance(endpoints, Mapping) else ()) if axes else ()
    except (UsageError, OSError, UnicodeDecodeError):
        return ()


def stored_cells(results: Mapping[str, Any]) -> tuple[Cell, ...]:
    """The cells a results file's `matrix` describes, as the run had them."""
    matrix = results.get("matrix")
    cells = matrix.get("cells") if isinstance(matrix, Mapping) else None
    return tuple(
        Cell(
            name=str(cell.get("name")),
            endpoint=cell.get("endpoint"),
            vars=dict(cell.get("values") or {}),
            shown=dict(cell.get("vars") or {}),
        )
        for cell in cells or ()
        if isinstance(cell, Mapping)
    )
