"""The databricks adapter against scripted MLflow servers (the scoring server and the streaming
AgentServer), for ResponsesAgent and ChatAgent: history replay, sessions, tool calls, the `auto`
switch to `messages`, streamed errors, and transport faults."""

from __future__ import annotations

import uuid

import pytest
from support.protocol_servers import (
    CAPTURED_MLFLOW_CHAT_STREAM,
    CAPTURED_MLFLOW_RESPONSES_STREAM,
    DatabricksServer,
    Reply,
    converse,
    sse_reply,
    talk,
)

from specengine.errors import EndpointError

WEATHER = Reply(
    content="It is Sunny in Paris",
    tool_calls=[{"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}, "output": {"ok": 1}}],
)


def booking(messages):
    """The captured booking agent: asks for the party size, then books when it is given."""
    if len(messages) == 1:
        return "For how many people?"
    return Reply(
        content="Booked a table for 4",
        tool_calls=[
            {"name": "book_table", "args": {"party_size": 4, "time": "20:00"}, "output": {"ok": True}}
        ],
    )


@pytest.fixture(params=[("responses", False), ("responses", True), ("chat", False), ("chat", True)])
def server(request):
    kind, streaming = request.param
    with DatabricksServer(kind, streaming=streaming) as server:
        yield server


def api_for(server):
    return server.kind


def test_reply_tool_calls_and_session(server):
    server.script({"What's the weather in Paris?": WEATHER})
    [turn] = talk(server.endpoint(api=server.kind, stream=server.streaming), "What's the weather in Paris?")
    assert turn.reply == "It is Sunny in Paris"
    assert [(call.name, call.args) for call in turn.tool_calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"})
    ]
    assert turn.error is None
    uuid.UUID(turn.session_id)
    body = server.bodies[0]
    assert body["context"] == {"conversation_id": turn.session_id, "user_id": "specengine"}
    assert body["custom_inputs"] == {"thread_id": turn.session_id}
    assert (turn.ttft_s is not None) is server.streaming


def test_history_is_replayed_every_turn_and_accepted(server):
    server.script(booking)
    turns = talk(
        server.endpoint(api=server.kind, stream=server.streaming), "Please book a table", "4 people at 8pm"
    )
    assert [turn.reply for turn in turns] == ["For how many people?", "Booked a table for 4"]
    assert turns[1].tool_calls[0].args == {"party_size": 4, "time": "20:00"}
    assert turns[0].session_id == turns[1].session_id
    second = server.bodies[1]["input" if server.kind == "responses" else "messages"]
    assert second[0] == {"role": "user", "content": "Please book a table"}
    assert second[-1] == {"role": "user", "content": "4 people at 8pm"}
    if server.kind == "responses":
        assert second[1]["type"] == "message"
        assert second[1]["content"][0]["text"] == "For how many people?"
    else:
        assert second[1]["role"] == "assistant" and second[1]["content"] == "For how many people?"
        assert second[1]["id"]


def test_third_turn_replays_tool_calls_with_their_results(server):
    server.script([WEATHER, "ok", "ok"])
    talk(server.endpoint(api=server.kind), "weather?", "thanks", "bye")
    third = server.bodies[2]["input" if server.kind == "responses" else "messages"]
    if server.kind == "responses":
        kinds = [item.get("type", "message") for item in third]
        assert kinds == [
            "message",
            "function_call",
            "function_call_output",
            "message",
            "message",
            "message",
            "message",
        ]
        call, output = third[1], third[2]
        assert call["call_id"] == output["call_id"]
    else:
        roles = [message["role"] for message in third]
        assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "user"]
        assert third[1]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert third[2]["tool_call_id"] == third[1]["tool_calls"][0]["id"]


def test_each_conversation_has_its_own_session(server):
    results = converse(server.endpoint(api=server.kind), ["hi"], conversations=2)
    first, second = results[0][0].session_id, results[1][0].session_id
    assert first != second
    assert [body["custom_inputs"]["thread_id"] for body in server.bodies] == [first, second]


def test_system_prompt_comes_first(server):
    talk(server.endpoint(api=server.kind, system="You are terse."), "hi")
    field = "input" if server.kind == "responses" else "messages"
    assert server.bodies[0][field][0] == {"role": "system", "content": "You are terse."}


def test_streamed_error_is_a_turn_error():
    with DatabricksServer("responses", streaming=True) as server:
        server.script([Reply(content="Partly", error="model exploded")])
        [turn] = talk(server.endpoint(api="responses", stream=True), "hi")
        assert turn.reply == "Partly"
        assert turn.error == "model exploded"
    with DatabricksServer("chat", streaming=True) as server:
        server.script([Reply(content="Partly", error="model exploded")])
        [turn] = talk(server.endpoint(api="chat", stream=True), "hi")
        assert turn.reply == "Partly"
        assert turn.error == "model exploded"


def test_model_error_on_the_scoring_server_is_a_retryable_fault():
    with DatabricksServer("responses") as server:
        server.script([Reply(error="boom")])
        with pytest.raises(EndpointError) as caught:
            talk(server.endpoint(api="responses"), "hi")
        assert caught.value.status == 500 and caught.value.retryable


@pytest.mark.parametrize("streaming", [False, True])
def test_auto_switches_to_messages_once_and_remembers_it(streaming):
    with DatabricksServer("chat", streaming=streaming) as server:
        server.script(booking)
        adapters = []
        results = converse(
            server.endpoint(stream=streaming),
            ["Please book a table", "4 people"],
            conversations=2,
            on_adapter=adapters.append,
        )
        assert [turn.reply for turn in results[0]] == ["For how many people?", "Booked a table for 4"]
        shapes = ["input" if "input" in body else "messages" for body in server.bodies]
        # the first request is refused (400 scoring server / 500 AgentServer), then messages only
        assert shapes == ["input", "messages", "messages", "messages", "messages"]
        assert adapters[0].shape == "chat"
        assert server.bodies[1]["messages"] == [{"role": "user", "content": "Please book a table"}]


def test_auto_keeps_input_for_a_responses_agent():
    with DatabricksServer("responses") as server:
        talk(server.endpoint(), "one", "two")
        assert all("input" in body for body in server.bodies)
        assert server.hits() == 2


def test_auto_does_not_switch_on_a_400_that_only_echoes_the_word_messages():
    with DatabricksServer("responses") as server:
        echo = "Failed to predict data '{'input': [{'role': 'user', 'content': 'show my messages'}]}'"
        server.script([Reply(status=400, body={"error_code": "BAD_REQUEST", "message": echo})])
        with pytest.raises(EndpointError) as caught:
            talk(server.endpoint(), "show my messages")
        assert caught.value.status == 400
        assert server.hits() == 1


def test_api_chat_against_a_responses_agent_is_a_plain_400():
    with DatabricksServer("responses") as server:
        with pytest.raises(EndpointError) as caught:
            talk(server.endpoint(api="chat"), "hi")
        assert caught.value.status == 400 and not caught.value.retryable
        assert server.hits() == 1


def test_switch_fails_cleanly_when_messages_are_refused_too():
    with DatabricksServer("responses") as server:  # refuses `messages` with its own 400
        refused = Reply(
            status=400, body={"error_code": "BAD_REQUEST", "message": "missing inputs ['messages']"}
        )
        server.script([refused])
        with pytest.raises(EndpointError) as caught:
            talk(server.endpoint(), "hi")
        assert caught.value.status == 400 and "Failed to predict" in caught.value.message
        assert ["input" in body for body in server.bodies] == [True, False]


@pytest.mark.parametrize(
    ("api", "capture"),
    [("responses", CAPTURED_MLFLOW_RESPONSES_STREAM), ("chat", CAPTURED_MLFLOW_CHAT_STREAM)],
)
def test_captured_agent_server_stream_is_read_exactly(api, capture):
    with DatabricksServer(api, streaming=True) as server:
        server.script([sse_reply(capture)])
        [turn] = talk(server.endpoint(api=api, stream=True), "What's the weather in Paris?")
        assert turn.reply == "It is Sunny in Paris"
        assert [(call.name, call.args, call.id) for call in turn.tool_calls] == [
            ("get_weather", {"city": "Paris", "unit": "celsius"}, "call_1")
        ]
        assert turn.error is None


def _message_item(item_id: str, text: str) -> dict:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


@pytest.mark.parametrize(
    ("api", "body", "reply"),
    [
        pytest.param(
            "chat",
            {
                "messages": [
                    {"role": "assistant", "content": "Let me check.", "id": "a"},
                    {"role": "assistant", "content": "", "id": "b", "tool_calls": []},
                    {"role": "assistant", "content": "It is Sunny.", "id": "c"},
                ]
            },
            "Let me check.\nIt is Sunny.",
            id="chat-messages",
        ),
        pytest.param(
            "responses",
            {
                "object": "response",
                "output": [_message_item("m1", "A"), _message_item("m2", ""), _message_item("m3", "B")],
            },
            "A\nB",
            id="responses-items",
        ),
    ],
)
def test_reply_joins_assistant_texts_with_newlines_and_skips_empty_ones(api, body, reply):
    with DatabricksServer(api) as server:
        server.script([Reply(body=body)])
        [turn] = talk(server.endpoint(api=api), "hi")
        assert turn.reply == reply


@pytest.mark.parametrize(
    ("api", "body", "kind"),
    [
        ("responses", {"object": "response"}, "InvalidResponse"),
        ("chat", {"choices": []}, "InvalidResponse"),
        ("chat", "not json", "InvalidJSON"),
    ],
)
def test_unusable_bodies_are_endpoint_errors(api, body, kind):
    with DatabricksServer(api) as server:
        server.script([Reply(body=body)])
        with pytest.raises(EndpointError) as caught:
            talk(server.endpoint(api=api), "hi")
        assert caught.value.kind == kind


def test_auto_switch_holds_for_conversations_already_in_flight():
    """Two conversations send `input` at once; both are refused, both end up on `messages`."""
    import asyncio
    import threading

    import httpx
    from support.protocol_servers import endpoint_config

    from specengine.endpoints.databricks import DatabricksAdapter

    with DatabricksServer("chat") as server:
        server.script(lambda messages: "ok " + messages[-1]["content"])
        both_sent = threading.Barrier(2, timeout=5)
        invoke = server.answer_request

        def refuse_together(request):
            if "input" in (request.json or {}):
                both_sent.wait()  # neither is refused before both have been sent as `input`
            return invoke(request)

        server.route("/invocations", refuse_together)

        async def run():
            async with httpx.AsyncClient() as client:
                adapter = DatabricksAdapter(endpoint_config(server.endpoint()), client)
                first, second = adapter.conversation(), adapter.conversation()
                return await asyncio.gather(first.send("one"), second.send("two"))

        turns = asyncio.run(run())
        assert [turn.reply for turn in turns] == ["ok one", "ok two"]
        assert sorted("input" in body for body in server.bodies) == [False, False, True, True]
