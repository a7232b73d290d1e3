"""The simulator's wire contract and the freezing of a conversation, without a server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from specengine.errors import SimulatorFailure, UsageError
from specengine.results.decode import read_case
from specengine.simulate.contract import OPENING, TOOL_NAME, read_reply, request_body, request_messages
from specengine.simulate.freeze import _literal, freeze_eval
from specengine.templates import render


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message}]}


def called(arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return completion(
        {"tool_calls": [{"type": "function", "function": {"name": TOOL_NAME, "arguments": raw}}]}
    )


def test_the_request_flips_the_roles_and_forces_the_tool() -> None:
    messages = request_messages(
        "Dana, impatient.", "a refund", [("user", "hi"), ("assistant", "which order?")]
    )
    assert messages[0]["role"] == "system"
    assert "Dana, impatient." in messages[0]["content"] and "a refund" in messages[0]["content"]
    assert "Never reveal" in messages[0]["content"]
    assert messages[1:] == [
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "which order?"},
    ]
    assert request_messages("u", "g", [])[1] == {"role": "user", "content": OPENING}
    body = request_body("m", messages, 0.0, 7)
    assert body["tool_choice"] == {"type": "function", "function": {"name": TOOL_NAME}}
    assert body["tools"][0]["function"]["parameters"]["required"] == ["message", "goal_reached", "gave_up"]
    assert body["seed"] == 7 and "seed" not in request_body("m", messages, 0.0, None)


@pytest.mark.parametrize(
    ("answer", "message", "goal_reached", "gave_up"),
    [
        (
            called({"message": " It is ORD-1 ", "goal_reached": False, "gave_up": False}),
            "It is ORD-1",
            False,
            False,
        ),
        (called({"message": "thanks", "goal_reached": "true", "gave_up": False}), "thanks", True, False),
        (called({"message": "bye", "gave_up": True}), "bye", False, True),
        (completion({"content": "plain words"}), "plain words", False, False),
        (
            called('{"message": "line one\nline two", "goal_reached": false}'),
            "line one\nline two",
            False,
            False,
        ),
        (
            completion({"content": '```json\n{"message": "done, thanks", "goal_reached": true}\n```'}),
            "done, thanks",
            True,
            False,
        ),
        (completion({"content": '{"message": "hi", "gave_up": true}'}), "hi", False, True),
        (completion({"content": "{not an object} so words"}), "{not an object} so words", False, False),
    ],
    ids=[
        "call",
        "flag-as-text",
        "gave-up",
        "plain-text",
        "raw-line-break",
        "fenced-call",
        "bare-call",
        "braces",
    ],
)
def test_an_answer_gives_the_next_move(answer: Any, message: str, goal_reached: bool, gave_up: bool) -> None:
    move = read_reply(answer)
    assert (move.message, move.goal_reached, move.gave_up) == (message, goal_reached, gave_up)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ([], "not a JSON object"),
        ({"error": {"message": "overloaded"}}, "answered with an error"),
        ({"choices": []}, "has no message"),
        (completion({"content": ""}), "neither"),
        (called("{not json"), "not JSON"),
        (called({"message": 3}), "not text"),
    ],
)
def test_an_unusable_answer_is_a_simulator_failure(answer: Any, words: str) -> None:
    with pytest.raises(SimulatorFailure, match=words):
        read_reply(answer)


@pytest.mark.parametrize("text", ["plain", "{{ input.x }} and {% if %}", "{# c #}", "a {% endraw %} b"])
def test_a_frozen_message_renders_to_itself(text: str) -> None:
    assert render(_literal(text), {}) == text


def test_a_simulated_part_that_sent_nothing_cannot_be_frozen() -> None:
    data = {"evals": [{"name": "e", "turns": [{"send": "hi"}, {"simulate": {"user": "u", "goal": "g"}}]}]}
    case = read_case(
        {
            "id": "s.yaml::e",
            "status": "failed",
            "trials": [
                {
                    "transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}],
                    "simulations": [
                        {"step": 1, "stop_reason": "goal_reached", "turns": 0, "user": "u", "goal": "g"}
                    ],
                }
            ],
        }
    )
    with pytest.raises(UsageError, match="sent no message"):
        freeze_eval(data, 0, case, {}, 0, "r.json")
