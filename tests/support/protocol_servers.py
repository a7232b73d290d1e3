"""Scripted agent servers for the Responses, Databricks Model Serving and AppKit protocols.

Each speaks its protocol the way the real server does (see research/protocol-captures.md): the
same JSON shapes, the same SSE framing, the same error bodies and statuses. All are built on
`servers.ScriptedAgent`, so they are scripted, recorded and failed exactly like `servers.AgentServer`:

    server.script(lambda messages: Reply(content="Sunny", tool_calls=[{"name": "get_weather",
                                                                        "args": {"city": "Paris"}}]))
    server.script({"hi": "Hello!", "boom": Reply(error="model failure")})   # by last user message
    server.script([Reply(status=503), "ok"])                                 # one per request

`messages` is the conversation as the server understands it: `{role, content}` texts, oldest first,
ending with the new user message (rebuilt from `previous_response_id`, the replayed history, or
the AppKit thread). A Reply's `tool_calls` entries may carry an `output` (the tool result the agent
reports). `Reply.error` is a failure reported inside a well-formed answer; `status`/`body`/`events`
answer verbatim.

`converse(endpoint, messages)` drives an adapter through conversations; `talk` through one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from support.servers import (
    SSE,
    Reply,
    Request,
    ScriptedAgent,
    Turn,
    chat_tool_calls,
    openai_error,
    tool_arguments,
    tool_output,
    words,
)

RESPONSES_PATH = "/v1/responses"
INVOCATIONS_PATH = "/invocations"
APPKIT_PATH = "/api/agents/chat"


# ---------------------------------------------------------------------------------------------------
# OpenAI Responses API: server-side state by previous_response_id.
# ---------------------------------------------------------------------------------------------------


class ResponsesServer(ScriptedAgent):
    """`POST /v1/responses`: keeps each response's conversation, continues it by previous_response_id.

    `with_ids=False` plays a stateless compatible server that answers without response ids (and
    rejects previous_response_id). Streams (`"stream": true`) send the OpenAI event sequence with
    `event:` names; the final `response.completed` carries the whole response.
    """

    path = RESPONSES_PATH
    protocol = "openai-responses"
    endpoint_options = {"model": "agent"}

    def __init__(self, with_ids: bool = True) -> None:
        super().__init__()
        self.with_ids = with_ids
        self.conversations: dict[str, list[dict[str, Any]]] = {}

    def read_turn(self, request: Request) -> Turn | Reply:
        body = request.json
        if not isinstance(body, dict) or "input" not in body or "model" not in body:
            return openai_error(400, "Missing required parameter: 'input' or 'model'.", "input")
        previous = body.get("previous_response_id")
        with self._lock:
            history = list(self.conversations.get(previous, [])) if previous else []
            known = previous in self.conversations if previous else True
        if not known or (previous and not self.with_ids):
            message = f"Previous response with id '{previous}' not found."
            return openai_error(404, message, "previous_response_id", "previous_response_not_found")
        new = _responses_input_texts(body["input"])
        if new is None:
            return openai_error(400, "Invalid 'input': expected a string or a list of items.", "input")
        return Turn([*history, *new], body)

    def render(self, reply: Reply, turn: Turn) -> Reply:
        number = self.next_id()
        response_id = f"resp_{number}" if self.with_ids else None
        if response_id:
            with self._lock:
                self.conversations[response_id] = [
                    *turn.messages,
                    {"role": "assistant", "content": reply.content or ""},
                ]
        output = responses_output(reply, number)
        response = _response_object(response_id, turn.body.get("model"), output, reply.error)
        if reply.streams(bool(turn.body.get("stream"))):
            return Reply(events=_openai_events(response, reply))
        return Reply(body=response)


def _responses_input_texts(value: Any) -> list[dict[str, Any]] | None:
    """The conversation texts an `input` adds (a string, or message / tool items); a tool's result
    (a `function_call_output` item) is a `tool` message, so a script playing a model can read it."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list):
        return None
    texts = []
    for item in value:
        if not isinstance(item, dict):
            return None
        kind = item.get("type", "message")
        if kind == "message":
            if "role" not in item or "content" not in item:
                return None
            content = item["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            if not isinstance(content, str):
                return None
            texts.append({"role": item["role"], "content": content})
        elif kind == "function_call":
            if not all(isinstance(item.get(key), str) for key in ("call_id", "name", "arguments")):
                return None
        elif kind == "function_call_output":
            if not isinstance(item.get("call_id"), str) or "output" not in item:
                return None
            texts.append({"role": "tool", "content": item["output"], "call_id": item["call_id"]})
        else:
            return None
    return texts


def responses_output(reply: Reply, number: int) -> list[dict[str, Any]]:
    """Output items for an agent Reply: each tool call and its result, then the message."""
    items: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls, start=1):
        call_id = call.get("id", f"call_{number}_{index}")
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{number}_{index}",
                "call_id": call_id,
                "name": call["name"],
                "arguments": tool_arguments(call),
                "status": "completed",
            }
        )
        if call.get("output") is not None:
            items.append({"type": "function_call_output", "call_id": call_id, "output": tool_output(call)})
    if reply.content is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{number}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    return items


