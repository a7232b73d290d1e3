"""Tool calls as real JSON APIs write them, read without changing the API.

An `http` endpoint's `tool_calls` picks a value from the answer; this module turns that value into
`ToolCall`s. Each item may be any of the shapes APIs use for a call, recognised by its keys:

- `{name, arguments}` (an object or a JSON text), `{name, args}`, `{name, parameters}`;
- `{tool, params}`, `{tool, input}`, `{tool, args}`, `{tool_name, tool_input}`;
- OpenAI's `{type: function, function: {name, arguments}}` (and `{function: {...}}` alone);
- Anthropic's `{type: tool_use, id, name, input}`;
- a mapping of one tool name to its arguments (`{"lookup_order": {"order_id": "ORD-1"}}`).

The whole value may also be one call (a mapping in one of those shapes) or a mapping from tool names
to arguments. Where an API writes calls some other way, a key map names its keys:
`tool_calls: {from: json.actions, name: tool, args: params}` (`id` is optional; each is a key of
the item, or a dotted path into it). An item that still cannot be read is an error that shows the
item and the key map that would read it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.endpoints.base import BODY_EXCERPT, parse_arguments
from specengine.transcript import ToolCall

NAME_KEYS = ("name", "tool", "tool_name", "function_name")
ARGS_KEYS = ("arguments", "args", "params", "parameters", "input", "tool_input")
ID_KEYS = ("id", "call_id", "tool_call_id", "tool_use_id")
_FIELDS = frozenset({*NAME_KEYS, *ARGS_KEYS, *ID_KEYS, "type", "function"})


@dataclass(frozen=True)
class KeyMap:
    """Where an API keeps a call's parts: the expression that gives the list, and keys in each item."""

    source: str
    name: str
    args: str | None = None
    id: str | None = None

    def written(self) -> str:
        parts = [f"from: {self.source}", f"name: {self.name}"]
        parts += [f"args: {self.args}"] if self.args else []
        parts += [f"id: {self.id}"] if self.id else []
        return "tool_calls: {" + ", ".join(parts) + "}"


def key_map(option: Any) -> KeyMap | None:
    """The key map an endpoint's `tool_calls` option writes, or None for a plain expression."""
    if not isinstance(option, Mapping):
        return None
    return KeyMap(
        source=str(option.get("from") or "").strip(),
        name=str(option.get("name") or "name").strip(),
        args=str(option["args"]).strip() if option.get("args") else None,
        id=str(option["id"]).strip() if option.get("id") else None,
    )


