"""A customer-support bot behind its own JSON API, as a team would write one without specengine in mind.

`POST /chat {"session", "message"}` answers `{"reply", "session", "actions": [...]}`. The message
picks how the bot writes its one tool call (`lookup_order` with `{"order_id": "ORD-123"}`): a
message that names a key of SHAPES gets that shape in `actions`; any other message gets the bot's
own `{"tool", "params"}`, and one that says "thanks" gets no call; a message that says "echo token"
gets the `X-Token` header and the body's `login` echoed in its reply. `data.reply` also carries the
reply, for tests of expressions that pick nothing. Requests are recorded (`hits()`), so a test
can say how many reached the bot.
"""

from __future__ import annotations

import json
from typing import Any

from support.servers import Request, ScriptedHTTPServer

CHAT_PATH = "/chat"
TOOL = "lookup_order"
ARGS = {"order_id": "ORD-123"}

SHAPES: dict[str, Any] = {
    "name-arguments-object": [{"name": TOOL, "arguments": ARGS}],
    "name-arguments-text": [{"name": TOOL, "arguments": json.dumps(ARGS)}],
    "name-args": [{"name": TOOL, "args": ARGS}],
    "tool-params": [{"tool": TOOL, "params": ARGS}],
    "tool-input": [{"tool": TOOL, "input": ARGS}],
    "toolname-toolinput": [{"tool_name": TOOL, "tool_input": ARGS}],
    "openai-function": [
        {"id": "call_1", "type": "function", "function": {"name": TOOL, "arguments": json.dumps(ARGS)}}
    ],
    "anthropic-tool-use": [{"type": "tool_use", "id": "toolu_1", "name": TOOL, "input": ARGS}],
    "name-to-args-items": [{TOOL: ARGS}],
    "name-to-args-mapping": {TOOL: ARGS},
    "own-shape": [{"op": TOOL, "data": ARGS}],
}


class SupportBot(ScriptedHTTPServer):
    """The bot: a reply that echoes the message, a session, and one call in the shape asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.route(CHAT_PATH, self._chat)

    def endpoint(self, **extra: Any) -> dict[str, Any]:
        base = {
            "protocol": "http",
            "url": self.url_for(CHAT_PATH),
            "body": {"session": "{{ session_id }}", "message": "{{ message }}"},
            "reply": "json.reply",
            "session_id": "json.session",
            "tool_calls": "json.actions",
        }
        return {**base, **extra}

    def _chat(self, request: Request) -> dict[str, Any]:
        body = request.json or {}
        message = str(body.get("message") or "")
        shape = next((name for name in SHAPES if name in message), None)
        actions = SHAPES[shape] if shape else [{"tool": TOOL, "params": ARGS}]
        if "thanks" in message.lower():  # a turn that calls nothing
            actions = []
        reply = f"Order ORD-123 is on its way ({message})"
        if "echo token" in message:  # a bot that leaks its credentials into its reply
            reply += f" token={request.headers.get('x-token')} login={body.get('login')}"
        return {
            "reply": reply,
            "data": {"reply": reply},
            "session": body.get("session") or "s-1",
            "actions": actions,
        }