def _response_object(response_id: str | None, model: Any, output: list[Any], error: Any) -> dict[str, Any]:
    response: dict[str, Any] = {
        "object": "response",
        "status": "failed" if error is not None else "completed",
        "model": model,
        "output": output,
        "error": {"code": "server_error", "message": str(error)} if error is not None else None,
        "usage": {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12},
    }
    if response_id:
        response = {"id": response_id, **response}
    return response


def _openai_events(response: dict[str, Any], reply: Reply) -> list[tuple[str, Any]]:
    """The OpenAI event sequence for a response, ending in response.completed (or error + failed)."""
    events: list[tuple[str, Any]] = []
    sequence = itertools.count()

    def emit(kind: str, **data: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(sequence), **data}))

    shell = {**response, "status": "in_progress", "output": [], "error": None}
    emit("response.created", response=shell)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in words(text):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        elif item["type"] == "function_call":
            emit("response.output_item.added", output_index=index, item={**item, "arguments": ""})
            arguments = item["arguments"]
            half = len(arguments) // 2
            for piece in (arguments[:half], arguments[half:]):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=piece,
                )
        else:
            emit("response.output_item.added", output_index=index, item=item)
        emit("response.output_item.done", output_index=index, item=item)
    if reply.error is not None:
        emit("error", code="server_error", message=str(reply.error), param=None)
        emit("response.failed", response=response)
    else:
        emit("response.completed", response=response)
    return events


# ---------------------------------------------------------------------------------------------------
# Databricks / MLflow Model Serving: stateless /invocations, ResponsesAgent or ChatAgent.
# ---------------------------------------------------------------------------------------------------


