"""The built-in demo agent: its scripted behaviour, its HTTP server and the demo-agent command."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys

import httpx
import pytest
from support.cli import REPO_ROOT

from specengine.demo.script import respond
from specengine.demo.server import start_demo_agent
from specengine.endpoints.openai_chat import OpenAIChatAdapter
from specengine.plan import EndpointConfig
from specengine.transcript import Turn


def ask(*messages: str, system: str | None = None):
    """The agent's reply to the last message, with the earlier ones as history."""
    history = [{"role": "system", "content": system}] if system else []
    history += [{"role": "user", "content": text} for text in messages]
    return respond(history)


def calls(reply) -> list[tuple[str, dict]]:
    return [(call.name, dict(call.args)) for call in reply.tool_calls]


@pytest.fixture(scope="module")
def demo():
    with start_demo_agent() as server:
        yield server


def converse(url: str, *conversations: list[str], stream: bool = False) -> list[list[Turn]]:
    """Each list of messages is one conversation (so a new list is what `reset` gives)."""

    async def main() -> list[list[Turn]]:
        async with httpx.AsyncClient() as client:
            config = EndpointConfig(name="demo", protocol="demo", url=url, options={"stream": stream})
            adapter = OpenAIChatAdapter(config, client)
            results = []
            for messages in conversations:
                conversation = adapter.conversation()
                results.append([await conversation.send(message) for message in messages])
            return results

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("message", "reply", "tool_calls"),
    [
        (
            "What's the weather in Paris?",
            "The weather in Paris is Sunny, 24°C.",
            [("get_weather", {"city": "Paris"})],
        ),
        ("weather in london", "The weather in London is Rainy, 14°C.", [("get_weather", {"city": "London"})]),
        (
            "How cold is it in Oslo in Fahrenheit?",
            "The weather in Oslo is Snowy, 27°F.",
            [("get_weather", {"city": "Oslo", "unit": "fahrenheit"})],
        ),
        (
            "Weather in Atlantis?",
            "I don't know the weather in Atlantis.",
            [("get_weather", {"city": "Atlantis"})],
        ),
        (
            "Compare the weather in Tokyo and Paris",
            "The weather in Tokyo is Cloudy, 18°C. The weather in Paris is Sunny, 24°C.",
            [("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "Paris"})],
        ),
        (
            "Book a table for 2 at Luigi's at 7pm",
            "Booked! I reserved a table for 2 at Luigi's at 19:00. Confirmation code: LUIGIS-1900-2.",
            [("book_table", {"restaurant": "Luigi's", "people": 2, "time": "19:00"})],
        ),
        (
            "Book a table for four people at 20:30 outside for a birthday, vegan please",
            "Booked! I reserved a table for 4 at Chez Demo at 20:30 (outside seating, for a birthday, vegan)",
            [
                (
                    "book_table",
                    {
                        "restaurant": "Chez Demo",
                        "people": 4,
                        "time": "20:30",
                        "preferences": {"seating": "outside", "occasion": "birthday", "dietary": ["vegan"]},
                    },
                )
            ],
        ),
        ("Book a table", "I can book a table at Chez Demo. For how many people, and at what time?", []),
        ("Book a table for 40 at 8pm", "Sorry, I can only book tables for 1 to 20 people.", []),
        ("Hello!", "Hello! I'm the demo agent.", []),
        ("What can you do?", "I'm the demo agent. I can tell you the weather", []),
        ("thanks!", "You're welcome!", []),
        ("Write me a poem about the sea", "Sorry, I can't help with that.", []),
        ("What did I ask before?", "I don't know", []),
        ("What is my name?", "I don't know your name yet.", []),
    ],
)
def test_single_messages(message, reply, tool_calls):
    answer = ask(message)
    assert answer.content.startswith(reply)
    assert calls(answer) == tool_calls


def test_bookings_change_across_turns():
    first = "Book a table for 2 at 7pm"
    assert calls(ask(first, "Make it 4 people")) == [
        ("book_table", {"restaurant": "Chez Demo", "people": 4, "time": "19:00"})
    ]
    assert ask(first, "Make it 4 people").content.startswith("Changed! Your booking is now a table for 4")
    assert calls(ask(first, "Make it 4 people", "move it to 8:30pm"))[0][1]["time"] == "20:30"
    # A booking started without a time or size is finished by the next answers.
    assert (
        ask("Book a table at Luigi's", "for three").content == "At what time should I book the table for 3?"
    )
    assert calls(ask("Book a table at Luigi's", "for three", "at 8pm")) == [
        ("book_table", {"restaurant": "Luigi's", "people": 3, "time": "20:00"})
    ]


def test_memory_comes_from_the_history():
    assert ask("Weather in Oslo?", "What did I ask before?").content == 'You asked: "Weather in Oslo?"'
    assert ask("My name is Ana", "what's my name?").content == "Your name is Ana."
    assert ask("My name is Ana", "hi").content.startswith("Hello, Ana!")
    follow_up = ask("What's the weather in Paris?", "And in Fahrenheit?")
    assert calls(follow_up) == [("get_weather", {"city": "Paris", "unit": "fahrenheit"})]
    assert follow_up.content == "The weather in Paris is Sunny, 75°F."


def test_json_replies():
    weather = ask("Weather in Paris? Reply in JSON.")
    assert json.loads(weather.content) == {
        "city": "Paris",
        "condition": "Sunny",
        "temperature": 24,
        "unit": "celsius",
    }
    assert calls(weather) == [("get_weather", {"city": "Paris"})]
    both = json.loads(ask("weather in Tokyo and Oslo as json").content)
    assert [city["city"] for city in both["cities"]] == ["Tokyo", "Oslo"]
    assert json.loads(ask("Weather in Atlantis in JSON").content) == {
        "city": "Atlantis",
        "error": "unknown city",
    }
    booking = json.loads(ask("Book a table for 2 at Luigi's at 7pm, answer in JSON").content)
    assert booking == {"restaurant": "Luigi's", "people": 2, "time": "19:00", "confirmation": "LUIGIS-1900-2"}
    assert json.loads(ask("hello", system="Always answer in JSON.").content)["reply"].startswith("Hello!")


def test_same_messages_same_answers():
    messages = ["Book a table for 2 at 7pm", "weather in Oslo", "What did I ask before?"]
    assert ask(*messages) == ask(*messages)


@pytest.mark.parametrize("stream", [False, True])
def test_over_http_with_the_chat_adapter(demo, stream):
    [booking, fresh] = converse(
        demo.url, ["Book a table for 2 at 7pm", "Make it 4 people"], ["What did I ask before?"], stream=stream
    )
    assert booking[1].reply.startswith("Changed! Your booking is now a table for 4 at Chez Demo at 19:00.")
    assert [call.as_dict() for call in booking[1].tool_calls] == [
        {"name": "book_table", "args": {"restaurant": "Chez Demo", "people": 4, "time": "19:00"}}
    ]
    assert fresh[0].reply.startswith("I don't know")
    assert fresh[0].tool_calls == ()
    assert (booking[0].ttft_s is not None) == stream


def test_http_errors_and_health(demo):
    assert httpx.get(demo.base_url + "/health").json()["status"] == "ok"
    assert httpx.post(demo.base_url + "/v1/other", json={}).status_code == 404
    bad = httpx.post(demo.url, content=b"not json")
    assert bad.status_code == 400
    assert "not JSON" in bad.json()["error"]["message"]
    assert httpx.post(demo.url, json={"messages": "hi"}).status_code == 400


def test_closed_demo_server_stops_answering():
    server = start_demo_agent()
    url = server.url
    with httpx.Client() as client:
        assert client.post(url, json={"messages": [{"role": "user", "content": "hi"}]}).status_code == 200
        server.close()
        with pytest.raises(httpx.TransportError):
            client.post(url, json={"messages": [{"role": "user", "content": "hi"}]})


def test_command_serves_until_interrupted():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "specengine", "demo-agent", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first_line = process.stdout.readline()
        assert first_line.startswith("Demo agent listening on http://127.0.0.1:")
        url = first_line.split()[-1]
        answer = httpx.post(url, json={"messages": [{"role": "user", "content": "weather in Tokyo"}]}).json()
        assert answer["choices"][0]["message"]["content"] == "The weather in Tokyo is Cloudy, 18°C."
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    assert "POST /v1/chat/completions" in stderr  # one log line per request
    assert "Demo agent stopped." in stderr


def test_command_reports_a_taken_port(run_cli):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(["demo-agent", "--port", str(port)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "--port 0" in result.stderr


def test_orders_are_looked_up_with_a_generated_id():
    answer = ask("Where is my order of headphones?")
    assert calls(answer) == [("find_order", {"item": "headphones"})]
    [order_id] = re.findall(r"ORD-\d{6}", answer.content)
    assert answer.content == f"Your order {order_id} (Wireless headphones) has shipped and arrives in 2 days."
    assert ask("Which orders do I have?").content.startswith("Which order do you mean?")
    assert calls(ask("Which orders do I have?")) == []


def test_a_refund_has_arguments_no_spec_can_spell_exactly():
    answer = ask("I want a refund for the chargers, they arrived damaged")
    [(lookup, _), (name, args)] = calls(answer)
    assert (lookup, name) == ("find_order", "refund")
    assert re.fullmatch(r"ORD-\d{6}", args["order_id"])
    assert args["amount"] == 3 * 14.95 != 44.85  # floating point: an exact 44.85 would not match
    assert (args["items"], args["reason"]) == (["charger"], "damaged")
    assert args["note"] == "I want a refund for the chargers, they arrived damaged"
    assert re.fullmatch(r"req_[0-9a-f]{12}", args["request_id"])
    assert answer.content.startswith(f"I refunded $44.85 for the charger of order {args['order_id']}.")
    bundle = calls(ask("Please refund the stand and the cable from my desk bundle, they came too late"))
    assert bundle[1][1]["items"] == ["stand", "cable"]  # in the order the message names them
    assert (bundle[1][1]["amount"], bundle[1][1]["reason"]) == (44.99, "late")


@pytest.mark.parametrize("stream", [False, True])
def test_replies_report_token_usage(demo, stream):
    [[first, second]] = converse(demo.url, ["Where is my order of headphones?", "thanks"], stream=stream)
    assert first.tokens is not None and second.tokens is not None
    assert first.tokens.total_tokens == first.tokens.input_tokens + first.tokens.output_tokens  # type: ignore[operator]
    assert second.tokens.input_tokens > first.tokens.input_tokens  # the history is sent again
    [[again, _]] = converse(demo.url, ["Where is my order of headphones?", "thanks"], stream=not stream)
    assert again.tokens == first.tokens  # the same count whether streamed or not
