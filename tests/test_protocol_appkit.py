"""The appkit adapter against a scripted AppKit agent route framed like the captured stream: the
threadId round trip, tool calls, the model-failure sequence, and the route's JSON errors."""

from __future__ import annotations

import pytest
from support.protocol_servers import CAPTURED_APPKIT_TURN, AppKitServer, Reply, converse, sse_reply, talk

from specengine.errors import EndpointError


@pytest.fixture
def server():
    with AppKitServer(agents=("weather", "support")) as server:
        yield server


def test_captured_turn_is_read_exactly(server):
    server.script([sse_reply(CAPTURED_APPKIT_TURN)])
    [turn] = talk(server.endpoint(), "What is the weather in Paris?")
    assert turn.reply == "It is Sunny in Paris."
    assert [(call.name, call.args, call.id) for call in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "call_get_weather_paris")
    ]
    assert turn.session_id == "thread-2"
    assert turn.error is None
    assert turn.ttft_s is not None
    assert server.bodies[0] == {"message": "What is the weather in Paris?"}


def test_thread_id_from_metadata_is_sent_back_and_is_the_session(server):
    server.script(lambda messages: f"{len(messages)} messages; last: {messages[-1]['content']}")
    turns = talk(server.endpoint(agent="support"), "Book a table", "For 4", "At 8pm")
    assert [turn.reply for turn in turns] == [
        "1 messages; last: Book a table",
        "3 messages; last: For 4",
        "5 messages; last: At 8pm",
    ]
    thread = turns[0].session_id
    assert thread in server.threads
    assert [turn.session_id for turn in turns] == [thread] * 3
    assert server.bodies[0] == {"message": "Book a table", "agent": "support"}
    assert server.bodies[1] == {"message": "For 4", "agent": "support", "threadId": thread}


def test_new_conversations_open_new_threads(server):
    results = converse(server.endpoint(), ["hi", "again"], conversations=2)
    assert results[0][0].session_id != results[1][0].session_id
    assert ["threadId" in body for body in server.bodies] == [False, True, False, True]


def test_tool_calls_with_parsed_arguments(server):
    calls = [
        {"name": "get_weather", "args": {"city": "Oslo"}, "output": {"tempC": 3}},
        {"name": "get_time", "args": {"zone": "CET", "precise": True}},
    ]
    server.script([Reply(content="Cold in Oslo", tool_calls=calls)])
    [turn] = talk(server.endpoint(), "weather and time")
    assert [(call.name, call.args) for call in turn.tool_calls] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_time", {"zone": "CET", "precise": True}),
    ]
    assert turn.reply == "Cold in Oslo"


def test_model_failure_is_a_turn_error_with_the_text_so_far(server):
    server.script([Reply(content="It is", error="scripted model failure")])
    [turn] = talk(server.endpoint(), "weather?")
    assert turn.error == "scripted model failure"
    assert turn.reply == "It is"


def test_model_failure_before_any_text(server):
    server.script([Reply(error="scripted model failure")])
    [turn] = talk(server.endpoint(), "weather?")
    assert (turn.reply, turn.error) == ("", "scripted model failure")
    assert turn.session_id is not None


@pytest.mark.parametrize(
    "frames",
    [
        pytest.param(
            'event: appkit.metadata\ndata: {"type":"appkit.metadata","data":{"threadId":"t1"}}\n\n'
            'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"m",'
            '"delta":"draft"}\n\n'
            'event: response.output_item.done\ndata: {"type":"response.output_item.done",'
            '"item":{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}}'
            "\n\n"
            'event: response.completed\ndata: {"type":"response.completed","response":{}}\n\n',
            id="final-message-item-replaces-the-deltas",
        ),
        pytest.param(
            ": keep-alive\n\n"
            'event: appkit.metadata\ndata: {"type":"appkit.metadata","data":{"threadId":"t1"}}\n\n'
            'data: {"type":"response.output_text.delta","item_id":"m","delta":"Hi"}\n\n'
            "data: [DONE]\n\n",
            id="heartbeat-comments-and-done-marker-are-ignored",
        ),
    ],
)
def test_streams_are_read_to_their_final_text(frames):
    with AppKitServer() as server:
        server.script([sse_reply(frames)])
        [turn] = talk(server.endpoint(), "hi")
        assert (turn.reply, turn.session_id, turn.error) == ("Hi", "t1", None)


@pytest.mark.parametrize(
    ("endpoint_extra", "messages", "status"),
    [
        ({"agent": "nobody"}, ["hi"], 400),
        ({}, [""], 400),
    ],
)
def test_route_errors_are_endpoint_errors(server, endpoint_extra, messages, status):
    with pytest.raises(EndpointError) as caught:
        talk(server.endpoint(**endpoint_extra), *messages)
    assert caught.value.status == status
    assert not caught.value.retryable


def test_unknown_thread_is_a_404(server):
    ghost = 'event: appkit.metadata\ndata: {"type":"appkit.metadata","data":{"threadId":"nope"}}\n\n'
    server.script([sse_reply(ghost)])  # a thread id the app does not hold
    with pytest.raises(EndpointError) as caught:
        talk(server.endpoint(), "one", "two")
    assert caught.value.status == 404
    assert "Thread nope not found" in caught.value.message
    assert server.bodies[1]["threadId"] == "nope"


def test_too_many_streams_is_retryable_with_retry_after(server):
    server.script(
        [Reply(status=429, headers={"Retry-After": "5"}, body={"error": "Too many concurrent streams"})]
    )
    with pytest.raises(EndpointError) as caught:
        talk(server.endpoint(), "hi")
    assert caught.value.retryable
    assert caught.value.retry_after == 5.0


def test_stream_with_bad_json_is_an_endpoint_error(server):
    server.script([sse_reply("event: response.output_text.delta\ndata: {broken\n\n")])
    with pytest.raises(EndpointError, match="not JSON"):
        talk(server.endpoint(), "hi")


def test_empty_stream_is_an_endpoint_error(server):
    server.script([sse_reply(": nothing but a comment\n\n")])
    with pytest.raises(EndpointError, match="empty event stream"):
        talk(server.endpoint(), "hi")
