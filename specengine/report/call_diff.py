"""What changed in a case's tool calls between two runs, one readable line per change.

A regression's reason says which check failed; the tool calls say what the agent did differently,
e.g. `turn 1: get_weather args.city changed from "Paris" to "paris"` or `turn 2: book_table call
added`. The calls of each transcript are grouped by turn and compared with DeepDiff, set up against
its traps for this data:

- `threshold_to_diff_deeper=0`: a changed argument is reported as that argument, never as "the whole
  arguments object changed" (what DeepDiff does by default when few keys are shared);
- calls in a turn are matched by name, so a removed call reads as removed rather than as every
  later call renamed;
- JSON has one number type, so a whole float is written as an int before comparing (`1.0` equals
  `1`); `ignore_numeric_type_changes` is not used because it also makes `True` equal `1`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.results.decode import messages, turn_records
from specengine.results.loaded import Case
from specengine.results.model import TrialResult

MAX_VALUE = 60

Calls = dict[int, list[dict[str, Any]]]  # turn number -> the calls made in it, in order


@dataclass(frozen=True)
class CallChange:
    """One difference between the tool calls of a turn in the base run and in the head run."""

    turn: int
    change: str

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.change}"


def call_changes(base_case: Case, head_case: Case) -> tuple[CallChange, ...]:
    """The changes from the base case's first passed trial to the head case's first trial that did not
    pass (the first trial on either side when there is no such trial)."""
    base = _calls(_trial(base_case, passed=True))
    head = _calls(_trial(head_case, passed=False))
    if _same(base, head):
        return ()
    from deepdiff import DeepDiff

    diff = DeepDiff(base, head, threshold_to_diff_deeper=0, iterable_compare_func=_same_call, view="tree")
    changes = [change for kind, levels in diff.items() for level in levels for change in _worded(kind, level)]
    changes += _reorderings(base, head)
    return tuple(sorted(changes, key=lambda change: (change.turn, change.change)))


def _trial(case: Case, *, passed: bool) -> TrialResult | None:
    wanted = [trial for trial in case.trials if (trial.status == "passed") == passed]
    return next(iter(wanted or case.trials), None)


def _calls(trial: TrialResult | None) -> Calls:
    """The trial's tool calls by turn; every turn is present, with no calls or some."""
    if trial is None:
        return {}
    calls: Calls = {}
    for record in turn_records(messages(trial)):
        calls[record.number] = [
            {"name": call.name, "args": _json_numbers(call.args)} for call in record.turn.tool_calls
        ]
    return calls


def _json_numbers(value: Any) -> Any:
    """`value` with whole floats as ints, as JSON means them (bools stay bools)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _json_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_numbers(item) for item in value]
    return value


def _same(base: Calls, head: Calls) -> bool:
    """Equal as JSON text: unlike ==, this tells `true` from `1`."""
    return _text(base) == _text(head)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _same_call(first: Any, second: Any, level: Any = None) -> bool:
    """DeepDiff's matcher for list items: calls (and named objects) are the same item when named alike."""
    from deepdiff.helper import CannotCompare

    if isinstance(first, dict) and isinstance(second, dict) and "name" in first and "name" in second:
        return bool(first["name"] == second["name"])
    raise CannotCompare() from None


def _worded(kind: str, level: Any) -> list[CallChange]:
    """The change lines for one DeepDiff report item (a level of its tree view)."""
    path = level.path(output_format="list")
    turn = int(path[0])
    if len(path) == 1:  # a whole turn is only on one side: its calls were added or removed
        calls = level.t2 if kind == "dictionary_item_added" else level.t1
        verb = "added" if kind == "dictionary_item_added" else "removed"
        return [CallChange(turn, f"{call['name']} call {verb}") for call in calls]
    if len(path) == 2:
        if kind == "iterable_item_added":
            return [CallChange(turn, f"{level.t2['name']} call added")]
        if kind == "iterable_item_removed":
            return [CallChange(turn, f"{level.t1['name']} call removed")]
        if kind == "values_changed":
            return [CallChange(turn, f"{level.t1['name']} call replaced by {level.t2['name']}")]
        return []  # moved: a change of order, worded by _reorderings
    name = _call_level(level).t1["name"]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path[2:]).lstrip(".")
    if kind in ("values_changed", "type_changes"):
        return [CallChange(turn, f"{name} {where} changed from {_value(level.t1)} to {_value(level.t2)}")]
    if kind in ("dictionary_item_added", "iterable_item_added"):
        return [CallChange(turn, f"{name} {where} added: {_value(level.t2)}")]
    if kind in ("dictionary_item_removed", "iterable_item_removed"):
        return [CallChange(turn, f"{name} {where} removed (was {_value(level.t1)})")]
    return []


def _call_level(level: Any) -> Any:
    """The level of the call that `level` lies inside (two below the root: turn, then call)."""
    chain = [level]
    while chain[-1].up is not None:
        chain.append(chain[-1].up)
    return chain[-3]


def _reorderings(base: Calls, head: Calls) -> list[CallChange]:
    """A turn whose calls (those made in both runs) came in another order."""
    changes = []
    for turn in sorted(base.keys() & head.keys()):
        before, after = _names(base[turn]), _names(head[turn])
        kept_before = [name for name in before if name in after]
        kept_after = [name for name in after if name in before]
        if len(kept_before) == len(kept_after) and kept_before != kept_after:
            order = f"{', '.join(kept_before)} -> {', '.join(kept_after)}"
            changes.append(CallChange(turn, f"calls in another order: {order}"))
    return changes


def _names(calls: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(call["name"]) for call in calls]


def _value(value: Any) -> str:
    text = _text(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