class DatabricksServer(ScriptedAgent):
    """`POST /invocations` of an MLflow agent: `kind` "responses" (ResponsesAgent) or "chat" (ChatAgent).

    `streaming=False` is the scoring server (`mlflow models serve`): it ignores `"stream"`, answers
    JSON with `", "` separators, and its errors are `{"error_code", "message", ...}`. `streaming=True`
    is MLflow's AgentServer: `"stream": true` gets `data:` events ending in `data: [DONE]`, JSON is
    compact, errors are `{"detail": ...}` (a missing `messages` for a ChatAgent is a 500 there).
    Requests are validated like MLflow's schemas, so a badly replayed history is a 400.
    """

    path = INVOCATIONS_PATH
    protocol = "databricks"

    def __init__(self, kind: str = "responses", streaming: bool = False) -> None:
        super().__init__()
        self.kind = kind
        self.streaming = streaming

    def _json(self, status: int, body: Any) -> Reply:
        separators = (",", ":") if self.streaming else (", ", ": ")
        return Reply(
            status=status,
            body=json.dumps(body, separators=separators),
            headers={"Content-Type": "application/json"},
        )

    def _error(self, status: int, message: str, code: str = "BAD_REQUEST") -> Reply:
        if self.streaming:
            return self._json(status, {"detail": message})
        return self._json(
            status,
            {
                "error_code": code,
                "message": message,
                "sqlstate": "KAM00",
                "error_class": "INVALID_PARAMETER_VALUE",
            },
        )

    def read_turn(self, request: Request) -> Turn | Reply:
        body = request.json
        if not isinstance(body, dict):
            return self._error(400, "Invalid input. Ensure that input is a valid JSON formatted string.")
        field = "input" if self.kind == "responses" else "messages"
        other = "messages" if self.kind == "responses" else "input"
        if field not in body:
            echo = repr(body)[:300]
            if self.kind == "chat":
                text = (
                    f"Failed to enforce schema of data '{echo}' with schema "
                    "'['messages': Array({content: string (optional), id: string (optional), role: string "
                    "(required)}) (required)]'. Error: Model is missing inputs ['messages']. "
                    f"Note that there were extra inputs: ['{other}']"
                )
                return self._error(500 if self.streaming else 400, text, "INVALID_PARAMETER_VALUE")
            text = (
                f"Failed to predict data '{echo}'. \nError: Failed to enforce schema of data '{echo}' with "
                "schema '['context': {conversation_id: string (optional), user_id: string (optional)} "
                "(optional), 'custom_inputs': Map(str -> Any) (optional), 'input': Array(Any) (required)]'"
            )
            return self._error(400, text, "INVALID_PARAMETER_VALUE")
        problem = _check_context(body)
        messages = (
            _responses_input_texts(body["input"])
            if self.kind == "responses"
            else _chat_texts(body["messages"])
        )
        if problem or messages is None:
            return self._error(400, problem or f"Invalid data for {field}: a message is malformed")
        return Turn(messages, body)

    def render(self, reply: Reply, turn: Turn) -> Reply:
        number = self.next_id()
        stream = reply.streams(self.streaming and bool(turn.body.get("stream")))
        if self.kind == "responses":
            output = [_mlflow_item(item) for item in responses_output(reply, number)]
            if stream:
                return Reply(events=_mlflow_response_events(output, reply))
            if reply.error is not None:
                return self._error(500, f"Model error: {reply.error}", "INTERNAL_ERROR")
            return self._json(200, {"object": "response", "output": output, **_usage(reply)})
        chain = _chat_chain(reply, number)
        if stream:
            events: list[Any] = [{"delta": message} for message in _split_deltas(chain)]
            if events:
                events[-1] = {**events[-1], **_usage(reply)}  # ChatAgentChunk.usage, on the last chunk
            if reply.error is not None:
                events.append({"error": str(reply.error)})
            return Reply(events=[*events, "[DONE]"])
        if reply.error is not None:
            return self._error(500, f"Model error: {reply.error}", "INTERNAL_ERROR")
        return self._json(200, {"messages": chain, **_usage(reply)})


def _usage(reply: Reply) -> dict[str, Any]:
    """The `usage` field of an answer, when the Reply reports one (MLflow's ChatUsage fields)."""
    return {"usage": dict(reply.usage)} if reply.usage is not None else {}


def _check_context(body: Mapping[str, Any]) -> str | None:
    context = body.get("context")
    if context is not None and (
        not isinstance(context, dict) or set(context) - {"conversation_id", "user_id"}
    ):
        return "context must be {conversation_id: string, user_id: string}"
    custom = body.get("custom_inputs")
    if custom is not None and not isinstance(custom, dict):
        return "custom_inputs must be a map"
    return None


def _chat_texts(messages: Any) -> list[dict[str, Any]] | None:
    """ChatAgent request messages as texts; None when one breaks MLflow's ChatAgentMessage rules."""
    if not isinstance(messages, list) or not messages:
        return None
    texts = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in (
            "system",
            "user",
            "assistant",
            "tool",
        ):
            return None
        content = message.get("content")
        if not content and not message.get("tool_calls"):
            return None
        if message["role"] == "tool" and not (message.get("name") and message.get("tool_call_id")):
            return None
        if message["role"] != "tool" and content:
            texts.append({"role": message["role"], "content": content})
    return texts


def _mlflow_item(item: dict[str, Any]) -> dict[str, Any]:
    """MLflow's items: no status fields; messages with `text` first in the content part."""
    kept = {key: value for key, value in item.items() if key != "status"}
    if kept["type"] == "message":
        text = kept["content"][0]["text"]
        kept = {
            "type": "message",
            "id": kept["id"],
            "content": [{"text": text, "type": "output_text", "annotations": []}],
            "role": "assistant",
        }
    return kept


def _mlflow_response_events(output: list[dict[str, Any]], reply: Reply) -> list[Any]:
    """AgentServer's ResponsesAgent stream: data-only events, deltas before their message's done."""
    events: list[Any] = []
    for item in output:
        if item["type"] == "message":
            for piece in words(item["content"][0]["text"]):
                events.append({"type": "response.output_text.delta", "item_id": item["id"], "delta": piece})
            done = {"id": item["id"], "content": item["content"], "role": "assistant", "type": "message"}
            events.append({"type": "response.output_item.done", "item": done})
        else:
            events.append({"type": "response.output_item.done", "item": item})
    if reply.error is not None:
        events.append({"error": str(reply.error)})
    return [*events, "[DONE]"]


