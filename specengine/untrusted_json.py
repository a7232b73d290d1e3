"""JSON from the network, read with a depth limit: the one reader for what agents, judges,
simulators and GitHub answer.

json.loads recurses once per level of nesting, so an answer nested 200,000 deep (400 KB) raises
RecursionError, which no `except ValueError` catches: it ended the whole run. And a value nested a
few hundred deep still parses, then breaks whatever walks it later (an excerpt's json.dumps, the
results writer, `deep_contains`). So every answer is read here, and one nested deeper than
MAX_DEPTH is refused with a JSONTooDeep, a JSONDecodeError like any other text that is not JSON:
each caller already turns that into its case's error, in its own words.

Everything else is json's: NaN, Infinity and 1e999 read as floats (what reads a number from an
answer must take a float that is not finite), and `strict=False` lets control characters stand
inside strings, as some models write them in tool-call arguments.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 128  # far beyond any real answer; far enough below Python's 1,000 frames for what walks it

# json.loads builds a decoder on every call given an option; a stream's events are read by the
# thousand, so each `strict` has one (a decoder keeps no state between texts).
_DECODERS = {True: json.JSONDecoder(strict=True), False: json.JSONDecoder(strict=False)}


class JSONTooDeep(json.JSONDecodeError):
    """A JSON text nested deeper than MAX_DEPTH."""

    def __init__(self, doc: str | bytes | bytearray):
        text = doc if isinstance(doc, str) else ""  # JSONDecodeError counts lines in it; bytes have none
        super().__init__(f"nested deeper than {MAX_DEPTH} levels", text, 0)


def read_json(text: str | bytes | bytearray, *, strict: bool = True) -> Any:
    """`text` parsed as JSON, at most MAX_DEPTH arrays and objects deep; raises ValueError (a
    json.JSONDecodeError: JSONTooDeep when too deep) for anything else."""
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):  # json.loads refuses the BOM
            value = _DECODERS[strict].decode(text)
        else:
            value = json.loads(text, strict=strict)
    except RecursionError:
        raise JSONTooDeep(text) from None
    # an answer with fewer brackets than the limit cannot be nested deeper: no walk for most answers
    if len(text) <= MAX_DEPTH:  # a stream's small events: too short to hold that many brackets
        return value
    array, object_ = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    if text.count(array) + text.count(object_) > MAX_DEPTH and deeper_than(value, MAX_DEPTH):  # type: ignore[arg-type]
        raise JSONTooDeep(text)
    return value


def deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` holds arrays or objects nested more than `limit` deep; walked without
    recursion, so a deep value cannot exhaust the stack here."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        for child in container.values() if isinstance(container, dict) else container:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
