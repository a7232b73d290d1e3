"""Reading the judge's answer: the `select_choice` tool call, checked before it becomes a score.

A judge server's answer is untrusted input. It may not be JSON, carry an error object instead of
choices, answer in plain text (a server without function calling), call another tool, send arguments
that are not a JSON object, or pick a choice outside the enum it was given. Each becomes a
JudgeFailure whose message says what the judge did, in plain words (the check's status is then
`error`); such an answer is never retried.

Small local models bend the protocol in two known ways, read rather than refused: raw line breaks
inside the arguments' strings (read with control characters allowed, `strict=False`),
and an answer in text instead of the forced call, read when it names one offered choice and no other
(`Choice: Y`, or a JSON object with a `choice`, bare or in a code fence).

Token usage is read apart from the choice, so tokens spent on an unusable answer are still counted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.errors import JudgeFailure
from specengine.judge.prompts import SELECT_CHOICE
from specengine.untrusted_json import JSONTooDeep, read_json

NO_TOOL_CALL = "the judge answered without calling select_choice; it must support tools/function calling"
EXCERPT = 200
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
FENCED = re.compile(r"```[A-Za-z]*\s*(\{(?:(?!```).)*?\})\s*```", re.DOTALL)  # a JSON object in a code fence
# `Choice: Y`, `**choice**: "Y"`, `choice = Y`
NAMED_CHOICE = re.compile(r"\bchoice\b\W{0,3}?[:=]\W{0,3}?(\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeAnswer:
    """The choice the judge picked (one of the choices it was offered) and its reasoning, if asked."""

    choice: str
    rationale: str | None


def excerpt(text: str) -> str:
    """The start of a server's text on one line: enough to say what it answered, never a flood."""
    return " ".join(text.split())[:EXCERPT]


def answer_json(text: str) -> Any:
    """The 2xx answer's body as JSON."""
    try:
        return read_json(text)
    except JSONTooDeep as exc:
        raise JudgeFailure(f"the judge's answer is {exc.msg}") from None
    except ValueError:
        raise JudgeFailure(f"the judge's answer is not JSON: {excerpt(text)!r}") from None


def usage_of(data: Any) -> dict[str, int] | None:
    """The token counts the server reported, when it reported any as finite numbers."""
    raw = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return None
    usage = {name: int(raw[name]) for name in USAGE_FIELDS if _is_count(raw.get(name))}
    return usage or None


def _is_count(value: Any) -> bool:
    """A number of tokens: an int, or a float that is finite (a server may send NaN or 1e999)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return not isinstance(value, float) or math.isfinite(value)


def read_answer(data: Any, choices: Sequence[str]) -> JudgeAnswer:
    """The select_choice call in a chat completion, held to the choices offered."""
    first = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(first, list) or not first or not isinstance(first[0], dict):
        error = data.get("error") if isinstance(data, dict) else None
        if error:
            detail = error.get("message", error) if isinstance(error, dict) else error
            raise JudgeFailure(f"the judge reported an error: {excerpt(str(detail))}")
        raise JudgeFailure(f"the judge's answer has no choices: {excerpt(json.dumps(data))!r}")
    message = _mapping(first[0].get("message"))
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        said = message.get("content")
        arguments = text_choice(said, choices) if isinstance(said, str) else None
        if arguments is None:
            raise JudgeFailure(NO_TOOL_CALL + (f' (it said: "{excerpt(str(said))}")' if said else ""))
    else:
        function = _mapping(calls[0].get("function"))
        name = function.get("name")
        if name != SELECT_CHOICE:
            raise JudgeFailure(f"the judge called {name!r} instead of {SELECT_CHOICE}")
        arguments = _arguments(function.get("arguments"))
    choice = arguments.get("choice")
    if not isinstance(choice, str):
        raise JudgeFailure(f"the judge called {SELECT_CHOICE} without a choice")
    choice = choice.strip()
    if choice not in choices:
        raise JudgeFailure(
            f"the judge chose {choice!r}, which is not one of the choices ({', '.join(choices)})"
        )
    return JudgeAnswer(choice=choice, rationale=_rationale(arguments.get("reasons")))


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects a model wrote in text instead of a tool call: each in a code fence, or the
    whole text when it is one object. Control characters inside strings are allowed."""
    stripped = text.strip()
    candidates = FENCED.findall(text) or ([stripped] if stripped.startswith("{") else [])
    for candidate in candidates:
        try:
            parsed = read_json(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            yield parsed


def text_choice(said: str, choices: Sequence[str]) -> dict[str, Any] | None:
    """select_choice's arguments from a judge that answered in text, when the text names exactly one
    of the offered choices (by a JSON object's `choice`, or `Choice: X`); None when it names none or
    several. The reasons are the object's, else the whole text."""
    objects = [found for found in json_objects(said) if isinstance(found.get("choice"), str)]
    named = {str(found["choice"]).strip() for found in objects}
    named.update(match.strip() for match in NAMED_CHOICE.findall(said))
    offered = named & set(choices)
    if len(offered) != 1 or len(named) != 1:
        return None
    reasons = next((found.get("reasons") for found in objects if "reasons" in found), said.strip())
    return {"choice": offered.pop(), "reasons": reasons}


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _arguments(raw: Any) -> dict[str, Any]:
    """select_choice's arguments: JSON text by the protocol; some servers send the object itself."""
    try:
        parsed = read_json(raw, strict=False) if isinstance(raw, str) else raw
    except JSONTooDeep as exc:
        raise JudgeFailure(f"the judge's {SELECT_CHOICE} arguments are {exc.msg}") from None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise JudgeFailure(
            f"the judge's {SELECT_CHOICE} arguments are not a JSON object: {excerpt(str(raw))!r}"
        )
    return parsed


def _rationale(reasons: Any) -> str | None:
    """The judge's reasoning, as autoevals reads it: a list of steps becomes one step per line."""
    if reasons is None:
        return None
    if isinstance(reasons, list):
        return "\n".join(str(step) for step in reasons)
    return str(reasons)
