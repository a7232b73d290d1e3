"""What every convention's reader shares: a recorded value read within the untrusted-input limits,
a history cut to the turn it belongs to, and flattened `prefix.N.field` attributes put back together.

A recorded agent's text may say anything: JSON text is read by the same depth limit as every answer
(`untrusted_json.py`), and a history an agent resent whole is read from its last user message on.
`genai.py`, `openinference.py`, `openllmetry.py`, `jsonl.py` and `mlflow.py` read through these, so
the limits and the cut are the same whichever library wrote the trace.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import orjson

from specengine.traces.model import Message
from specengine.untrusted_json import MAX_DEPTH, deeper_than, read_json

TOO_DEEP = f"(nested deeper than {MAX_DEPTH} levels)"
EARLIER_USER = Message("user")  # a user message before the last of a model call's input
T = TypeVar("T")


def parsed(value: Any) -> Any:
    """JSON text as its value (arguments, results); anything else as it is. A recorded agent's text
    may be nested as deep as it pleased: one with more brackets than MAX_DEPTH is read by
    `read_json`, which refuses it deeper than that; the rest by orjson (the message histories are
    most of a trace's bytes), and what orjson refuses that json reads (NaN, an integer past 64 bits)
    by `read_json` too. A value given as JSON already (a JSONL line's arguments as an object, an
    OTLP `kvlistValue`) deeper than MAX_DEPTH is TOO_DEEP in its place."""
    if isinstance(value, (str, bytes)):
        if _brackets(value) <= MAX_DEPTH:
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        try:
            return read_json(value)
        except ValueError:
            return value
    if isinstance(value, (dict, list)) and deeper_than(value, MAX_DEPTH):
        return TOO_DEEP  # as deep text reads; a deeper value would break what walks or stores it
    return value


def text_of(value: Any) -> str:
    """A part's content as text: JSON for a structured one (by orjson, as fast as it is read)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, default=str)


def id_text(value: Any) -> str | None:
    """A recorded call id as text (a library may write it as a number), None when none is given."""
    return None if value is None else str(value)


def from_last_user(items: list[T], is_user: Callable[[T], bool]) -> tuple[list[T], int]:
    """A model call's input from its last user message on, and how many user messages came before:
    all a turn reads of the history (`turns.py`), which an agent resends whole on every call (an
    earlier turn's tool result, read again, would be taken for this turn's call of the same id)."""
    users = [index for index, item in enumerate(items) if is_user(item)]
    if len(users) < 2:
        return items, 0
    return items[users[-1] :], len(users) - 1


def history(messages: list[Message]) -> tuple[Message, ...]:
    """A model call's input as a turn reads it: from the last user message on, the user messages
    before it kept as empty ones (they count, `turns.py`)."""
    kept, earlier = from_last_user(messages, lambda message: message.role == "user")
    return (EARLIER_USER,) * earlier + tuple(kept)


def _brackets(text: str | bytes) -> int:
    return text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")


def is_number(text: str) -> bool:
    """Whether a flattened key's part is a message or call number: ASCII digits only (`str.isdigit`
    also takes `²`, which int() refuses)."""
    return text.isascii() and text.isdigit()


def numbered(items: Iterable[tuple[str, Any]], prefix: str, under: str = "") -> dict[int, dict[str, Any]]:
    """Flattened attributes `prefix.N.field` as {N: {field: value}}, fields as written after the
    number (`gen_ai.prompt.2.tool_calls.0.name` under prefix `gen_ai.prompt`: {2: {"tool_calls.0.name":
    …}}), or with `under` only the fields that start with it, named without it; a key whose part after
    the prefix is not a number is not one of them."""
    found: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    cut = len(under)
    for key, value in items:
        if not key.startswith(start):
            continue
        number, _, rest = key[len(start) :].partition(".")
        if is_number(number) and rest.startswith(under) and len(rest) > cut:
            found.setdefault(int(number), {})[rest[cut:]] = value
    return found


def in_order(found: Mapping[int, T]) -> list[T]:
    """The numbered entries in their numbers' order."""
    return [found[number] for number in sorted(found)]
