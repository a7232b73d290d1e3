"""What the row proofs (validation.row_checks) say, and where: a lookup that found nothing in a row,
in the words a spec author reads, at the template's own line.

A message names the lookup as written (`input['items'][3]`), what it found instead (no such key, a
list too short, text where a mapping was expected), the keys that do exist with a "did you mean",
and the rows: the first one that fails by id and line, and how many others fail or pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.source.loader import KeyPath, kind_of
from specengine.suggest import suggest
from specengine.template_analysis import LookupPath
from specengine.templates import TemplateSource
from specengine.validation.file_report import Report

MAX_KEYS_SHOWN = 12


class Gap:
    """Where a path stops: the value at `depth - 1` (`container`) has no `key`. For the first key,
    the container is the row's mapping over the eval's (`own` over `base`)."""

    __slots__ = ("depth", "container", "key", "own", "base")

    def __init__(self, depth: int, container: Any, key: Any, own: Any = None, base: Any = None):
        self.depth = depth
        self.container = container
        self.key = key
        self.own = own
        self.base = base

    def keys(self) -> list[str] | None:
        """The keys that the container does have, or None when it is not a mapping."""
        if self.depth == 1:
            mine = self.own if isinstance(self.own, Mapping) else {}
            return [str(k) for k in self.base] + [str(k) for k in mine if k not in self.base]
        if isinstance(self.container, Mapping):
            return [str(k) for k in self.container]
        return None


@dataclass
class Failure:
    """The rows a template failed for: the first one's id, line and what was wrong, and the count."""

    row: str | None
    line: int | None
    gap: Gap | None
    path: LookupPath | None
    message: str
    template_line: int
    plain: bool  # a lookup-only template: the rows it did not fail for have the key
    count: int = 1


def keys_hint(gap: Gap) -> str:
    """For a key a mapping lacks: "; it has: total - did you mean 'total'?" ("" for no mapping)."""
    keys = gap.keys()
    if keys is None:
        return ""
    hint = f"; it has: {listed(keys)}" if keys else "; it is empty"
    return hint + suggest(str(gap.key), keys)


def listed(container: Iterable[Any]) -> str:
    """The keys of a mapping (or the names given), the first few of them."""
    keys = [str(k) for k in container]
    return ", ".join(keys[:MAX_KEYS_SHOWN]) + (", …" if len(keys) > MAX_KEYS_SHOWN else "") or "nothing"


def _dotted(path: Iterable[Any]) -> str:
    """A lookup as written in a template: input.city, input['user.name'], input.items[0]."""
    out = ""
    for part in path:
        if type(part) is int:
            out += f"[{part}]"
        elif not out:
            out = str(part)
        elif type(part) is str and part.isidentifier():
            out += f".{part}"
        else:
            out += f"['{part}']"
    return out


def gap_message(path: LookupPath, gap: Gap) -> str:
    shown, owner = _dotted(path[: gap.depth + 1]), _dotted(path[: gap.depth])
    container = gap.container
    if gap.depth == 1 or isinstance(container, Mapping):
        return f"undefined variable {shown}: {owner} has no key '{gap.key}'"
    if isinstance(container, (list, tuple)):
        return f"undefined variable {shown}: {owner} is a list of {len(container)}, it has no item {gap.key}"
    if isinstance(container, str) and isinstance(gap.key, int):
        return f"undefined variable {shown}: {owner} is a text of {len(container)}, it has no item {gap.key}"
    return (
        f"undefined variable {shown}: {owner} is {kind_of(container)}, not a mapping with the key '{gap.key}'"
    )


def row_note(failure: Failure, rows: int, dataset: str | None) -> str:
    """Which rows the template failed for: the first one by id and line, and how many there are."""
    if dataset is None or failure.row is None:
        return ""
    where = f"{dataset}:{failure.line}" if failure.line is not None else dataset
    if failure.count == rows == 1:
        return f"for the dataset row '{failure.row}', {where}"
    if failure.count == rows:
        return f"for all {rows:,} rows of {dataset}, first the row '{failure.row}' at {where}"
    more = f", and {failure.count - 1:,} more" if failure.count > 1 else ""
    others = rows - failure.count
    if others == 1:
        rest = "the other row " + ("has it" if failure.plain else "renders")
    else:
        rest = f"the other {others:,} rows " + ("have it" if failure.plain else "render")
    return f"for the dataset row '{failure.row}', {where}{more}; {rest}"


def template_diagnostic(report: Report, here: KeyPath, template_line: int, message: str) -> Diagnostic | None:
    """A problem at a template's line: its first line is the value's, an inner line of a block
    template (`|`) is its own line of the file, at that line's indentation."""
    node = report.node(here)
    if node is None:
        return None
    source = TemplateSource(
        report.document.path,
        node.start_mark.line + 1,
        node.start_mark.column + 1,
        block=getattr(node, "style", None) in ("|", ">"),
    )
    line = source.line_of(template_line)
    if line == source.line:
        col = source.col
    else:
        index = line - 1
        text = report.lines[index] if 0 <= index < len(report.lines) else ""
        col = len(text) - len(text.lstrip()) + 1
    return Diagnostic(report.document.path, line, col, message)
