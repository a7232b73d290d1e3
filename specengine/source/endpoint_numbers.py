"""An endpoint's number settings (`timeout`, `max_concurrency`, `retries`, `max_reply_bytes`,
`max_tool_steps`, the `price`), read when written as `{{ vars.NAME }}`: each matrix cell puts its
value in, and what it renders to must still be a number in the setting's range.

The schema takes a number or a `{{ vars.NAME }}` template for each; the range a rendered value
must fall in is declared once here, held to the schema's by a test. A cell's value is a number
already when the setting is nothing but the reference to a number (`timeout: "{{ vars.timeout }}"`
with `timeout: [5, 30]`); text (`"30"`, or a file's text) is read as the number it spells.
Validation proves every cell of the project's matrix with `cell_number_problems`, and compiling a
cell proves its own (the cells `--matrix` gives on the command line included), so a value that is
no number stops the run before anything is sent, at the setting's place and naming the cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from specengine.plan import Cell
from specengine.source.loader import KeyPath
from specengine.source.matrix import substitute_vars, var_references


@dataclass(frozen=True)
class NumberSetting:
    """One number setting of an endpoint: where it is, whether it is whole, its lowest value (and
    whether that value itself is refused), and the words of its fix."""

    path: tuple[str, ...]
    whole: bool
    minimum: float
    exclusive: bool
    what: str  # "a number of seconds"
    example: str

    @property
    def label(self) -> str:
        return ".".join(str(part) for part in self.path)

    def read(self, value: Any) -> int | float | None:
        """The number value stands for (a number, or text spelling one), or None when it is none or
        out of range."""
        if isinstance(value, bool):
            return None
        number: int | float
        if isinstance(value, (int, float)):
            number = value
        elif isinstance(value, str):
            text = value.strip()
            try:
                number = int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    return None
        else:
            return None
        if not math.isfinite(number):
            return None
        if self.whole:
            if not float(number).is_integer():
                return None
            number = int(number)
        low = number <= self.minimum if self.exclusive else number < self.minimum
        return None if low else number

    def fix(self) -> str:
        """`write a number of seconds above 0, e.g. 30`."""
        bound = f"above {self.minimum:g}" if self.exclusive else f", {self.minimum:g} or more"
        return f"write {self.what}{'' if bound.startswith(',') else ' '}{bound}, e.g. {self.example}"


NUMBER_SETTINGS = (
    NumberSetting(("timeout",), False, 0, True, "a number of seconds", "30"),
    NumberSetting(("max_concurrency",), True, 1, False, "a whole number of requests in flight", "8"),
    NumberSetting(("retries",), True, 0, False, "a whole number of retries", "2"),
    NumberSetting(("max_reply_bytes",), True, 1, False, "a whole number of bytes", "10000000"),
    NumberSetting(("max_tool_steps",), True, 1, False, "a whole number of tool-result rounds", "5"),
    NumberSetting(("price", "input_per_million"), False, 0, False, "a price per million tokens", "2.5"),
    NumberSetting(("price", "output_per_million"), False, 0, False, "a price per million tokens", "10"),
)
"""Every number-typed endpoint setting (tests/test_endpoint_numbers.py holds them to the schema)."""

_ABSENT = object()


def _get(settings: Mapping[str, Any], path: KeyPath) -> Any:
    value: Any = settings
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def number_problems(settings: Mapping[str, Any]) -> Iterator[tuple[NumberSetting, Any]]:
    """Each number setting present in settings whose value is no number in its range, with that
    value."""
    for setting in NUMBER_SETTINGS:
        value = _get(settings, setting.path)
        if value is not _ABSENT and setting.read(value) is None:
            yield setting, value


def with_numbers(settings: Mapping[str, Any]) -> dict[str, Any]:
    """settings with each number setting that text spells read as its number (`"30"` → 30); a value
    that is no number is left as it is, for `number_problems` to word."""
    out = dict(settings)
    for setting in NUMBER_SETTINGS:
        number = setting.read(_get(out, setting.path))
        if number is None:
            continue
        if len(setting.path) == 1:
            out[setting.path[0]] = number
        else:
            head, key = setting.path
            out[head] = {**out[head], key: number}
    return out


def rendered_problem(setting: NumberSetting, value: Any, cell: str | None) -> str:
    """`timeout renders to "fast" in cell agent-a · fast: write a number of seconds above 0, e.g. 30`;
    with no cell, a template that only a cell fills in."""
    shown = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else json.dumps(value)
    if cell is None:
        if isinstance(value, str) and var_references(value):
            return (
                f"{setting.label} reads {value.strip()}, which only a matrix cell gives: run with --matrix,"
                f" or {setting.fix()}"
            )
        return f"{setting.label} is {shown}: {setting.fix()}"
    return f"{setting.label} renders to {shown} in cell {cell}: {setting.fix()}"


def reads_vars(settings: Mapping[str, Any]) -> bool:
    """Whether a number setting of these settings reads `{{ vars.NAME }}`."""
    return any(var_references(_get(settings, setting.path)) for setting in NUMBER_SETTINGS)


def cell_number_problems(settings: Mapping[str, Any], cells: Iterable[Cell]) -> Iterator[tuple[KeyPath, str]]:
    """(setting's path, message) for each number setting that reads `{{ vars.NAME }}` and renders to
    no number in one of the cells; a value wrong in several cells is named once, with its first."""
    reading = [s for s in NUMBER_SETTINGS if var_references(_get(settings, s.path))]
    if not reading:
        return
    seen: set[tuple[KeyPath, str]] = set()
    for cell in cells:
        rendered = substitute_vars({key: settings[key] for key in {s.path[0] for s in reading}}, cell.vars)
        for setting, value in number_problems(rendered):
            key = (setting.path, repr(value))
            if key not in seen:
                seen.add(key)
                yield setting.path, rendered_problem(setting, value, cell.name)
