"""The openai-responses adapter against a scripted Responses server: JSON and SSE, multi-turn by
previous_response_id, tool calls, errors reported in the answer, and transport faults."""

from __future__ import annotations

import pytest
from support.protocol_servers import Reply, ResponsesServer, converse, talk

from specengine.errors import EndpointError

WEATHER = Reply(
    content="It is Sunny in Paris.",
    tool_calls=[
        {"name": "get_weather", "args": {"city": "Paris", "days": 2}, "output": {"condition": "Sunny"}}
    ],
)


@pytest.fixture
def server():
    with ResponsesServer() as server:
        yield server


@pytest.mark.parametrize("stream", [False, True])
def test_reply_and_tool_calls_with_parsed_arguments(server, stream):
    server.script({"Weather in Paris?": WEATHER})
    [turn] = talk(server.endpoint(stream=stream), "Weather in Paris?")
    assert turn.reply == "It is Sunny in Paris."
    assert [(call.name, call.args, call.id) for call in turn.tool_calls] == [
        ("get_weather", {"city": "Paris", "days": 2}, "call_1_1")
    ]
    assert turn.error is None
    assert turn.session_id == "resp_1"
    assert turn.usage == {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}
    assert server.bodies[0]["input"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert server.bodies[0]["model"] == "agent"
    assert server.bodies[0].get("stream", False) is stream
    assert (turn.ttft_s is not None) is stream


@pytest.mark.parametrize("stream", [False, True])
def test_conversation_continues_with_previous_response_id_and_only_new_input(server, stream):
    server.script(lambda messages: f"{len(messages)} messages so far, last: {messages[-1]['content']}")
    turns = talk(server.endpoint(stream=stream), "Book a table", "For 4 people", "At 8pm")
    assert [turn.reply for turn in turns] == [
        "1 messages so far, last: Book a table",
        "3 messages so far, last: For 4 people",
        "5 messages so far, last: At 8pm",
    ]
    assert [turn.session_id for turn in turns] == ["resp_1", "resp_2", "resp_3"]
    assert "previous_response_id" not in server.bodies[0]
    assert server.bodies[1]["previous_response_id"] == "resp_1"
    assert server.bodies[2]["previous_response_id"] == "resp_2"
    assert server.bodies[2]["input"] == [{"role": "user", "content": "At 8pm"}]


def test_a_new_conversation_starts_without_previous_response_id(server):
    converse(server.endpoint(), ["one", "two"], conversations=2)
    assert ["previous_response_id" in body for body in server.bodies] == [False, True, False, True]


def test_server_without_response_ids_gets_the_whole_history():
    with ResponsesServer(with_ids=False) as server:
        server.script({"Book a table": Reply(content="For how many people?")})
        turns = talk(server.endpoint(), "Book a table", "4 people")
        assert turns[0].session_id is None
        assert "previous_response_id" not in server.bodies[1]
        assert server.bodies[1]["input"] == [
            {"role": "user", "content": "Book a table"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "For how many people?", "annotations": []}],
            },
            {"role": "user", "content": "4 people"},
        ]
        assert turns[1].reply == "You said: 4 people"


@pytest.mark.parametrize("stream", [False, True])
def test_error_in_the_answer_is_a_turn_error_with_the_text_so_far(server, stream):
    server.script([Reply(content="Partial answer", error="model overloaded")])
    [turn] = talk(server.endpoint(stream=stream), "hi")
    assert turn.error is not None and "model overloaded" in turn.error
    assert turn.reply == "Partial answer"


def test_streamed_error_before_any_text_leaves_an_empty_reply(server):
    server.script([Reply(error="upstream failed")])
    [turn] = talk(server.endpoint(stream=True), "hi")
    assert turn.reply == ""
    assert "upstream failed" in turn.error


def test_streamed_text_deltas_without_done_items_still_make_the_reply(server):
    events = [
        ("response.created", {"type": "response.created", "response": {"id": "resp_x", "output": []}}),
        (
            "response.output_text.delta",
            {"type": "response.output_text.delta", "item_id": "m", "delta": "Hel"},
        ),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m", "delta": "lo"}),
        ("response.completed", {"type": "response.completed", "response": {"id": "resp_x"}}),
    ]
    server.script([Reply(events=events)])
    [turn] = talk(server.endpoint(stream=True), "hi")
    assert (turn.reply, turn.session_id, turn.error) == ("Hello", "resp_x", None)


def test_stream_request_answered_with_json_is_read_as_json(server):
    server.script([Reply(content="plain", stream=False)])
    [turn] = talk(server.endpoint(stream=True), "hi")
    assert turn.reply == "plain"
    assert turn.session_id == "resp_1"


def test_several_message_items_are_concatenated(server):
    body = {
        "id": "resp_9",
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One. "}]},
            {"type": "reasoning", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two."}]},
        ],
    }
    server.script([Reply(body=body)])
    [turn] = talk(server.endpoint(), "hi")
    assert turn.reply == "One. Two."


def test_bad_arguments_json_is_noted_on_the_call(server):
    server.script([Reply(content="ok", tool_calls=[{"name": "f", "arguments": "{not json"}])])
    [turn] = talk(server.endpoint(), "hi")
    assert turn.tool_calls[0].args == {}
    assert "not valid JSON" in turn.tool_calls[0].note


@pytest.mark.parametrize(
    ("reply", "kind", "retryable"),
    [
        (Reply(status=503), "HTTPStatusError", True),
        (Reply(status=400, body={"error": {"message": "bad model"}}), "HTTPStatusError", False),
        (Reply(body="<html>not json</html>"), "InvalidJSON", False),
        (Reply(body={"id": "resp_1", "object": "response"}), "InvalidResponse", False),
        (Reply(drop=True), "RemoteProtocolError", True),
    ],
)
def test_transport_faults_are_endpoint_errors(server, reply, kind, retryable):
    server.script([reply])
    with pytest.raises(EndpointError) as caught:
        talk(server.endpoint(), "hi")
    assert caught.value.kind == kind
    assert caught.value.retryable is retryable


def test_stream_with_a_non_json_event_is_an_endpoint_error(server):
    server.script([Reply(events=["not json at all"])])
    with pytest.raises(EndpointError, match="not JSON"):
        talk(server.endpoint(stream=True), "hi")


def test_unknown_previous_response_id_is_a_client_error(server):
    message = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    server.script([Reply(body={"id": "resp_unknown", "output": [message]})])  # never stored
    with pytest.raises(EndpointError) as caught:
        talk(server.endpoint(), "one", "two")
    assert caught.value.status == 404
    assert "not found" in caught.value.message


def test_extra_body_is_sent_but_cannot_replace_the_input(server):
    endpoint = server.endpoint(extra_body={"instructions": "Be brief.", "input": "ignored", "temperature": 0})
    talk(endpoint, "hi")
    body = server.bodies[0]
    assert body["instructions"] == "Be brief."
    assert body["temperature"] == 0
    assert body["input"] == [{"role": "user", "content": "hi"}]
