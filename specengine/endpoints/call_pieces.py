"""Tool calls a stream sends over many events, joined into whole calls when the stream ends.

Chat APIs stream a call in pieces: OpenAI's deltas send `{index, id, function: {name, arguments:
""}}` first, then `{index, function: {arguments: "{\\"ord"}}`, `{index, function: {arguments:
"er_id\\": …}"}}`; Anthropic's `input_json_delta`s are the same idea. An `http` endpoint with
`stream: true` reads each event's items (tool_call_shapes.read_items); here an item with a name
starts a call, and an item without one (a piece) continues the call with its id, else the last
call started with its `index`. Argument texts are joined, and parsed once, at the end, through the
untrusted JSON reader (parse_arguments); arguments given as a structure are taken whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from specengine.endpoints.base import parse_arguments
from specengine.endpoints.tool_call_shapes import CallItem
from specengine.transcript import ToolCall


@dataclass
class _Call:
    """One call as its pieces arrive."""

    name: str
    id: str | None
    index: int | str | None
    texts: list[str] = field(default_factory=list)
    structure: Any = None  # the last arguments given as a structure rather than a JSON text

    def add(self, args: Any) -> None:
        if isinstance(args, str):
            self.texts.append(args)
        elif args is not None:
            self.structure = args

    def call(self) -> ToolCall:
        text = "".join(self.texts)
        args, note = parse_arguments(text if text or self.structure is None else self.structure)
        return ToolCall(name=self.name, args=args, id=self.id, note=note)


class JoinedCalls:
    """The calls of one stream, in the order they started."""

    def __init__(self) -> None:
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        self._by_index: dict[int | str, _Call] = {}  # the last call started with each index

    def add(self, item: CallItem) -> bool:
        """Fold one item in; False for a piece of no call an earlier item started.

        An item with a name starts a call, unless it repeats the name and id of one (a server that
        sends them with every piece); a piece continues the call with its id, else the last one
        started with its index."""
        call = self._by_id.get(item.id) if item.id is not None else None
        if item.name is None:
            if call is None and item.index is not None:
                call = self._by_index.get(item.index)
            if call is None:
                return False
        elif call is None or call.name != item.name:
            call = _Call(item.name, item.id, item.index)
            self._calls.append(call)
            if item.index is not None:
                self._by_index[item.index] = call
        if item.id is not None:
            self._by_id[item.id] = call
        call.add(item.args)
        return True

    def __bool__(self) -> bool:
        return bool(self._calls)

    def calls(self) -> tuple[ToolCall, ...]:
        """The whole calls, their arguments parsed."""
        return tuple(call.call() for call in self._calls)
