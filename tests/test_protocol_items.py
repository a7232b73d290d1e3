"""Reading Responses output items and stream events (shared by openai-responses, databricks and
appkit): error shapes, argument deltas, the completed response, and what is replayed as history."""

from __future__ import annotations

import json
import time

import pytest
from support.protocol_servers import CAPTURED_APPKIT_TURN

from specengine.endpoints.base import error_text
from specengine.endpoints.responses_items import (
    ResponsesStream,
    parse_response,
    replay_items,
)
from specengine.errors import EndpointError


def fold(events, separator=""):
    stream = ResponsesStream(time.perf_counter(), separator)
    for event in events:
        name, data = event if isinstance(event, tuple) else ("message", event)
        if stream.feed(name, data if isinstance(data, str) else json.dumps(data)):
            break
    return stream


def frames(text):
    """(event, data) pairs of an SSE text."""
    pairs = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        pairs.append((fields.get("event", "message"), fields["data"]))
    return pairs


def test_captured_appkit_stream_folds_to_the_turn():
    output = fold(frames(CAPTURED_APPKIT_TURN)).output()
    assert output.reply == "It is Sunny in Paris."
    assert [call.name for call in output.tool_calls] == ["get_weather"]
    assert output.extra == {"threadId": "thread-2"}
    assert [item["type"] for item in output.items] == ["function_call", "function_call_output", "message"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"type": "error", "error": "scripted model failure", "sequence_number": 9},
            "scripted model failure",
        ),
        ({"error": "scripted model failure", "code": "UPSTREAM_ERROR"}, "scripted model failure"),
        (
            {"type": "error", "code": "rate_limit", "message": "slow down", "param": None},
            "rate_limit: slow down",
        ),
        ({"error": {"code": "server_error", "message": "boom"}}, "server_error: boom"),
        ("plain", "plain"),
        (None, None),
        ("", None),
    ],
)
def test_error_text_shapes(value, text):
    assert error_text(value) == text


def test_appkit_failure_sequence_reports_one_error():
    stream = fold(
        [
            ("error", {"type": "error", "error": "scripted model failure"}),
            ("response.failed", {"type": "response.failed", "response": {}}),
            ("error", {"error": "scripted model failure", "code": "UPSTREAM_ERROR"}),
        ]
    )
    assert stream.output().error == "scripted model failure"


def test_response_failed_carries_its_own_error():
    failed = {
        "type": "response.failed",
        "response": {"id": "r1", "error": {"code": "server_error", "message": "x"}},
    }
    output = fold([failed]).output()
    assert (output.error, output.response_id) == ("server_error: x", "r1")


def test_error_frame_with_plain_text_data():
    stream = ResponsesStream(time.perf_counter())
    assert stream.feed("error", "upstream unavailable") is False
    assert stream.output().error == "upstream unavailable"


def test_function_call_arguments_arrive_in_deltas():
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc1",
            "output_index": 0,
            "delta": '{"a":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc1",
            "output_index": 0,
            "delta": " 1}",
        },
        {"type": "response.completed", "response": {"id": "r", "output": []}},
    ]
    output = fold(events).output()
    assert [(call.name, call.args, call.id) for call in output.tool_calls] == [("f", {"a": 1}, "c1")]


def test_completed_response_with_output_is_authoritative():
    final = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Final."}]}
    events = [
        {"type": "response.output_text.delta", "item_id": "m", "delta": "Draft"},
        {
            "type": "response.completed",
            "response": {"id": "r2", "output": [final], "usage": {"total_tokens": 3}},
        },
    ]
    output = fold(events).output()
    assert (output.reply, output.response_id, output.usage) == ("Final.", "r2", {"total_tokens": 3})


def test_reading_stops_at_the_terminal_event():
    stream = ResponsesStream(time.perf_counter())
    assert stream.feed("message", json.dumps({"type": "response.completed", "response": {}})) is True
    assert stream.feed("message", "[DONE]") is True


def test_messages_join_with_the_separator_and_skip_empty_ones():
    def message(text):
        return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}

    data = {"output": [message("a"), message(""), message("b")]}
    assert parse_response(data).reply == "ab"
    assert parse_response(data, "\n").reply == "a\nb"


def test_user_and_refusal_parts_are_not_the_reply():
    data = {
        "output": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
        ]
    }
    assert parse_response(data).reply == ""


def test_a_body_without_output_is_unusable_unless_it_reports_an_error():
    with pytest.raises(EndpointError, match='no "output" list'):
        parse_response({"id": "r"})
    assert parse_response({"id": "r", "error": {"message": "quota"}}).error == "quota"
    assert parse_response({"id": "r", "status": "failed", "output": []}).error == "the response failed"


def test_replay_keeps_messages_and_answered_calls_only():
    items = [
        {"type": "reasoning", "id": "rs", "summary": []},
        {
            "type": "function_call",
            "id": "fc1",
            "call_id": "c1",
            "name": "f",
            "arguments": "{}",
            "status": "done",
        },
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {"type": "function_call", "id": "fc2", "call_id": "c2", "name": "g", "arguments": "{}"},
        {
            "type": "message",
            "id": "m",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hi"}],
        },
        {"type": "message", "id": "e", "role": "assistant", "content": []},
    ]
    assert replay_items(items) == [
        {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
        {
            "type": "message",
            "role": "assistant",
            "id": "m",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
        },
    ]
