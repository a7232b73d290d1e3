"""A recorded conversation frozen into a scripted eval: a production failure becomes a regression
test that runs against the live agent.

The frozen eval is the `source:` eval with its source replaced by the user messages of the
conversation, as `send:` turns; its `expect:` (the failing checks with the rest) checks the last
turn, as it did. What the checks read of the recording (`{{ trace.last_user_message }}`) is written
out as the eval's `input.trace`, and the checks read it there, so they render as they did. The
eval talks to the project's default endpoint (or the file's `endpoint:`). A comment at the top
says where it came from: the source, the conversation and its traces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specengine.errors import UsageError
from specengine.simulate.freeze import Frozen, _dump, _frozen_name, _literal, _plain
from specengine.source.loader import as_text

if TYPE_CHECKING:
    from specengine.results.loaded import Case

_TRACE_READ = re.compile(r"(?<![\w.])trace\.")


def _reading_input(value: Any) -> Any:
    """Templates that read `trace.X` rewritten to read `input.trace.X`."""
    if isinstance(value, str):
        return _TRACE_READ.sub("input.trace.", value)
    if isinstance(value, Mapping):
        return {key: _reading_input(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_reading_input(item) for item in value]
    return value


def freeze_recorded(
    document_data: Mapping[str, Any],
    eval_index: int,
    case: Case,
    variables: Mapping[str, Any],
    origin: str,
) -> Frozen:
    """The frozen spec for a results `case` of the `source:` eval at `eval_index`; `variables` are
    the case's as the run had them (its `trace` among them)."""
    transcript = case.trials[0].transcript if case.trials else ()
    messages = [str(message.get("content") or "") for message in transcript if message.get("role") == "user"]
    if not messages:
        raise UsageError(f"error: case {case.id} has no recorded user message to freeze")
    raw = _plain(document_data["evals"][eval_index])
    name = _frozen_name(as_text(raw["name"]), case.row)
    frozen: dict[str, Any] = {"name": name}
    for key, value in raw.items():
        if key not in ("name", "source", "expect", "input"):
            frozen[key] = value
    trace = _plain(dict(variables.get("trace") or {}))
    frozen["input"] = {**_plain(dict(variables.get("input") or {})), "trace": trace}
    turns: list[dict[str, Any]] = [{"send": _literal(text)} for text in messages]
    if "expect" in raw:
        turns[-1]["expect"] = _reading_input(raw["expect"])
    frozen["turns"] = turns
    data = {key: _plain(value) for key, value in document_data.items() if key not in ("evals", "dataset")}
    data["evals"] = [frozen]
    return Frozen(_comment(origin, case) + _dump(data), name)


def _comment(origin: str, case: Case) -> str:
    recorded = case.recorded or {}
    lines = [
        f"Frozen by `specengine freeze` from {origin}, case {case.id}:",
        f"conversation {recorded.get('conversation')} recorded in source {recorded.get('source')}"
        + (f" ({recorded['file']})" if recorded.get("file") else "")
        + ", replayed against the live agent.",
        f"Traces: {', '.join(recorded.get('trace_ids') or ()) or 'none'}",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines) + "\n"
