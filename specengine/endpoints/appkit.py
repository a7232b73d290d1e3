"""The `appkit` protocol: a Databricks AppKit app's agent route (`…/api/agents/chat`).

Each turn POSTs `{"message", "agent", "threadId"}` and reads the answer as a stream of Responses
events (AppKit always streams). The app keeps the conversation in a thread: the first event of
every stream is `appkit.metadata` with `{"threadId"}`, which the next turn sends back; the turn's
session id is that thread id. Text deltas build the reply, a finished `message` item replaces its
deltas, `function_call` items are the tool calls, and an `error` / `response.failed` event is an
error reported by the agent (the reply is the text so far). The app answers bad requests (empty
message, unknown agent or thread) with a JSON error and a 4xx status, which is a transport fault.

A turn whose answer holds several message items joins their texts with newlines.

Endpoint options (`EndpointConfig.options`):
- `agent`: the agent to talk to, for apps that serve several; without it the app's default agent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import Adapter, Conversation
from specengine.endpoints.responses_items import ResponsesStream, parse_response, post_events
from specengine.errors import EndpointError
from specengine.transcript import Turn

SEPARATOR = "\n"


class AppKitAdapter(Adapter):
    """An AppKit agent route at `config.url` (the full `.../api/agents/chat` URL)."""

    protocol = "appkit"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> AppKitConversation:
        return AppKitConversation(self)


class AppKitConversation(Conversation):
    """One conversation: the app's thread id, learned from the first turn's `appkit.metadata`."""

    def __init__(self, adapter: AppKitAdapter):
        self.adapter = adapter
        self.thread_id: str | None = None

    async def send(self, message: str) -> Turn:
        config = self.adapter.config
        body: dict[str, Any] = {"message": message}
        agent = config.options.get("agent")
        if agent:
            body["agent"] = str(agent)
        if self.thread_id:
            body["threadId"] = self.thread_id
        stream = ResponsesStream(time.perf_counter(), separator=SEPARATOR)
        data, latency = await post_events(self.adapter.client, config, body, stream.feed)
        if data is not None:  # not an event stream: read it as a Responses JSON body
            output = parse_response(data, SEPARATOR)
            raw: Any = data
        elif stream.events == 0 and not stream.errors:
            raise EndpointError("InvalidResponse", "the agent route answered with an empty event stream")
        else:
            output = stream.output()
            raw = {"events": stream.events, **output.extra}
        thread = output.extra.get("threadId")
        if thread:
            self.thread_id = str(thread)
        return Turn(
            reply=output.reply,
            tool_calls=output.tool_calls,
            session_id=self.thread_id,
            latency_s=latency,
            raw=raw,
            error=output.error,
            ttft_s=stream.ttft if data is None else None,
            usage=output.usage,
        )
