"""The `openai-responses` protocol: the OpenAI Responses API (`…/responses`), as JSON or SSE.

The server keeps the conversation: every turn after the first sends `previous_response_id` (the id
of the last response) and only the new user message. The session id of a turn is its response id.
A server that answers without an `id` cannot be continued that way, so for it the conversation
falls back to resending the whole history (user messages and the assistant's output items).

The reply is the concatenated `output_text` of the `message` items (as the SDK's `output_text`);
`function_call` items are the tool calls. `error` / `response.failed` events, or a JSON body with an
`error` or `status: failed`, are errors reported by the agent: the turn keeps the text so far.

Endpoint options (`EndpointConfig.options`):
- `stream`: true sends `"stream": true` and reads the Responses events; the time to the first text
  delta or tool call is `Turn.ttft_s`.
- `extra_body`: a mapping merged into every request body (e.g. `instructions`, `tools`,
  `temperature`); it cannot replace `model`, `input` or `previous_response_id`.
- `tools` and `max_tool_steps`: for an endpoint that is a model, the declared tools
  (declared_tools.py) sent as function tools with every request. The same tool loop as chat
  completions runs each turn: every `function_call` item is answered with a `function_call_output`
  input item (`call_id`, `output`: the declared result) after `previous_response_id`, or after the
  history and the calls themselves for a server without ids, and the model is asked again, up to
  `max_tool_steps` times; every call is recorded with its result. A `tool_choice` of `extra_body`
  goes with a turn's first request only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import Adapter, Conversation, request_json
from specengine.endpoints.declared_tools import DeclaredTool, declared_tools, result_text, run_tool_loop
from specengine.endpoints.responses_items import (
    ResponseAnswer,
    as_turn,
    parse_response,
    read_response,
    replay_items,
)
from specengine.transcript import ToolCall, Turn


class OpenAIResponsesAdapter(Adapter):
    """The Responses API at `config.url` (the full `.../responses` URL)."""

    protocol = "openai-responses"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> OpenAIResponsesConversation:
        return OpenAIResponsesConversation(self)


class OpenAIResponsesConversation(Conversation):
    """One conversation: the last response id, and the history in case the server gives no ids."""

    def __init__(self, adapter: OpenAIResponsesAdapter):
        self.adapter = adapter
        self.previous_id: str | None = None
        self.history: list[dict[str, Any]] = []
        self.tools: tuple[DeclaredTool, ...] = declared_tools(adapter.config.options.get("tools"))
        self.tool_overrides: Mapping[str, Any] = {}

    def override_tools(self, overrides: Mapping[str, Any]) -> None:
        self.tool_overrides = overrides

    async def send(self, message: str) -> Turn:
        turn = await self._respond([{"role": "user", "content": message}], first=True)
        if self.tools:
            max_steps = self.adapter.config.options.get("max_tool_steps")
            turn = await run_tool_loop(turn, self._answer_calls, self.tools, self.tool_overrides, max_steps)
        return turn

    async def _answer_calls(self, last: Turn, answered: list[ToolCall]) -> Turn:
        """The results as `function_call_output` items; a server without ids also needs the calls."""
        outputs = [
            {"type": "function_call_output", "call_id": call.id, "output": result_text(call.result)}
            for call in answered
        ]
        if self.previous_id:
            return await self._respond(outputs, first=False)
        calls = [
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(call.args, ensure_ascii=False),
            }
            for call in answered
        ]
        return await self._respond([*calls, *outputs], first=False)

    async def _respond(self, items: list[dict[str, Any]], *, first: bool) -> Turn:
        """Send the new input items after the last response (or after the whole history)."""
        config = self.adapter.config
        extra = config.options.get("extra_body")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        if not first:
            extra.pop("tool_choice", None)  # a forced call is answered once; then the model speaks
        body: dict[str, Any] = {**extra, "model": config.model or "default"}
        if self.previous_id:
            body["previous_response_id"] = self.previous_id
            body["input"] = items
        else:
            body.pop("previous_response_id", None)
            body["input"] = [*self.history, *items]
        if self.tools:
            body["tools"] = [tool.responses_definition() for tool in self.tools]
        if config.options.get("stream") or extra.get("stream"):
            body["stream"] = True
            answer = await read_response(
                self.adapter, body, separator="", empty="the stream ended without a single event"
            )
        else:
            sent = await request_json(self.adapter, body)
            answer = ResponseAnswer(parse_response(sent.data), sent.latency_s)
        self.previous_id = answer.output.response_id
        self.history = [*self.history, *items, *replay_items(answer.output.items)]
        return as_turn(answer, session_id=self.previous_id)
