"""Whatever JSON an agent, judge or simulator answers (nested deep, numbers that are not finite,
wrong types anywhere), reading it ends in a turn or in that answer's own error: an EndpointError
for an agent, a JudgeFailure for a judge, a SimulatorFailure for a simulator. Nothing else may
escape, since anything else would reach the scheduler's last resort (or, before it, end the run).

Each protocol reads the answers through its real adapter, with httpx's MockTransport serving them
as a JSON body or as a server-sent event stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specengine.endpoints import adapter_class
from specengine.errors import EndpointError, JudgeFailure, SimulatorFailure
from specengine.fast_json import json_line
from specengine.judge.answer import answer_json, read_answer, usage_of
from specengine.plan import EndpointConfig
from specengine.simulate.contract import read_reply
from specengine.transcript import TurnRecord, transcript

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# the keys protocols read, so that generated answers reach past the first check of their shape
KEYS = st.sampled_from(
    [
        "choices", "message", "messages", "delta", "content", "role", "tool_calls", "function",
        "arguments", "name", "id", "usage", "prompt_tokens", "completion_tokens", "total_tokens",
        "input_tokens", "output_tokens", "output", "type", "text", "error", "result", "status", "state",
        "parts", "kind", "artifacts", "history", "values", "__interrupt__", "__error__", "data",
        "item", "response", "reply", "calls", "sid", "call_id", "custom_outputs", "thread_id",
    ]
)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["", "assistant", "function_call", "message", "output_text", "completed", "text"])
    | st.text(max_size=20)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=30,
)


@st.composite
def answers(draw: Any) -> str:
    """An answer's JSON text: a random value, or one buried under many levels of nesting."""
    text = json.dumps(draw(VALUES))  # NaN and Infinity written as json writes them
    depth = draw(st.sampled_from([0, 0, 0, 120, 5000]))
    return "[" * depth + text + "]" * depth


# every protocol, as a JSON answer and as a stream where it streams
CONFIGS = [
    ("openai-chat", {}),
    ("openai-chat", {"stream": True}),
    ("openai-responses", {}),
    ("openai-responses", {"stream": True}),
    ("databricks", {}),
    ("databricks", {"stream": True}),
    ("appkit", {}),
    (
        "http",
        {
            "body": {"q": "{{ message }}"},
            "reply": "json.reply",
            "tool_calls": "json.calls",
            "session_id": "json.sid",
            "error": "json.error",
        },
    ),
    ("langgraph", {"assistant_id": "agent"}),
    ("langgraph", {"assistant_id": "agent", "stream": True}),
    ("a2a", {}),
    ("a2a", {"stream": True}),
    (
        "http",
        {
            "stream": True,
            "body": {"q": "{{ message }}"},
            "reply": "json.delta if event == 'message' else json.reply",
            "tool_calls": "json.calls",
            "error": "json.error",
        },
    ),
    ("ag-ui", {"stream": True}),
    ("ai-sdk", {"stream": True}),
    ("adk", {"app_name": "agent", "stream": True}),
]


def served(bodies: list[str], stream: bool) -> httpx.MockTransport:
    """Each request answered with the next body (the last again when they run out)."""
    sent = iter(bodies)
    last = bodies[-1]

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal last
        body = next(sent, last)
        last = body
        if stream:
            events = "".join(f"data: {line}\n\n" for line in body.split("\n"))
            return httpx.Response(200, text=events, headers={"content-type": "text/event-stream"})
        return httpx.Response(200, text=body, headers={"content-type": "application/json"})

    return httpx.MockTransport(answer)


async def send_once(protocol: str, options: dict[str, Any], bodies: list[str]) -> None:
    config = EndpointConfig(
        name="agent", protocol=protocol, url="http://agent.test/v1", retries=0, options=options
    )
    stream = bool(options.get("stream"))
    async with httpx.AsyncClient(transport=served(bodies, stream)) as client:
        adapter = adapter_class(protocol)(config, client)
        try:
            turn = await adapter.conversation({}).send("hi")
        except EndpointError as exc:
            assert "\n" not in exc.message, exc.message
            return
    # what the run does with a turn: masks it, counts its tokens, writes it
    turn = turn.redacted(frozenset({"secret-value"}))
    str(turn.tokens)
    json_line(transcript([TurnRecord(1, "hi", turn, 0)]))


@pytest.mark.parametrize(
    ("protocol", "options"), CONFIGS, ids=[f"{p}{'-stream' * bool(o.get('stream'))}" for p, o in CONFIGS]
)
@FUZZ
@given(bodies=st.lists(answers(), min_size=1, max_size=3))
def test_any_json_answer_is_a_turn_or_an_endpoint_error(protocol, options, bodies):
    asyncio.run(send_once(protocol, options, bodies))


@pytest.mark.parametrize(
    ("protocol", "options"), CONFIGS, ids=[f"{p}{'-stream' * bool(o.get('stream'))}" for p, o in CONFIGS]
)
@pytest.mark.parametrize("body", ['{"type": [null]}', '{"type": {"a": 1}}', '{"kind": [1], "event": {}}'])
def test_an_event_type_that_is_not_text_is_a_turn_or_an_endpoint_error(protocol, options, body):
    """Found once by the fuzz above (a Responses stream event whose `type` was a list): kept as a case."""
    asyncio.run(send_once(protocol, options, [body]))


@FUZZ
@given(text=answers())
def test_any_json_a_judge_answers_is_a_verdict_or_a_judge_failure(text):
    try:
        data = answer_json(text)
        usage = usage_of(data)
        assert usage is None or all(isinstance(count, int) for count in usage.values())
        read_answer(data, ["Y", "N"])
    except JudgeFailure as exc:
        assert "\n" not in exc.message


@FUZZ
@given(text=answers())
def test_any_json_a_simulator_answers_is_a_message_or_a_simulator_failure(text):
    try:
        read_reply(answer_json(text))
    except SimulatorFailure:
        pass
    except JudgeFailure:  # answer_json's, which the simulator rewords
        pass
