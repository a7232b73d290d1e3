"""The openai-chat adapter against a scripted chat completions server over real HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from support.servers import Reply

from specengine.endpoints.openai_chat import OpenAIChatAdapter
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig
from specengine.transcript import Turn

WEATHER_CALL = {
    "name": "get_weather",
    "args": {"city": "Paris", "options": {"unit": "celsius", "days": [1, 2]}},
}


def converse(url: str, messages: list[str], **config: Any) -> list[Turn]:
    """Send the messages in one conversation; returns the turns."""

    async def main() -> list[Turn]:
        async with httpx.AsyncClient() as client:
            endpoint = EndpointConfig(name="agent", protocol="openai-chat", url=url, **config)
            conversation = OpenAIChatAdapter(endpoint, client).conversation()
            return [await conversation.send(message) for message in messages]

    return asyncio.run(main())


def test_json_reply_and_tool_calls(agent_server):
    agent_server.script(lambda messages: Reply(content="Sunny, 24°C", tool_calls=[WEATHER_CALL]))
    [turn] = converse(agent_server.url, ["Weather in Paris?"], model="weather-agent")
    assert turn.reply == "Sunny, 24°C"
    assert [call.as_dict() for call in turn.tool_calls] == [WEATHER_CALL]
    assert turn.tool_calls[0].id == "call_1"
    assert turn.error is None
    assert turn.session_id is None
    assert turn.ttft_s is None
    assert turn.latency_s > 0
    assert agent_server.bodies == [
        {"model": "weather-agent", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    ]


def test_streamed_reply_concatenates_content_and_tool_arguments(agent_server):
    second = {"name": "book_table", "args": {"restaurant": "Luigi's", "people": 2}}
    agent_server.script(
        lambda messages: Reply(content="It is sunny in Paris.", tool_calls=[WEATHER_CALL, second])
    )
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert agent_server.bodies[0]["stream"] is True
    assert turn.reply == "It is sunny in Paris."
    assert [call.as_dict() for call in turn.tool_calls] == [WEATHER_CALL, second]
    assert [call.id for call in turn.tool_calls] == ["call_1", "call_2"]
    assert all(call.note is None for call in turn.tool_calls)
    assert turn.ttft_s is not None
    assert 0 <= turn.ttft_s <= turn.latency_s


def test_stream_with_only_tool_calls_has_empty_reply(agent_server):
    agent_server.script(lambda messages: Reply(content=None, tool_calls=[WEATHER_CALL]))
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert turn.reply == ""
    assert turn.tool_calls[0].args == WEATHER_CALL["args"]


def test_history_is_resent_with_system_prompt_and_text_of_tool_only_turns(agent_server):
    agent_server.script(
        [Reply(content=None, tool_calls=[WEATHER_CALL]), Reply(content="second answer"), Reply(content="x")]
    )
    converse(agent_server.url, ["first", "second", "third"], options={"system": "Be brief."})
    assert agent_server.bodies[2]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "second answer"},
        {"role": "user", "content": "third"},
    ]
    assert agent_server.bodies[0]["model"] == "default"


def test_each_conversation_starts_fresh(agent_server):
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            adapter = OpenAIChatAdapter(
                EndpointConfig(name="a", protocol="openai-chat", url=agent_server.url), client
            )
            first = adapter.conversation()
            await first.send("one")
            await adapter.conversation().send("two")

    asyncio.run(main())
    assert agent_server.bodies[1]["messages"] == [{"role": "user", "content": "two"}]


def test_extra_body_and_headers_are_sent(agent_server):
    converse(
        agent_server.url,
        ["hi"],
        headers={"Authorization": "Bearer secret-token"},
        options={"extra_body": {"temperature": 0, "messages": "ignored", "metadata": {"k": "v"}}},
    )
    body = agent_server.bodies[0]
    assert body["temperature"] == 0
    assert body["metadata"] == {"k": "v"}
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert agent_server.requests[0].headers["authorization"] == "Bearer secret-token"


@pytest.mark.parametrize("stream", [False, True])
def test_error_field_in_a_well_formed_response_sets_turn_error(agent_server, stream):
    error = {"message": "tool backend down", "type": "server_error"}
    agent_server.script(lambda messages: Reply(content="partial", error=error))
    [turn] = converse(agent_server.url, ["hi"], options={"stream": stream})
    assert turn.error == "server_error: tool backend down"
    assert turn.reply == "partial"


def test_error_field_without_choices_is_a_turn_error(agent_server):
    agent_server.script(lambda messages: Reply(body={"error": "rate limited upstream"}))
    [turn] = converse(agent_server.url, ["hi"])
    assert turn.error == "rate limited upstream"
    assert turn.reply == ""


def test_missing_choices_is_an_invalid_response_naming_what_is_missing(agent_server):
    agent_server.script(lambda messages: Reply(body={"object": "chat.completion", "output": "x" * 500}))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"])
    error = caught.value
    assert error.kind == "InvalidResponse"
    assert '"choices"' in error.message
    assert '"object": "chat.completion"' in error.message
    assert len(error.message) < 300
    assert not error.retryable


def test_missing_message_is_an_invalid_response(agent_server):
    agent_server.script(lambda messages: Reply(body={"choices": [{"index": 0, "text": "legacy"}]}))
    with pytest.raises(EndpointError, match=r"choices\[0\]\.message"):
        converse(agent_server.url, ["hi"])


def test_body_that_is_not_json_is_an_endpoint_error(agent_server):
    agent_server.script(lambda messages: Reply(body="<html>Welcome to nginx</html>"))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"])
    assert caught.value.kind == "InvalidJSON"
    assert "Welcome to nginx" in caught.value.message


def test_server_error_is_retryable_with_status(agent_server):
    agent_server.script(
        lambda messages: Reply(status=500, body="internal failure", headers={"Retry-After": "2"})
    )
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"])
    error = caught.value
    assert error.status == 500
    assert error.retryable
    assert error.retry_after == 2.0
    assert "HTTP 500" in error.message
    assert "internal failure" in error.message


@pytest.mark.parametrize("stream", [False, True])
def test_client_error_is_not_retryable(agent_server, stream):
    agent_server.script(lambda messages: Reply(status=400, body={"error": {"message": "bad model"}}))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"], options={"stream": stream})
    assert caught.value.status == 400
    assert not caught.value.retryable
    assert "bad model" in caught.value.message


def test_stream_status_error_is_retryable(agent_server):
    agent_server.script(lambda messages: Reply(status=503, body="busy"))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"], options={"stream": True})
    assert (caught.value.status, caught.value.retryable) == (503, True)


def test_bad_tool_arguments_are_noted_not_fatal(agent_server):
    agent_server.script(
        lambda messages: Reply(content="ok", tool_calls=[{"name": "f", "arguments": "{oops"}])
    )
    [turn] = converse(agent_server.url, ["hi"])
    call = turn.tool_calls[0]
    assert call.name == "f"
    assert call.args == {}
    assert call.note is not None and "not valid JSON" in call.note


@pytest.mark.parametrize("stream", [False, True])
def test_a_raw_line_break_inside_an_argument_string_is_read(agent_server, stream):
    """Small local models write line breaks into argument strings unescaped: the call is kept whole."""
    raw = '{"note": "line one\nline two"}'
    agent_server.script(lambda messages: Reply(content="", tool_calls=[{"name": "f", "arguments": raw}]))
    [turn] = converse(agent_server.url, ["hi"], options={"stream": stream})
    assert [(call.name, call.args, call.note) for call in turn.tool_calls] == [
        ("f", {"note": "line one\nline two"}, None)
    ]


def test_dropped_connection_is_a_retryable_endpoint_error(agent_server):
    agent_server.script(lambda messages: Reply(drop=True))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"])
    assert caught.value.retryable


def test_stream_cut_midway_is_an_endpoint_error(agent_server):
    agent_server.script(lambda messages: Reply(content="a b c d e", stream=True, drop_after=3))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"], options={"stream": True})
    assert caught.value.retryable


def test_stream_chunk_that_is_not_json_is_an_endpoint_error(agent_server):
    agent_server.script(lambda messages: Reply(events=["{not json", "[DONE]"]))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"], options={"stream": True})
    assert caught.value.kind == "InvalidJSON"


def test_stream_error_event_sets_turn_error(agent_server):
    chunk = {"choices": [{"index": 0, "delta": {"content": "par"}}]}
    agent_server.script(
        lambda messages: Reply(events=[chunk, ("error", '{"error": {"message": "overloaded"}}')])
    )
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert turn.reply == "par"
    assert turn.error == "overloaded"


def test_server_answering_json_to_a_stream_request_is_accepted(agent_server):
    agent_server.script(lambda messages: Reply(content="plain", stream=False))
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert turn.reply == "plain"


def test_connection_refused_is_retryable(free_port):
    with pytest.raises(EndpointError) as caught:
        converse(f"http://127.0.0.1:{free_port}/v1/chat/completions", ["hi"])
    assert caught.value.retryable
    assert caught.value.kind == "ConnectError"


def test_usage_and_content_parts(agent_server):
    body = {
        "choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": "a"}, "b"]}}],
        "usage": {"total_tokens": 7},
    }
    agent_server.script(lambda messages: Reply(body=body))
    [turn] = converse(agent_server.url, ["hi"])
    assert turn.reply == "ab"
    assert turn.usage == {"total_tokens": 7}


BREAKS = "line\u2028separator\u0085next"  # line breaks to str.splitlines, not to server-sent events


def _chunk(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("stream", "reply"),
    [
        pytest.param(
            f"data: {_chunk('Hi')}\n\ndata: {_chunk(' there')}\n\ndata: [DONE]\n\n", "Hi there", id="plain"
        ),
        pytest.param(
            'data: {"choices": [{"index": 0,\ndata:  "delta": {"content": "two lines"}}]}\n\n'
            "data: [DONE]\n\n",
            "two lines",
            id="multi-line-data",
        ),
        pytest.param(
            f": keep-alive\n\ndata: {_chunk('Hi')}\n: ping\n\n:\n\ndata: [DONE]\n\n", "Hi", id="comments"
        ),
        pytest.param(f"data: {_chunk('Hi')}\r\n\r\ndata: [DONE]\r\n\r\n", "Hi", id="crlf"),
        pytest.param(f"data: {_chunk('Hi')}\r\rdata: [DONE]\r\r", "Hi", id="cr"),
        pytest.param(
            f"id: 1\n\nretry: 50\n\ndata: {_chunk('Hi')}\nid: 2\n\n\n\ndata: [DONE]\n\n", "Hi", id="ids"
        ),
        pytest.param(
            f"data: {_chunk(BREAKS)}\n\ndata: [DONE]\n\n",
            BREAKS,
            id="unicode-line-breaks-inside-data",
        ),
        pytest.param(f"event: message\ndata:{_chunk('no space')}\n\n", "no space", id="no-space-no-done"),
    ],
)
def test_server_sent_events_framing(agent_server, stream, reply):
    agent_server.script(
        lambda messages: Reply(body=stream.encode(), headers={"Content-Type": "text/event-stream"})
    )
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert turn.reply == reply
    assert turn.error is None


def test_an_event_cut_off_by_the_end_of_the_stream_is_not_read(agent_server):
    """An event is complete only at its blank line: a stream that ends inside one ends before it."""
    stream = f"data: {_chunk('kept')}\n\ndata: {_chunk(' lost')}\n"
    agent_server.script(
        lambda messages: Reply(body=stream.encode(), headers={"Content-Type": "text/event-stream"})
    )
    [turn] = converse(agent_server.url, ["hi"], options={"stream": True})
    assert turn.reply == "kept"


def test_a_stream_answer_that_is_not_an_event_stream_names_its_content_type(agent_server):
    agent_server.script(lambda messages: Reply(body="<html>proxy login</html>"))
    with pytest.raises(EndpointError) as caught:
        converse(agent_server.url, ["hi"], options={"stream": True})
    assert caught.value.kind == "InvalidResponse"
    assert "text/event-stream" in caught.value.message
    assert "text/plain" in caught.value.message
    assert "proxy login" in caught.value.message
