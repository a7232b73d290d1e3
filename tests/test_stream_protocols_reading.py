"""What the ag-ui and ai-sdk adapters read from answers the live agents of
tests/test_protocol_ag_ui.py and tests/test_protocol_ai_sdk.py do not give on demand (chunk
events, patches, snapshots, dynamic tools, input errors, broken streams), and exactly what a
follow-up turn sends back, against scripted streams."""

from __future__ import annotations

import json

import pytest
from support.protocol_servers import sse_reply, talk
from support.servers import Reply, ScriptedHTTPServer

from specengine.errors import EndpointError


def sse(*events) -> Reply:
    return sse_reply("".join(f"data: {json.dumps(event)}\n\n" for event in events))


@pytest.fixture(scope="module")
def server():
    with ScriptedHTTPServer() as started:
        yield started


def turns(server, protocol: str, answers: list[Reply], *messages: str):
    server.route("/agent", lambda request, queue=list(answers): queue.pop(0))
    server.clear()
    return talk({"protocol": protocol, "url": server.url_for("/agent")}, *messages)


AG_UI_FIRST = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "Looking "},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "it up."},
    {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": "c1",
        "toolCallName": "lookup",
        "parentMessageId": "m1",
        "delta": '{"id"',
    },
    {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "delta": ": 7}"},
    {"type": "TOOL_CALL_RESULT", "messageId": "m2", "toolCallId": "c1", "content": "found"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"cart": {"items": []}}},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/cart/items/-", "value": "pen"}]},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def test_ag_ui_chunk_events_patches_and_what_the_next_run_sends_back(server):
    second = sse(
        {"type": "TEXT_MESSAGE_START", "messageId": "m3"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "ok"},
    )
    first, later = turns(server, "ag-ui", [sse(*AG_UI_FIRST), second], "find 7", "thanks")
    assert first.reply == "Looking it up."
    assert [(call.name, call.args, call.result) for call in first.tool_calls] == [
        ("lookup", {"id": 7}, "found")
    ]
    assert first.state == later.state == {"cart": {"items": ["pen"]}}
    assert later.reply == "ok"
    sent = [request.json for request in server.requests_to("/agent")]
    assert sent[0]["threadId"] == sent[1]["threadId"] and sent[0]["runId"] != sent[1]["runId"]
    user, assistant, tool, user_again = sent[1]["messages"]
    assert (user["role"], user["content"], user_again["content"]) == ("user", "find 7", "thanks")
    assert assistant == {
        "id": "m1",
        "role": "assistant",
        "content": "Looking it up.",
        "toolCalls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"id": 7}'}}
        ],
    }
    assert tool == {"id": "m2", "role": "tool", "toolCallId": "c1", "content": "found"}
    assert sent[1]["state"] == {"cart": {"items": ["pen"]}}


def test_ag_ui_messages_snapshot_becomes_the_conversation_sent_back(server):
    snapshot = [
        {"id": "x1", "role": "user", "content": "hi"},
        {"id": "x2", "role": "assistant", "content": "Hello."},
    ]
    first = sse(
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x2", "delta": "Hello."},
        {"type": "MESSAGES_SNAPSHOT", "messages": snapshot},
        {"type": "RUN_FINISHED"},
    )
    (one, _) = turns(server, "ag-ui", [first, sse({"type": "RUN_FINISHED"})], "hi", "again")
    assert one.reply == "Hello." and one.state is None
    assert server.requests_to("/agent")[1].json["messages"][:2] == snapshot


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (
            sse({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/nope", "value": 1}]}),
            "a STATE_DELTA does not apply",
        ),
        (Reply(body={"messages": []}), "expected an AG-UI event stream, got one JSON body"),
        (sse_reply(": nothing but a comment\n\n"), "the agent's event stream ended without a single event"),
        (sse_reply("data: not json\n\n"), "a stream event is not JSON: 'not json'"),
    ],
)
def test_ag_ui_answers_that_cannot_be_read_error_the_turn_with_the_reason(server, answer, words):
    with pytest.raises(EndpointError) as raised:
        turns(server, "ag-ui", [answer], "hi")
    assert words in raised.value.message


def test_ag_ui_a_plain_text_error_event_fails_the_turn(server):
    (turn,) = turns(server, "ag-ui", [sse_reply("event: error\ndata: overloaded\n\n")], "hi")
    assert turn.error == "overloaded"


AI_SDK_FIRST = [
    {"type": "start", "messageId": "a1"},
    {"type": "tool-input-start", "toolCallId": "d1", "toolName": "search", "dynamic": True},
    {"type": "tool-input-delta", "toolCallId": "d1", "inputTextDelta": '{"q": '},
    {"type": "tool-input-delta", "toolCallId": "d1", "inputTextDelta": '"pens"}'},
    {"type": "tool-output-error", "toolCallId": "d1", "errorText": "search is down"},
    {
        "type": "tool-input-error",
        "toolCallId": "b1",
        "toolName": "buy",
        "input": {"n": "x"},
        "errorText": "n must be a number",
    },
    {"type": "text-delta", "id": "t", "delta": "Sorry."},
    {"type": "finish"},
]


def test_ai_sdk_dynamic_tools_input_errors_and_what_the_next_turn_sends_back(server):
    first, _ = turns(server, "ai-sdk", [sse(*AI_SDK_FIRST), sse({"type": "abort"})], "find pens", "again")
    assert first.reply == "Sorry."
    assert [(call.name, call.args, call.result) for call in first.tool_calls] == [
        ("search", {"q": "pens"}, "search is down"),
        ("buy", {"n": "x"}, "n must be a number"),
    ]
    sent = [request.json for request in server.requests_to("/agent")]
    assert sent[0]["id"] == sent[1]["id"] and sent[1]["trigger"] == "submit-message"
    assistant = sent[1]["messages"][1]
    assert assistant == {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "dynamic-tool",
                "toolName": "search",
                "toolCallId": "d1",
                "state": "output-error",
                "errorText": "search is down",
                "input": {"q": "pens"},
            },
            {
                "type": "tool-buy",
                "toolCallId": "b1",
                "state": "output-error",
                "input": {"n": "x"},
                "errorText": "n must be a number",
            },
            {"type": "text", "text": "Sorry.", "state": "done"},
        ],
    }


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            sse(
                {"type": "text-delta", "id": "t", "delta": "Hal"},
                {"type": "error", "errorText": "rate limited"},
            ),
            "rate limited",
        ),
        (sse_reply('data: {"type":"start"}\n\nevent: error\ndata: upstream closed\n\n'), "upstream closed"),
    ],
)
def test_ai_sdk_an_error_in_the_stream_fails_the_turn_with_what_was_read(server, answer, error):
    (turn,) = turns(server, "ai-sdk", [answer], "hi")
    assert turn.error == error


def test_ai_sdk_an_answer_without_chunks_is_an_error(server):
    with pytest.raises(EndpointError) as raised:
        turns(server, "ai-sdk", [sse_reply("data: [DONE]\n\n")], "hi")
    assert raised.value.message == "the UI message stream ended without a single chunk"