def _chat_chain(reply: Reply, number: int) -> list[dict[str, Any]]:
    """A ChatAgent's whole chain: assistant tool calls, tool results, then the answer."""
    chain: list[dict[str, Any]] = []
    if reply.tool_calls:
        calls = chat_tool_calls(reply, id_prefix=f"call_{number}_")
        chain.append({"role": "assistant", "content": "", "id": f"msg_a{number}", "tool_calls": calls})
        for index, (call, wire) in enumerate(zip(reply.tool_calls, calls, strict=True), start=1):
            chain.append(
                {
                    "role": "tool",
                    "content": tool_output(call),
                    "name": call["name"],
                    "id": f"msg_t{number}_{index}",
                    "tool_call_id": wire["id"],
                }
            )
    if reply.content is not None:
        chain.append({"role": "assistant", "content": reply.content, "id": f"msg_b{number}"})
    return chain


def _split_deltas(chain: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stream each message as deltas sharing its id: the answer's text arrives word by word."""
    deltas = []
    for message in chain:
        if message["role"] == "assistant" and message.get("content") and not message.get("tool_calls"):
            for position, piece in enumerate(words(message["content"])):
                delta = {"content": piece, "id": message["id"]}
                deltas.append({"role": "assistant", **delta} if position == 0 else delta)
        else:
            deltas.append(message)
    return deltas


# ---------------------------------------------------------------------------------------------------
# AppKit agent route: threads, appkit.metadata, Responses events with id/event/data frames.
# ---------------------------------------------------------------------------------------------------


class AppKitServer(ScriptedAgent):
    """`POST /api/agents/chat` of an AppKit app, framed exactly like the captured stream.

    Threads keep user and assistant texts. Errors as the app answers them: empty message 400, unknown
    agent 400, unknown thread 404 (JSON, not SSE). A Reply with `error` streams the model failure as
    AppKit does: `error`, `response.failed`, then an `error` frame with no `type`.
    """

    path = APPKIT_PATH
    protocol = "appkit"

    def __init__(self, agents: Sequence[str] = ("weather",)) -> None:
        super().__init__()
        self.agents = list(agents)
        self.threads: dict[str, list[dict[str, Any]]] = {}
        self.route("/api/agents/info", self._info, method="GET")

    def _info(self, request: Request) -> Any:
        return {"agents": self.agents, "defaultAgent": self.agents[0]}

    def read_turn(self, request: Request) -> Turn | Reply:
        body = request.json
        if not isinstance(body, dict) or not isinstance(body.get("message"), str) or not body["message"]:
            details = {"message": ["message must not be empty"]}
            return Reply(status=400, body={"error": "Invalid request", "details": details})
        agent = body.get("agent")
        if agent is not None and agent not in self.agents:
            return Reply(status=400, body={"error": f'Agent "{agent}" not found'})
        thread_id = body.get("threadId")
        with self._lock:
            if thread_id is not None and thread_id not in self.threads:
                return Reply(status=404, body={"error": f"Thread {thread_id} not found"})
            if thread_id is None:
                thread_id = str(uuid.uuid4())
                self.threads[thread_id] = []
            history = list(self.threads[thread_id])
        return Turn([*history, {"role": "user", "content": body["message"]}], body, thread=thread_id)

    def render(self, reply: Reply, turn: Turn) -> Reply:
        assert turn.thread is not None
        with self._lock:
            answer = {"role": "assistant", "content": reply.content or ""}
            self.threads[turn.thread] = [*turn.messages, answer]
        headers = {
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache, no-transform",
            "X-Accel-Buffering": "no",
        }
        return Reply(events=appkit_frames(turn.thread, reply, self.next_id()), headers=headers)


def appkit_frames(thread_id: str, reply: Reply, number: int) -> list[SSE]:
    """The events of one AppKit turn: each with an `id:`, an `event:` and one compact `data:` line."""
    frames: list[SSE] = []
    sequence = itertools.count()

    def frame(kind: str | None, data: dict[str, Any], event: str | None = None) -> None:
        payload = {"type": kind, **data, "sequence_number": next(sequence)} if kind else data
        compact = json.dumps(payload, separators=(",", ":"))
        frames.append(SSE(data=compact, event=event or kind, id=str(uuid.uuid4())))

    frame("appkit.metadata", {"data": {"threadId": thread_id}})
    index = 0
    for position, call in enumerate(reply.tool_calls, start=1):
        item = {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4()}",
            "call_id": call.get("id", f"call_{number}_{position}"),
            "name": call["name"],
            "arguments": tool_arguments(call),
        }
        frame("response.output_item.added", {"output_index": index, "item": item})
        frame("response.output_item.done", {"output_index": index, "item": item})
        index += 1
        result = {
            "type": "function_call_output",
            "id": f"fc_output_{uuid.uuid4()}",
            "call_id": item["call_id"],
            "output": tool_output(call),
        }
        frame("response.output_item.added", {"output_index": index, "item": result})
        frame("response.output_item.done", {"output_index": index, "item": result})
        index += 1
    if reply.content is not None:
        message_id = f"msg_{uuid.uuid4()}"
        shell = {
            "type": "message",
            "id": message_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        frame("response.output_item.added", {"output_index": index, "item": shell})
        for piece in words(reply.content):
            delta = {"item_id": message_id, "output_index": index, "content_index": 0, "delta": piece}
            frame("response.output_text.delta", delta)
        if reply.error is None:
            done = {
                **shell,
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.content}],
            }
            frame("response.output_item.done", {"output_index": index, "item": done})
    if reply.error is not None:
        frame("error", {"error": str(reply.error)})
        frame("response.failed", {"response": {}})
        frame(None, {"error": str(reply.error), "code": "UPSTREAM_ERROR"}, event="error")
    else:
        frame("response.completed", {"response": {}})
    return frames


