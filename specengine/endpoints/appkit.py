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

from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import Adapter, Conversation
from specengine.endpoints.responses_items import as_turn, read_response
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
        body: dict[str, Any] = {"message": message}
        agent = self.adapter.config.options.get("agent")
        if agent:
            body["agent"] = str(agent)
        if self.thread_id:
            body["threadId"] = self.thread_id
        answer = await read_response(
            self.adapter, body, SEPARATOR, empty="the agent route answered with an empty event stream"
        )
        thread = answer.output.extra.get("threadId")
        if thread:
            self.thread_id = str(thread)
        return as_turn(answer, session_id=self.thread_id)
