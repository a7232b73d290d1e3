"""The user turns of a row's chat messages: what `replay: input.messages` sends, and what it refuses."""

from __future__ import annotations

import pytest

from specengine.compile.replay import ReplayProblem, messages_at, replay_path, user_turns


def test_user_messages_in_order_others_left_out():
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Book a table for 2"},
        {"role": "assistant", "content": "For when?", "tool_calls": []},
        {"role": "tool", "content": "{}", "tool_call_id": "c1"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "7pm"}, {"type": "image_url", "image_url": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "at"}, {"type": "input_text", "text": "Luigi's"}],
        },
        {"role": "user", "content": 4},
    ]
    assert user_turns(messages, "input.messages") == ("Book a table for 2", "7pm", "at\nLuigi's", "4")


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ("hello", "input.messages must be a list of messages ({role, content}), not text"),
        ({"role": "user"}, "input.messages must be a list of messages ({role, content}), not a mapping"),
        (None, "input.messages must be a list of messages ({role, content}), not empty"),
        ([{"content": "hi"}], "message 1 of input.messages must be a mapping with a role and a content"),
        (["hi"], "message 1 of input.messages must be a mapping with a role and a content"),
        (
            [{"role": "assistant", "content": "hi"}, {"role": "user", "content": None}],
            "message 2 of input.messages (role user) must have a text content, or a list of text parts",
        ),
        (
            [{"role": "assistant", "content": "hi"}],
            "input.messages holds no message with role user, so there is nothing to send",
        ),
        ([], "input.messages holds no message with role user, so there is nothing to send"),
    ],
)
def test_what_cannot_be_replayed(messages, problem):
    with pytest.raises(ReplayProblem) as error:
        user_turns(messages, "input.messages")
    assert str(error.value) == problem


def test_the_messages_are_found_under_input():
    variables = {"input": {"chat": {"messages": [{"role": "user", "content": "hi"}]}}}
    assert replay_path("input.chat.messages") == ("chat", "messages")
    assert messages_at(variables, "input.chat.messages") == [{"role": "user", "content": "hi"}]
    with pytest.raises(ReplayProblem, match="there is no input.messages"):
        messages_at(variables, "input.messages")
    with pytest.raises(ReplayProblem, match="there is no input.chat.messages.x"):
        messages_at(variables, "input.chat.messages.x")