# The literal captured AppKit turn (ids normalised), from research/protocol-captures.md.
CAPTURED_APPKIT_TURN = """\
id: 7b0e8c1e-0001-4000-8000-000000000001
event: appkit.metadata
data: {"type":"appkit.metadata","data":{"threadId":"thread-2"},"sequence_number":0}

id: 7b0e8c1e-0003-4000-8000-000000000003
event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_4","call_id":"call_get_weather_paris","name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"},"sequence_number":1}

id: 7b0e8c1e-0005-4000-8000-000000000005
event: response.output_item.done
data: {"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_4","call_id":"call_get_weather_paris","name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"},"sequence_number":2}

id: 7b0e8c1e-0006-4000-8000-000000000006
event: response.output_item.added
data: {"type":"response.output_item.added","output_index":1,"item":{"type":"function_call_output","id":"fc_output_7","call_id":"call_get_weather_paris","output":"{\\"city\\":\\"Paris\\",\\"condition\\":\\"Sunny\\",\\"tempC\\":22}"},"sequence_number":3}

id: 7b0e8c1e-0008-4000-8000-000000000008
event: response.output_item.done
data: {"type":"response.output_item.done","output_index":1,"item":{"type":"function_call_output","id":"fc_output_7","call_id":"call_get_weather_paris","output":"{\\"city\\":\\"Paris\\",\\"condition\\":\\"Sunny\\",\\"tempC\\":22}"},"sequence_number":4}

id: 7b0e8c1e-0009-4000-8000-000000000009
event: response.output_item.added
data: {"type":"response.output_item.added","output_index":2,"item":{"type":"message","id":"msg_10","status":"in_progress","role":"assistant","content":[]},"sequence_number":5}

id: 7b0e8c1e-0011-4000-8000-000000000011
event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_10","output_index":2,"content_index":0,"delta":"It ","sequence_number":6}

id: 7b0e8c1e-0012-4000-8000-000000000012
event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_10","output_index":2,"content_index":0,"delta":"is ","sequence_number":7}

id: 7b0e8c1e-0013-4000-8000-000000000013
event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_10","output_index":2,"content_index":0,"delta":"Sunny ","sequence_number":8}

id: 7b0e8c1e-0014-4000-8000-000000000014
event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_10","output_index":2,"content_index":0,"delta":"in ","sequence_number":9}

id: 7b0e8c1e-0015-4000-8000-000000000015
event: response.output_text.delta
data: {"type":"response.output_text.delta","item_id":"msg_10","output_index":2,"content_index":0,"delta":"Paris.","sequence_number":10}

id: 7b0e8c1e-0016-4000-8000-000000000016
event: response.output_item.done
data: {"type":"response.output_item.done","output_index":2,"item":{"type":"message","id":"msg_10","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is Sunny in Paris."}]},"sequence_number":11}

id: 7b0e8c1e-0017-4000-8000-000000000017
event: response.completed
data: {"type":"response.completed","sequence_number":12,"response":{}}

"""  # noqa: E501

