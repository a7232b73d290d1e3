"""A call as a check describes it (`{name, args, exact}`), and whether a call the agent made fits it.

`called_tool_with` describes one call; `tool_calls_in_order` lists calls, each a tool name or the
same mapping. Both read it here, so arguments, argument matchers and `exact: true` mean the same in
either place, and so do their messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specengine.grade.arg_matchers import iter_arg_matchers, matcher_problems
from specengine.grade.deep_contains import child_path, deep_contains, extra_arguments
from specengine.grade.match_result import VALUE_LIMIT, quote
from specengine.templates import value_text
from specengine.transcript import ToolCall


@dataclass(frozen=True)
class WantedCall:
    """The tool, the arguments its call must hold (rendered), and whether others are refused."""

    name: str
    args: Any = field(default_factory=dict)
    exact: bool = False

    @property
    def has_args(self) -> bool:
        return self.args not in (None, {}) or self.exact

    def __str__(self) -> str:
        """`refund({"amount": {"$approx": 19.99}})`, or the bare name when only the name counts."""
        if self.args in (None, {}):
            return f"{self.name}(exactly no arguments)" if self.exact else self.name
        return f"{self.name}({quote(self.args, VALUE_LIMIT)})"

    def problems(self, call: ToolCall) -> list[str]:
        """Where a call of this tool differs from it: `[]` when it fits."""
        found = deep_contains(self.args, call.args)
        if self.exact and isinstance(self.args, Mapping):
            found += extra_arguments(self.args, call.args)
        return found

    def fits(self, call: ToolCall) -> bool:
        return call.name == self.name and not self.problems(call)


def wanted_call(item: Any) -> WantedCall | None:
    """A tool name, or a `{name, args, exact}` mapping (rendered); None when it is neither."""
    if isinstance(item, Mapping):
        if "name" not in item:
            return None
        args = item.get("args")
        return WantedCall(
            value_text(item["name"]).strip(), {} if args is None else args, item.get("exact") is True
        )
    if isinstance(item, (str, int, float)) and not isinstance(item, bool):
        return WantedCall(value_text(item).strip())
    return None


def argument_problems(wanted: WantedCall) -> list[str]:
    """What makes the rendered arguments impossible to check: a matcher value that is not what its
    `$` key takes (`$approx: "abc"` from a template), at its path: `args.amount: $approx takes …`."""
    found: list[str] = []
    if not isinstance(wanted.args, Mapping):
        return [f"args must be a mapping of argument names to values, not {quote(wanted.args)}"]
    for path, matcher in iter_arg_matchers(wanted.args):
        found += [f"{_path_text(path)}: {problem.message}" for problem in matcher_problems(matcher, True)]
    return found


def _path_text(parts: tuple) -> str:
    text = "args"
    for part in parts:
        text = f"{text}[{part}]" if isinstance(part, int) else child_path(text, part)
    return text