class Unreadable(ValueError):
    """A value or item that is no tool call; `message` says what it is and what to write."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class CallItem:
    """One item of a `tool_calls` value as the API wrote it: a whole call, or, in a stream, a piece
    of one (no name; the `index` or id of the call an earlier event started)."""

    name: str | None  # None for a piece
    args: Any  # as written: a JSON text (in a stream maybe a piece of one), a structure, or None
    id: str | None = None
    index: int | str | None = None  # the item's `index`: which call of the message it belongs to

    def call(self) -> ToolCall:
        """The call, its arguments parsed (a JSON text through the untrusted reader)."""
        return _call(self.name or "", self.args, self.id)


def read_calls(value: Any, source: str, mapping: KeyMap | None = None) -> tuple[ToolCall, ...]:
    """The calls in the value `tool_calls` picked; Unreadable when an item is none."""
    return tuple(item.call() for item in read_items(value, source, mapping))


def read_items(
    value: Any, source: str, mapping: KeyMap | None = None, pieces: bool = False
) -> tuple[CallItem, ...]:
    """The items of the value `tool_calls` picked, arguments as written; Unreadable when an item is
    no call (with `pieces`, as a stream's event may send, an item without a name but with an
    `index` or an id is a piece of a call)."""
    if value is None:
        return ()
    items: list[Any]
    if isinstance(value, Mapping):
        if mapping is None and _read_item(value) is None and _is_tool_table(value):
            return tuple(CallItem(str(name), args) for name, args in value.items())
        items = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise Unreadable(f"`tool_calls: {source}` must give a list of tool calls, got {_excerpt(value)}")
    read = []
    for position, item in enumerate(items):
        call = _mapped_item(item, mapping) if mapping is not None else _read_item(item)
        if call is None or (call.name is None and not pieces):
            raise Unreadable(_unreadable(item, position, source, mapping))
        read.append(call)
    return tuple(read)


def _read_item(item: Any) -> CallItem | None:
    """The call an item holds, in any shape this module knows (a nameless piece when it has an
    `index` or an id); None when it is in none of them."""
    if not isinstance(item, Mapping):
        return None
    function = item.get("function")
    if isinstance(function, Mapping):
        fields: Mapping[str, Any] = function
    else:
        fields = item
    name = _first(fields, NAME_KEYS)
    args = _first(fields, ARGS_KEYS)
    if args is None and fields is not item:
        args = _first(item, ARGS_KEYS)
    call_id, index = _id(_first(item, ID_KEYS)), _index(item.get("index"))
    if isinstance(name, str) and name:
        return CallItem(name, args, call_id, index)
    if len(item) == 1:  # {"lookup_order": {"order_id": "ORD-1"}}
        [(key, one)] = item.items()
        if str(key) not in _FIELDS and (one is None or isinstance(one, (Mapping, str))):
            return CallItem(str(key), one)
    if call_id is not None or index is not None:
        return CallItem(None, args, call_id, index)
    return None


def _is_tool_table(value: Mapping[str, Any]) -> bool:
    """A mapping from tool names to their arguments: every key a name, every value arguments."""
    return bool(value) and all(
        str(key) not in _FIELDS and (args is None or isinstance(args, Mapping)) for key, args in value.items()
    )


def _mapped_item(item: Any, mapping: KeyMap) -> CallItem | None:
    if not isinstance(item, Mapping):
        return None
    name = _path(item, mapping.name)
    args = _path(item, mapping.args) if mapping.args else None
    call_id, index = _id(_path(item, mapping.id) if mapping.id else None), _index(item.get("index"))
    if isinstance(name, str) and name:
        return CallItem(name, args, call_id, index)
    if call_id is not None or index is not None:
        return CallItem(None, args, call_id, index)
    return None


def _call(name: str, raw_args: Any, call_id: Any = None) -> ToolCall:
    args, note = parse_arguments(raw_args)
    return ToolCall(name=name, args=args, id=str(call_id) if call_id else None, note=note)


def _id(value: Any) -> str | None:
    return str(value) if value else None


def _index(value: Any) -> int | str | None:
    """An item's `index` when it is one (a number or a text; a boolean is none)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or value == "":
        return None
    return value


def _first(fields: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in fields:
            return fields[key]
    return None


def _path(item: Mapping[str, Any], path: str) -> Any:
    value: Any = item
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _unreadable(item: Any, position: int, source: str, mapping: KeyMap | None) -> str:
    shown = _excerpt(item)
    if mapping is not None:
        return f"`{mapping.written()}`: item {position} has no text at `{mapping.name}`: {shown}" + _fix(
            item, mapping.source
        )
    return f"`tool_calls: {source}` item {position} is not a tool call specengine reads: {shown}" + _fix(
        item, source
    )


def _fix(item: Any, source: str) -> str:
    """The key map that would read this item, guessed from its keys: a text for the name, a
    mapping (or JSON text) for the arguments."""
    if not isinstance(item, Mapping):
        return "; each item must be a mapping that holds the tool's name"
    name = next((str(key) for key, value in item.items() if isinstance(value, str) and value), None)
    args = next(
        (str(key) for key, value in item.items() if isinstance(value, Mapping) and str(key) != name), None
    )
    if name is None:
        return "; no key holds a text to read as the tool's name"
    guess = KeyMap(source=source or "json.…", name=name, args=args)
    return f"; to read it, write `{guess.written()}` in the endpoint"


def _excerpt(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:BODY_EXCERPT]