# The literal AgentServer ResponsesAgent stream (protocol-captures.md, "agent-responses").
CAPTURED_MLFLOW_RESPONSES_STREAM = """\
data: {"type": "response.output_item.done", "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}"}}

data: {"type": "response.output_item.done", "item": {"type": "function_call_output", "call_id": "call_1", "output": "{\\"city\\": \\"Paris\\", \\"condition\\": \\"Sunny\\"}"}}

data: {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "It "}

data: {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "is "}

data: {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Sunny "}

data: {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "in "}

data: {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Paris"}

data: {"type": "response.output_item.done", "item": {"id": "msg_1", "content": [{"text": "It is Sunny in Paris", "type": "output_text", "annotations": []}], "role": "assistant", "type": "message"}}

data: [DONE]

"""  # noqa: E501

# The literal AgentServer ChatAgent stream (protocol-captures.md, "agent-chat").
CAPTURED_MLFLOW_CHAT_STREAM = """\
data: {"delta": {"role": "assistant", "content": "", "id": "msg_a1", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}"}}]}}

data: {"delta": {"role": "tool", "content": "{\\"city\\": \\"Paris\\", \\"condition\\": \\"Sunny\\"}", "name": "get_weather", "id": "msg_t1", "tool_call_id": "call_1"}}

data: {"delta": {"role": "assistant", "content": "It is Sunny in Paris", "id": "msg_a2"}}

data: [DONE]

"""  # noqa: E501


def sse_reply(text: str) -> Reply:
    """A literal SSE body, sent as is with the event-stream content type."""
    return Reply(body=text.encode(), headers={"Content-Type": "text/event-stream; charset=utf-8"})


# ---------------------------------------------------------------------------------------------------
# Driving an adapter.
# ---------------------------------------------------------------------------------------------------


def endpoint_config(endpoint: Mapping[str, Any], name: str = "agent", **overrides: Any) -> Any:
    """An EndpointConfig for an endpoint mapping (protocol, url, options...), as the project builds it."""
    from specengine.plan import EndpointConfig
    from specengine.source.project import ENDPOINT_FIELDS

    data = {**endpoint, **overrides}
    return EndpointConfig(
        name=name,
        protocol=data["protocol"],
        url=data.get("url"),
        model=data.get("model"),
        headers=dict(data.get("headers") or {}),
        timeout=float(data.get("timeout", 5.0)),
        options={key: value for key, value in data.items() if key not in ENDPOINT_FIELDS},
    )


def converse(
    endpoint: Mapping[str, Any] | Any,
    messages: Sequence[str],
    variables: Mapping[str, Any] | None = None,
    conversations: int = 1,
    on_adapter: Callable[[Any], None] | None = None,
) -> list[list[Any]]:
    """Send `messages` in `conversations` conversations, one after another, on one adapter.

    Returns the turns of each conversation. An EndpointError ends the call (it propagates).
    """
    from specengine.endpoints import adapter_class

    config = endpoint if not isinstance(endpoint, Mapping) else endpoint_config(endpoint)

    async def run() -> list[list[Any]]:
        import httpx

        async with httpx.AsyncClient() as client:
            adapter = adapter_class(config.protocol)(config, client)
            if on_adapter is not None:
                on_adapter(adapter)
            results = []
            for _ in range(conversations):
                conversation = (
                    adapter.conversation(variables) if variables is not None else adapter.conversation()
                )
                results.append([await conversation.send(message) for message in messages])
            return results

    return asyncio.run(run())


def talk(
    endpoint: Mapping[str, Any] | Any, *messages: str, variables: Mapping[str, Any] | None = None
) -> list[Any]:
    """The turns of one conversation that sends `messages`."""
    return converse(endpoint, messages, variables)[0]


__all__ = [
    "APPKIT_PATH",
    "CAPTURED_APPKIT_TURN",
    "CAPTURED_MLFLOW_CHAT_STREAM",
    "CAPTURED_MLFLOW_RESPONSES_STREAM",
    "AppKitServer",
    "DatabricksServer",
    "Reply",
    "ResponsesServer",
    "converse",
    "endpoint_config",
    "sse_reply",
    "talk",
]
