"""`replay: input.messages`: a conversation taken from a dataset row's messages, sent turn by turn.

A row that records a conversation in the OpenAI chat shape (`[{role, content}, ...]`, what MLflow
evaluation datasets and Databricks AppKit's `userTurns` use) is replayed on one conversation: each
`user` message is sent in order, and every other message (the assistant's answers, system and tool
messages) is left out, since the agent answers for itself. The eval's checks apply to the last turn,
or to every turn with `scope: conversation`.

A message's content is a text, or a list of content parts whose `text` parts are joined
(`[{"type": "text", "text": "..."}]`, and the Responses API's `input_text`). The row's values are
sent as written: they are data, never templates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specengine.source.loader import as_text, kind_of

USER = "user"
TEXT_PARTS = ("text", "input_text")


class ReplayProblem(Exception):
    """A row's messages cannot be replayed; the message says why, the caller says where."""


def is_replay_path(value: str) -> bool:
    """True for `input.<key>` (one or more keys): the form the spec schema asks of `replay:`."""
    keys = value.strip().split(".")
    return len(keys) > 1 and keys[0] == "input" and all(key and not key.isspace() for key in keys[1:])


def replay_path(value: str) -> tuple[str, ...]:
    """`input.messages` → ("messages",): the keys under `input` that lead to the messages."""
    return tuple(value.strip().split("."))[1:]


def messages_at(variables: Mapping[str, Any], value: str) -> Any:
    """The value `replay:` names (`input.messages`) in a case's template variables."""
    found: Any = variables.get("input") or {}
    for key in replay_path(value):
        if not isinstance(found, Mapping) or key not in found:
            raise ReplayProblem(f"there is no {value.strip()}")
        found = found[key]
    return found


def user_turns(messages: Any, name: str) -> tuple[str, ...]:
    """The text of every user message, in order; ReplayProblem when `messages` (what `name` holds)
    is not a list of chat messages or holds no user message."""
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise ReplayProblem(f"{name} must be a list of messages ({{role, content}}), not {kind_of(messages)}")
    turns: list[str] = []
    for number, message in enumerate(messages, 1):
        if not isinstance(message, Mapping) or "role" not in message:
            raise ReplayProblem(f"message {number} of {name} must be a mapping with a role and a content")
        if message["role"] != USER:
            continue
        text = _content_text(message.get("content"))
        if text is None:
            raise ReplayProblem(
                f"message {number} of {name} (role user) must have a text content, or a list of text parts"
            )
        turns.append(text)
    if not turns:
        raise ReplayProblem(f"{name} holds no message with role user, so there is nothing to send")
    return tuple(turns)


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, (int, float)) and not isinstance(content, bool):
        return as_text(content)
    if isinstance(content, Sequence) and not isinstance(content, (str, bytes)):
        texts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in TEXT_PARTS
        ]
        return "\n".join(texts) if texts else None
    return None
