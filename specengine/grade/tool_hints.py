"""Why a tool check failed, when the reason is one the author can fix in the spec.

Two mistakes look like an agent's fault and are not:

- the tool was called, in an earlier turn of the conversation: a check sees its own turn unless it
  says `scope: conversation`, so a check on turn 2 of a call made in turn 1 fails;
- the tool's name differs from a call made only in case or separators (`lookupOrder`,
  `lookup-order` for `lookup_order`): a "did you mean" names the call.

Each adds a sentence to the failed check's reason; the outcome is the matcher's, unchanged.

And one is no one's mistake but must not read as the agent's: when the endpoint reported no tool
call at all in the whole trial, the check cannot see whether the tool was called (A2A agents send
their calls only if they choose to, some servers never do), so its reason says that, and not that
the tool was not called (`unseen_reason`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from specengine.plan import Check
from specengine.templates import value_text
from specengine.transcript import TurnRecord

TOOL_CHECKS = frozenset({"called_tool", "called_tool_with", "tool_calls_in_order"})
_SEPARATORS = re.compile(r"[\s_\-.]+")


def tool_hint(check: Check, argument: Any, record: TurnRecord, records: Sequence[TurnRecord]) -> str:
    """The sentences to add to a failed tool check's reason ("" when there is nothing to add)."""
    if check.matcher not in TOOL_CHECKS or check.negate:
        return ""
    wanted = list(dict.fromkeys(_names(check.matcher, argument)))
    if not wanted:
        return ""
    scope = in_scope(check, record, records)
    made = [call.name for r in scope for call in r.turn.tool_calls]
    hints = [_near(name, made) for name in wanted if name not in made]
    found = [hint for hint in hints if hint]
    if check.scope != "conversation":
        earlier = _earlier(wanted, made, record, records)
        if earlier:
            found.append(earlier)
    return "".join(f"; {hint}" for hint in found)


UNSEEN = (
    "the endpoint reported no tool call in any turn, so whether {names} was called cannot be seen"
    " (a tool call is seen only when the agent's answer carries it: an A2A agent shows its tool calls"
    " only if it sends them)"
)


def unseen_reason(check: Check, argument: Any, records: Sequence[TurnRecord]) -> str | None:
    """The reason of a failed tool check when no turn of the trial reported a call, else None."""
    if check.matcher not in TOOL_CHECKS or any(record.turn.tool_calls for record in records):
        return None  # (a negated tool check fails only on a call, so it never gets here)
    return UNSEEN.format(names=" or ".join(dict.fromkeys(_names(check.matcher, argument))))


def _names(matcher: str, argument: Any) -> Iterable[str]:
    if matcher == "called_tool":
        yield value_text(argument).strip()
    elif matcher == "called_tool_with":
        if isinstance(argument, Mapping) and argument.get("name") is not None:
            yield value_text(argument["name"]).strip()
    elif isinstance(argument, list):
        for item in argument:
            name = item.get("name") if isinstance(item, Mapping) else item
            if isinstance(name, str):
                yield name.strip()


def in_scope(check: Check, record: TurnRecord, records: Sequence[TurnRecord]) -> list[TurnRecord]:
    """The turns a check reads: its own, or with `scope: conversation` its conversation up to it."""
    if check.scope != "conversation":
        return [record]
    return [r for r in records if r.conversation == record.conversation and r.number <= record.number]


def _near(name: str, made: Sequence[str]) -> str:
    """`did you mean lookup_order?` for a call whose name is `name` but for case and separators."""
    key = _SEPARATORS.sub("", name).lower()
    for call in made:
        if call != name and _SEPARATORS.sub("", call).lower() == key:
            return f"did you mean {call}? (a call of that name was made)"
    return ""


def _earlier(
    wanted: Sequence[str], made: Sequence[str], record: TurnRecord, records: Sequence[TurnRecord]
) -> str:
    """Where a tool the check wants, not called in its turn, was called earlier in the conversation."""
    for earlier in records:
        if earlier.conversation != record.conversation or earlier.number >= record.number:
            continue
        for name in wanted:
            if name not in made and any(call.name == name for call in earlier.turn.tool_calls):
                return (
                    f"{name} was called in turn {earlier.number}, an earlier turn of this conversation:"
                    " a check sees its own turn only; add `scope: conversation` to look at every turn"
                )
    return ""
