"""Hostile recorded traces: a `sources:` file line or span that says anything (times and latencies past
a float or 64 bits, token counts of 4,000 digits, tool arguments nested 1,000 deep, a flattened
message number `²`, span events that are not events or whose body is nested 1,000 deep, a
recording without content) errors at most its own conversation; the run goes on, the other conversations
are graded and the results file is written."""

from __future__ import annotations

import io
import json
from pathlib import Path

from support.cli import run_cli, write_project, write_spec

from specengine.source.sources import source_config
from specengine.traces import maker, openllmetry, otlp
from specengine.traces.model import Unreadable
from specengine.traces.store import TraceStore
from specengine.usage import MAX_TOKENS, token_count

SPEC = """
evals:
  - name: recorded
    source: prod
    expect:
      - includes: ok
"""


def _chat(reply: object = "ok", **more: object) -> list[dict]:
    answer = {"role": "assistant", "content": reply, **more}
    return [{"role": "user", "content": "hi"}, answer]


def _graded(tmp_path: Path, sources: dict, name: str, lines: list[str]) -> dict:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_project(tmp_path, sources={"prod": sources})
    write_spec(tmp_path, "specs/recorded", SPEC)
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path)
    assert run.exit_code in (0, 1), run.output
    return json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))


def test_a_hostile_chat_log_line_spoils_only_its_conversation(tmp_path):
    deep_arguments = "[" * 1000 + "]" * 1000  # orjson reads it (its limit is 1,024); pickle and str() do not
    call = {"id": "c", "type": "function", "function": {"name": "t", "arguments": "HERE"}}
    deep = json.dumps({"id": "deep", "messages": _chat(None, tool_calls=[call]) + _chat()})
    lines = [
        json.dumps({"id": "good", "messages": _chat()}),
        json.dumps({"id": "slow", "messages": _chat(latency_s=1e308)}),
        json.dumps({"id": "late", "timestamp": 1e300, "messages": _chat()}),
        json.dumps(
            {"id": "huge", "messages": _chat(usage={"prompt_tokens": 10**30, "completion_tokens": 1e300})}
        ),
        deep.replace('"HERE"', deep_arguments),
    ]
    data = _graded(tmp_path, {"jsonl": "traces/*.jsonl"}, "log.jsonl", lines)
    cases = {case["row"]: case for case in data["cases"]}
    assert {"good", "slow", "late", "huge", "deep"} <= cases.keys()
    assert all(cases[row]["status"] == "passed" for row in ("good", "slow", "late", "huge", "deep"))
    assert "usage" not in cases["huge"] or not cases["huge"]["usage"].get("input_tokens")


def _span(number: int, attributes: list[dict], start: str = "1700000000000000000") -> str:
    span = {
        "traceId": f"{number:032x}",
        "spanId": f"{number:016x}",
        "name": "chat",
        "startTimeUnixNano": start,
        "endTimeUnixNano": "1700000001000000000",
        "attributes": attributes,
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def _text(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def test_a_hostile_otlp_span_spoils_only_its_trace(tmp_path):
    said = [
        _text("gen_ai.operation.name", "chat"),
        _text(
            "gen_ai.input.messages",
            json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
        ),
        _text(
            "gen_ai.output.messages",
            json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
        ),
    ]
    tokens = {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "9" * 4000}}
    superscript = [
        _text("openinference.span.kind", "LLM"),
        _text("llm.input_messages.².message.role", "user"),
        _text("llm.output_messages.0.message.role", "assistant"),
    ]
    lines = [
        _span(1, said),
        _span(2, [*said, tokens]),
        _span(3, said, start="9" * 4000),  # past 64 bits: the trace store's start column holds no more
        _span(4, superscript),
    ]
    data = _graded(tmp_path, {"otlp": "traces/*.json"}, "spans.json", lines)
    statuses = [case["status"] for case in data["cases"]]
    assert statuses.count("passed") == 3, statuses
    assert all(case.get("usage", {}).get("input_tokens") is None for case in data["cases"])


def test_a_token_count_is_a_whole_number_a_real_count_could_be():
    assert [token_count(value) for value in (0, 12, 12.0, MAX_TOKENS)] == [0, 12, 12, MAX_TOKENS]
    hostile = (MAX_TOKENS + 1, 10**4000, 1e300, float("nan"), float("inf"), -1, True, "12", 1.5)
    assert [token_count(value) for value in hostile] == [None] * len(hostile)


class _CountingReads(io.BytesIO):
    """A file that remembers the most bytes one read handed out."""

    most = 0

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        self.most = max(self.most, len(line))
        return line


def test_a_trace_line_past_the_limit_is_skipped_without_being_held(monkeypatch):
    monkeypatch.setattr(otlp, "MAX_LINE_BYTES", 100)
    handle = _CountingReads(b'{"a": 1}\n' + b"x" * 10_000_000 + b"\n\n" + b"y" * 500)
    assert list(otlp.bounded_lines(handle)) == [(1, b'{"a": 1}\n'), (2, None), (3, b"\n"), (4, None)]
    assert handle.most <= 2**20  # the endless line was read a megabyte at a time, never whole


def test_a_hostile_or_content_less_openllmetry_span_spoils_only_its_conversation(tmp_path):
    asked = [_text("gen_ai.prompt.0.role", "user"), _text("gen_ai.prompt.0.content", "hi")]
    answer = [_text("gen_ai.completion.0.role", "assistant"), _text("gen_ai.completion.0.content", "ok")]
    deep_call = [
        _text("gen_ai.completion.0.tool_calls.0.name", "t"),
        _text("gen_ai.completion.0.tool_calls.0.arguments", "[" * 1000 + "]" * 1000),
        _text("gen_ai.prompt.².role", "system"),  # not a number int() reads: not a message
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "9" * 4000}},
    ]
    content_less = [_text("llm.request.type", "chat"), _text(openllmetry.SESSION_ID, "quiet")]
    lines = [_span(1, [*asked, *answer]), _span(2, [*asked, *answer, *deep_call]), _span(3, content_less)]
    data = _graded(tmp_path, {"otlp": "traces/*.json"}, "spans.json", lines)
    cases = {case["row"]: case for case in data["cases"]}
    assert [case["status"] for case in cases.values()] == ["passed", "passed", "skipped"], cases.keys()
    assert cases[f"{2:032x}"]["trials"][0]["transcript"][-1]["tool_calls"] == [
        {"name": "t", "args": "[" * 1000 + "]" * 1000}  # deeper than the limit: kept as the text it was
    ]
    skipped = cases[f"unreadable {3:032x}"]  # its file, trace id and why
    assert skipped["skip_reason"] == (
        f"unreadable trace: traces/spans.json: trace {3:032x}: no model call with its messages (is message"
        " content captured? OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; OpenLLMetry:"
        " TRACELOOP_TRACE_CONTENT)"
    )


