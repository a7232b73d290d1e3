"""`source:` over each form the instrumentations record a conversation in, each made by the library
that writes it (tests/fixtures/traces/ holds those that cannot be installed beside the test extra):
openai-v2's messages as log records, Elastic's older event form, Azure AI Inference's span events,
Strands Agents' span events and sessions, and Traceloop's OpenLLMetry in its three forms; in each the
planted wrong refund is found with the conversation's tool calls, their results and its tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.recorded_traces import calls_with_results, planted_failure, project
from support.traced_agent import ScriptedModel, conversations, record

from specengine.traces.genai import DETAILS
from specengine.traces.otlp import SPAN, read_file

pytest.importorskip("opentelemetry.instrumentation.openai_v2")


@pytest.fixture(scope="module")
def model():
    with ScriptedModel() as server:
        yield server


def test_the_event_form_is_read_from_the_log_records(tmp_path, model):
    """openai-v2 with event_only content writes content-less chat spans and the messages in log records."""
    record("events", model, tmp_path / "events.json", conversations(10, bug_every=10))
    lines = [json.loads(line) for line in (tmp_path / "events.json").read_text().splitlines()]
    assert any("resourceLogs" in line for line in lines)
    spans = json.dumps([line for line in lines if "resourceSpans" in line])
    assert "gen_ai.operation.name" in spans and "gen_ai.input.messages" not in spans
    failed = planted_failure(project(tmp_path, tmp_path, "events.json"), 9, 9)
    transcript = failed["trials"][0]["transcript"]
    assert transcript[-1]["tool_calls"] == [
        {"name": "issue_refund", "args": {"order_id": "ORD-0009"}, "result": {"refunded": "ORD-0009"}}
    ]
    assert failed["row"] == failed["recorded"]["trace_ids"][0]  # one trace, no conversation id


def test_the_older_event_form_is_read_from_a_log_record_a_message(tmp_path, model):
    """Elastic's OpenAI instrumentation (content captured by `true`) writes content-less chat spans
    and a log record a message of the whole history; a turn reads only its own tool results."""
    pytest.importorskip("opentelemetry.instrumentation.openai")
    record("older", model, tmp_path / "older.json", conversations(10, bug_every=10))
    lines = [json.loads(line) for line in (tmp_path / "older.json").read_text().splitlines()]
    spans = json.dumps([line for line in lines if "resourceSpans" in line])
    logs = json.dumps([line for line in lines if "resourceLogs" in line])
    assert "gen_ai.usage.input_tokens" in spans and "gen_ai.input.messages" not in spans
    for name in ("user.message", "assistant.message", "tool.message", "choice"):
        assert f'"eventName": "gen_ai.{name}"' in logs
    failed = planted_failure(project(tmp_path, tmp_path, "older.json"), 9, 9)
    transcript = failed["trials"][0]["transcript"]
    # the call ids repeat across turns (call_ORD-0009): each call has its own turn's result
    calls = [message["tool_calls"] for message in transcript if message.get("tool_calls")]
    assert calls == calls_with_results(9)
    assert transcript[-1]["content"] == "Done: order ORD-0009 is refunded."
    assert failed["usage"] == {"input_tokens": 200, "output_tokens": 40, "total_tokens": 240}  # 4 calls


def test_the_older_event_form_recorded_as_span_events_is_read(tmp_path, model):
    """Azure AI Inference's tracing (content recording on) writes the older event form as the chat
    span's own events, each message's body as JSON text in `gen_ai.event.content`, a tool message
    naming its call by `tool_call_id`."""
    pytest.importorskip("azure.ai.inference.tracing")
    record("azure", model, tmp_path / "azure.json", conversations(10, bug_every=10))
    text = (tmp_path / "azure.json").read_text()
    assert "resourceLogs" not in text and '"name": "gen_ai.tool.message"' in text
    assert '\\"tool_call_id\\": \\"call_ORD-0000\\"' in text
    failed = planted_failure(project(tmp_path, tmp_path, "azure.json"), 9, 9)
    transcript = failed["trials"][0]["transcript"]
    assert [
        message["tool_calls"] for message in transcript if message.get("tool_calls")
    ] == calls_with_results(9)
    assert failed["usage"] == {"input_tokens": 200, "output_tokens": 40, "total_tokens": 240}  # 4 calls
    assert failed["row"] == failed["recorded"]["trace_ids"][0]  # one trace a conversation


@pytest.mark.parametrize("style", ["strands", "strands-latest"])
def test_strands_agents_span_events_are_read_and_grouped_by_session(tmp_path, model, style):
    """Strands Agents traces its own loop: the older events as span events whose content is JSON
    text of Bedrock Converse blocks (`toolUse`, `toolResult`, a tool's result as `[{"text"}]`), or
    with the latest conventions `gen_ai.client.inference.operation.details` span events whose tool
    results come back in a `user` message; `session.id` (its `trace_attributes`) on every span,
    GenAI ones too, groups a conversation's traces."""
    pytest.importorskip("strands")
    record(style, model, tmp_path / "strands.json", conversations(4, bug_every=4))
    spans = [raw for kind, raw in read_file(tmp_path / "strands.json") if kind == SPAN]
    keys = {item["key"] for span in spans for item in span["attributes"]}
    events = {event["name"] for span in spans for event in span.get("events", ())}
    assert "gen_ai.input.messages" not in keys and "session.id" in keys
    assert {"gen_ai.tool.message", "gen_ai.choice"} <= events if style == "strands" else DETAILS in events
    failed = planted_failure(project(tmp_path, tmp_path, "strands.json"), 3, 3)
    transcript = failed["trials"][0]["transcript"]
    calls = [message["tool_calls"] for message in transcript if message.get("tool_calls")]
    assert calls == calls_with_results(3)
    assert (failed["row"], len(failed["recorded"]["trace_ids"])) == ("conv-0003", 2)
    assert failed["usage"]["input_tokens"] == 200


@pytest.mark.parametrize(
    ("recording", "session"),
    [
        ("openllmetry-0.62.4-attributes.json", None),
        ("openllmetry-0.62.4-events.json", None),
        ("openllmetry-0.54.0-flattened.json", "conv-0001"),
    ],
)
def test_openllmetry_recordings_are_read_with_their_tool_results(tmp_path, recording, session):
    """Traceloop's OpenLLMetry, recorded (tests/fixtures/traces/README.md says why as files): 0.62.4's
    attribute form is the GenAI one; its event form puts a choice's tool calls beside `message` and
    writes tool messages without an id, each answering the call before it. 0.54.0 flattens the
    messages into `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes, a trace a turn, and
    traceloop-sdk's session id (on every span) groups a conversation's traces."""
    recorded = Path(__file__).parent / "fixtures" / "traces"
    failed = planted_failure(project(tmp_path, recorded, recording), 1, 1)
    transcript = failed["trials"][0]["transcript"]
    calls = [message["tool_calls"] for message in transcript if message["role"] == "assistant"]
    assert calls == calls_with_results(1)
    assert failed["trials"][0]["usage"]["input_tokens"] == 200
    traces = failed["recorded"]["trace_ids"]
    assert (failed["row"], len(traces)) == ((session, 2) if session else (traces[0], 1))
