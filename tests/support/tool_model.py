"""A scripted model for declared tools: the tools an endpoint declares, and a script that calls the
tool a user message names, then answers with the result it is sent (a `tool` message: chat
completions' own, or a Responses `function_call_output` item as the scripted server reads it)."""

from __future__ import annotations

from typing import Any

from support.servers import Reply

TOOLS = [
    {
        "name": "lookup_order",
        "description": "Look up an order by its number",
        "parameters": "schemas/order.json",  # a JSON Schema file beside the project file
        "returns": {"status": "shipped", "total": 19.99},
    },
    {
        "name": "issue_refund",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "returns": [
            {"when": {"order_id": "ORD-123"}, "then": {"refunded": True}},
            {"then": {"error": "no such order"}},
        ],
    },
    {"name": "greet", "returns": "Hello, {{ args.name }}!"},
]
ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def model(messages: list[dict[str, Any]]) -> Reply | str:
    """A model that calls the tool a user message names, then answers with the tool's result."""
    last = messages[-1]
    said = next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")
    if said == "forever":
        return Reply(content="", tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-1"}}])
    if last["role"] == "tool":
        return f"The tool said: {last['content']}"
    words = said.split()
    if words[0] in ("lookup_order", "issue_refund", "delete_everything"):
        return Reply(content="", tool_calls=[{"name": words[0], "args": {"order_id": words[1]}}])
    if words[0] == "greet":
        return Reply(content="", tool_calls=[{"name": "greet", "args": {"name": words[1]}}])
    return "No tool needed."