def _event(name: str, content: object, time: object = "1700000000500000000") -> object:
    text = content if isinstance(content, str) else json.dumps(content)
    return {"timeUnixNano": time, "name": name, "attributes": [_text("gen_ai.event.content", text)]}


def test_hostile_span_events_spoil_only_their_own_span(tmp_path):
    chat = [_text("gen_ai.operation.name", "chat")]
    user = _event("gen_ai.user.message", {"role": "user", "content": "hi"})
    answer = _event("gen_ai.choice", {"message": {"content": "ok"}}, "1700000000600000000")
    deep = _event(
        "gen_ai.assistant.message", "[" * 1000 + "]" * 1000
    )  # not an object: its attributes are its body
    events = [
        [user, answer],
        [
            user,
            deep,
            "not an event",
            {"name": 7, "attributes": "none"},
            _event("gen_ai.choice", [], "9" * 4000),
            answer,
        ],
    ]
    lines = []
    for number, said in enumerate(events, 1):
        line = json.loads(_span(number, chat))
        line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["events"] = said
        lines.append(json.dumps(line))
    data = _graded(tmp_path, {"otlp": "traces/*.json"}, "spans.json", lines)
    assert [case["status"] for case in data["cases"]] == ["passed", "passed"]


def _conversation_span(number: int, conversation: str, user: str) -> str:
    return _span(
        number,
        [
            _text("gen_ai.operation.name", "chat"),
            _text("gen_ai.conversation.id", conversation),
            _text(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": user}]}]),
            ),
            _text(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]),
            ),
        ],
    )


def test_a_conversation_past_the_size_limit_is_reported_never_loaded(tmp_path):
    """Every trace sharing one conversation id by mistake (36 MB of spans here) would be made and
    graded as one conversation, whole, in memory: it is a skipped case saying why, at its first
    trace, and the conversation beside it is graded."""
    filler = "x" * 2**20
    lines = [_conversation_span(number, "everyone", filler) for number in range(1, 37)]
    lines.append(_conversation_span(100, "alone", "hi"))
    data = _graded(tmp_path, {"otlp": "traces/*.json"}, "spans.json", lines)
    cases = {case["row"]: case for case in data["cases"]}
    assert cases["alone"]["status"] == "passed"
    shared = next(case for case in data["cases"] if "everyone" in (case.get("skip_reason") or ""))
    assert shared["status"] == "skipped"
    reason = shared["skip_reason"]
    assert f"traces/spans.json: trace {1:032x}:" in reason, reason
    assert "conversation everyone: its traces hold 36." in reason and "more than the 32 MB" in reason


def test_the_store_hands_out_no_fragment_of_a_conversation_past_the_limit(monkeypatch):
    """The limit is decided before a conversation's spans are loaded, in the run and in the helper
    process alike (both walk `in_order` with it)."""
    store = TraceStore()
    try:
        item = ("span", {"traceId": "t"})
        store.add_raw([("t1", "big", 1, "a.json", [item] * 200), ("t2", "small", 2, "a.json", [item])])
        monkeypatch.setattr(maker, "MAX_CONVERSATION_BYTES", 1000)
        made = list(maker.chosen(source_config("prod", {"otlp": "a.json"}), store, None))  # groups the store
        too_large = [found for found in made if isinstance(found, Unreadable)]
        assert [(found.file, found.trace_id, found.conversation) for found in too_large] == [
            ("a.json", "t1", "big")
        ]
        grouped = {key: (size, fragments) for key, _, size, fragments in store.conversations(1, True, 1000)}
        assert grouped["big"][0] > 1000 and grouped["big"][1] is None
        assert grouped["small"][0] <= 1000 and grouped["small"][1] is not None
    finally:
        store.close()
