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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import Adapter, Conversation, request_json
from specengine.endpoints.responses_items import (
    ResponseAnswer,
    as_turn,
    parse_response,
    read_response,
    replay_items,
)
from specengine.transcript import Turn


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

    async def send(self, message: str) -> Turn:
        config = self.adapter.config
        user = {"role": "user", "content": message}
        extra = config.options.get("extra_body")
        extra = extra if isinstance(extra, Mapping) else {}
        body: dict[str, Any] = {**extra, "model": config.model or "default"}
        if self.previous_id:
            body["previous_response_id"] = self.previous_id
            body["input"] = [user]
        else:
            body.pop("previous_response_id", None)
            body["input"] = [*self.history, user]
        if config.options.get("stream") or extra.get("stream"):
            body["stream"] = True
            answer = await read_response(
                self.adapter, body, separator="", empty="the stream ended without a single event"
            )
        else:
            sent = await request_json(self.adapter, body)
            answer = ResponseAnswer(parse_response(sent.data), sent.latency_s)
        self.previous_id = answer.output.response_id
        self.history = [*self.history, user, *replay_items(answer.output.items)]
        return as_turn(answer, session_id=self.previous_id)
