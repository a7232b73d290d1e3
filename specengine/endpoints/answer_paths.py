"""The paths into a JSON answer that an expression can name, each with what it holds.

`ask` lists them under an expression that picked nothing, and so does the error of a run whose
`reply`, `tool_calls`, `session_id` or `error` finds nothing in an answer: the author sees
`json.data.reply (text)` and writes it, instead of guessing at the answer's shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

PATHS_SHOWN = 15


def json_paths(value: Any, prefix: str = "json") -> list[str]:
    """The paths into a JSON answer an expression can name, each with what it holds: texts, numbers
    and lists (a list's first item is followed into)."""
    found: list[str] = []
    for path, kind in _walk(value, prefix):
        found.append(f"{path} ({kind})")
    return found


def _walk(value: Any, path: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            step = f"{path}.{key}" if str(key).isidentifier() else f"{path}[{json.dumps(str(key))}]"
            yield from _walk(item, step)
    elif isinstance(value, list):
        yield path, f"list of {len(value)}"
        if value:
            yield from _walk(value[0], f"{path}[0]")
    elif isinstance(value, str):
        yield path, "text"
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield path, "number"


def shown_paths(value: Any, limit: int = PATHS_SHOWN) -> str:
    """The first `limit` paths of an answer, on one line ("" when it has none)."""
    paths = json_paths(value)
    shown = ", ".join(paths[:limit])
    more = f", … ({len(paths) - limit} more)" if len(paths) > limit else ""
    return shown + more
