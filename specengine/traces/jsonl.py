"""Plain logs of chat messages: one conversation a line, in the OpenAI chat shape.

    {"id": "c-1", "timestamp": "2026-12-01T10:00:00Z", "agent": "support", "labels": ["vip"],
     "messages": [{"role": "user", "content": "Refund ORD-1"},
                  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
                    "type": "function",
                    "function": {"name": "issue_refund", "arguments": "{\"order_id\": \"ORD-1\"}"}}]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "{\"refunded\": \"ORD-1\"}"},
                  {"role": "assistant", "content": "Done.", "latency_s": 1.2,
                   "usage": {"prompt_tokens": 120, "completion_tokens": 9}}]}

The id is `id`, `conversation_id` or `session_id` (else the line number); `agent` names the agent
(what `source: {agent: ...}` keeps and `trace.agent` reads); a tool call may also be written
`{"name", "arguments"}`. Each assistant message is read as a model call that read the
messages before it, so the turns follow the same rules as traces' (`turns.py`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from specengine.traces.model import AgentRun, CallMade, Message, ModelCall, TraceParts, Unreadable
from specengine.traces.otlp import MAX_LINE_BYTES, bounded_lines, nanos
from specengine.traces.values import parsed
from specengine.untrusted_json import MAX_DEPTH
from specengine.usage import read_usage

ID_KEYS = ("id", "conversation_id", "session_id")


def _calls(raw: Any) -> tuple[CallMade, ...]:
    calls = []
    for call in raw or ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else call
        arguments = function.get("arguments", function.get("args", {}))
        calls.append(CallMade(str(function.get("name") or ""), parsed(arguments), call.get("id")))
    return tuple(calls)


def message_of(raw: Any, number: int) -> Message:
    """A chat message in the OpenAI shape; ValueError when it is not one."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("role"), str):
        raise ValueError(f"message {number} is not a mapping with a role")
    content = raw.get("content")
    if isinstance(content, list):  # content parts: their text
        content = "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return Message(
        raw["role"],
        "" if content is None else str(content),
        _calls(raw.get("tool_calls")),
        raw.get("tool_call_id"),
    )


def _start_ns(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return nanos(value * 1e9 if value < 1e12 else value)
    if isinstance(value, str):
        try:
            return nanos(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1e9)
        except ValueError:
            return 0
    return 0


def _took_ns(latency: Any) -> int:
    """A message's `latency_s` in nanoseconds; 0 when it is not a finite number of seconds."""
    if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not math.isfinite(latency):
        return 0
    return nanos(latency * 1e9)


def parts_of(record: Mapping[str, Any], file: str, number: int) -> TraceParts:
    """One line's conversation as trace parts; ValueError when its messages cannot be read."""
    key = next(
        (str(record[name]) for name in ID_KEYS if record.get(name) not in (None, "")), f"line {number}"
    )
    raw_messages = record.get("messages")
    if not isinstance(raw_messages, list):
        raise ValueError("no messages list")
    messages = [message_of(raw, index) for index, raw in enumerate(raw_messages, 1)]
    start = _start_ns(record.get("timestamp"))
    parts = TraceParts(str(record.get("trace_id") or key), file, conversation=key, start_ns=start)
    clock = start
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        raw = raw_messages[index]
        took = _took_ns(raw.get("latency_s"))
        usage = read_usage(raw.get("usage") if isinstance(raw.get("usage"), Mapping) else None)
        parts.calls.append(
            ModelCall(
                clock + index,
                clock + index + took,
                tuple(messages[:index]),
                (message,),
                usage.input_tokens if usage else None,
                usage.output_tokens if usage else None,
            )
        )
        clock += took
    if isinstance(record.get("labels"), list):
        parts.labels.update(str(label) for label in record["labels"])
    if isinstance(record.get("agent"), str) and record["agent"]:  # read by `agent:` and trace.agent
        parts.agents.append(AgentRun("", start, clock, record["agent"]))
    return parts


def read_jsonl(path: Path, shown: str) -> Iterator[TraceParts | Unreadable]:
    """Every line of a file as a conversation's parts, or why it cannot be read."""
    with path.open("rb") as handle:
        for number, line in bounded_lines(handle):
            if line is None:
                yield Unreadable(shown, None, f"the line is longer than {MAX_LINE_BYTES:,} bytes", number)
                continue
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
                if not isinstance(record, Mapping):
                    raise ValueError("not a JSON object")
                yield parts_of(record, shown, number)
            except (ValueError, orjson.JSONDecodeError) as exc:
                yield Unreadable(shown, None, str(exc), number)
            except RecursionError:  # a value nested deeper than str() or pickle can walk
                yield Unreadable(shown, None, f"nested deeper than {MAX_DEPTH} levels", number)
