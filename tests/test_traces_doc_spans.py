"""The literal spans, log records and lines docs/spec-format.md shows for each convention ("How
conversations are read") are read as it says, graded by the CLI: each makes the conversation (its
grouping id), the turn, the tool calls with their results, the reply, tokens and labels the page's
text says. The page leaves out what does not matter to a reading (ids and times of a span shown for
its attributes, the content-less `chat` span an event form's records are tied to, the user's message
of a call shown from the assistant's side): the tests add those, and nothing else."""

from __future__ import annotations

import base64
import json
import re

import pytest
from support.cli import REPO_ROOT, run_cli, write_project, write_spec

from specengine.traces.model import Unreadable

SECTION = re.compile(r"#### How conversations are read\n(.*?)\n### ", re.DOTALL)
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def shown_blocks() -> dict[str, str]:
    """The section's JSON blocks by what they show: the first line of each, as a key."""
    text = (REPO_ROOT / "docs" / "spec-format.md").read_text(encoding="utf-8")
    section = SECTION.search(text)
    assert section is not None
    return {block.split("\n", 1)[0][:40]: block for block in JSON_BLOCK.findall(section.group(1))}


def batch(*spans: dict) -> str:
    """A line as the Collector's file exporter writes it."""
    return json.dumps(
        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]}
    )


def test_the_spans_the_spec_format_shows_are_read_as_it_says(tmp_path):
    blocks = shown_blocks()
    chat = json.loads(next(b for k, b in blocks.items() if k.startswith('{"traceId": "e754')))
    tool = json.loads(next(b for k, b in blocks.items() if k.startswith('{"name": "execute_tool')))
    llm = json.loads(next(b for k, b in blocks.items() if k.startswith('{"name": "ChatCompletion"')))
    line = next(b for k, b in blocks.items() if k.startswith('{"id": "chat-1"'))
    end = int(chat["endTimeUnixNano"])
    tool |= {"traceId": chat["traceId"], "spanId": "1" * 16, "parentSpanId": chat["parentSpanId"]}
    tool |= {"startTimeUnixNano": str(end + 1000), "endTimeUnixNano": str(end + 2000)}
    llm |= {
        "traceId": "2" * 32,
        "spanId": "3" * 16,
        "startTimeUnixNano": str(end),
        "endTimeUnixNano": str(end + 9),
    }
    (tmp_path / "genai.json").write_text(batch(chat, tool) + "\n", encoding="utf-8")
    (tmp_path / "openinference.json").write_text(batch(llm) + "\n", encoding="utf-8")
    (tmp_path / "chat.jsonl").write_text(" ".join(line.split()) + "\n", encoding="utf-8")
    write_project(
        tmp_path,
        sources={
            "genai": {"otlp": "genai.json"},
            "openinference": {"otlp": "openinference.json"},
            "logs": {"jsonl": "chat.jsonl"},
        },
    )
    keep = {"genai": "genai", "openinference": "openinference", "logs": "{name: logs, label: vip}"}
    asked = "{{ trace.first_user_message.split()[-1] }}"
    refund = f"- called_tool_with: {{name: issue_refund, args: {{order_id: '{asked}'}}}}"
    write_spec(
        tmp_path,
        "specs/shown",
        "evals:\n"
        + "".join(
            f"  - name: {name}\n    source: {source}\n    expect:\n      {refund}\n"
            for name, source in keep.items()
        ),
    )
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path)
    assert run.exit_code == 0, run.output
    cases = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    assert [(case["row"], case["status"]) for case in cases] == [
        (chat["traceId"], "passed"),
        ("conv-0000", "passed"),
        ("chat-1", "passed"),
    ]
    calls = {case["row"]: case["trials"][0]["transcript"][1]["tool_calls"] for case in cases}
    assert calls[chat["traceId"]] == [
        {"name": "issue_refund", "args": {"order_id": "ORD-0000"}, "result": {"refunded": "ORD-0000"}}
    ]  # the execute_tool span is the same call, and adds its result
    assert calls["conv-0000"] == [{"name": "issue_refund", "args": {"order_id": "ORD-0000"}}]
    turns = {case["row"]: case["trials"][0]["transcript"] for case in cases}
    assert turns[chat["traceId"]][1]["usage"] == {
        "input_tokens": 120,
        "output_tokens": 0,
        "total_tokens": 120,
    }
    said, done = turns["chat-1"]  # the line's labels kept it (`label: vip`)
    assert (said["content"], done["content"], done["latency_s"]) == ("Refund ORD-1", "Done.", 1.5)
    assert done["usage"] == {"input_tokens": 100, "output_tokens": 5, "total_tokens": 105}


def shown(start: str) -> list[dict]:
    """The JSON values of the one block of the section that starts with `start` (a block may show
    several records, one after the other)."""
    text = (REPO_ROOT / "docs" / "spec-format.md").read_text(encoding="utf-8")
    section = SECTION.search(text)
    assert section is not None
    (block,) = [block for block in JSON_BLOCK.findall(section.group(1)) if block.startswith(start)]
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(block.rstrip()):
        value, at = decoder.raw_decode(block, at)
        values.append(value)
        at += len(block[at:]) - len(block[at:].lstrip())
    return values


def records(*logs: dict) -> str:
    """Log records as the Collector's file exporter writes them: a `resourceLogs` line."""
    return json.dumps(
        {"resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": list(logs)}]}]}
    )


def bare_chat(record: dict, at: int) -> dict:
    """The content-less `chat` span the event forms tie their records to (by trace and span id)."""
    return {
        "traceId": record["traceId"],
        "spanId": record["spanId"],
        "name": "chat support-model",
        "startTimeUnixNano": str(at - 10**6),
        "endTimeUnixNano": str(at + 10**6),
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
    }


def timed(span: dict, start: int) -> dict:
    """A span the page shows without its times (which do not matter to its reading)."""
    return span | {"startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 2 * 10**9)}


def hex_id(shown: dict) -> str:
    """A trace id the page shows in base64 (protobuf's JSON mapping), as a conversation's id: hex."""
    return base64.b64decode(shown["traceId"]).hex()


def user_record(record: dict) -> dict:
    """The user's message of the call a record belongs to, which the page leaves out of a call it
    shows from the assistant's side: a `gen_ai.user.message` record, its `content` in the body."""
    content = {"key": "content", "value": {"stringValue": "Where is my order ORD-0000?"}}
    at = str(int(record["observedTimeUnixNano"]) - 1000)
    return {
        "body": {"kvlistValue": {"values": [content]}},
        "eventName": "gen_ai.user.message",
        "traceId": record["traceId"],
        "spanId": record["spanId"],
        "observedTimeUnixNano": at,
    }


def test_every_event_and_flattened_form_the_section_shows_is_read_as_it_says(tmp_path):
    (details,) = shown('{"traceId": "f9RLwUY70kFSW6T2DHI8zg=="')
    asked, answered = shown('{"body": {"kvlistValue": {"values": [{"key": "tool_calls"')
    (answer,) = shown('{"body": {"kvlistValue": {"values": [{"key": "finish_reason"')
    (choice,) = shown('{"body": {"kvlistValue": {"values": [{"key": "index"')
    (azure,) = shown('{"traceId": "WHUeLWaxSsprLFoYq9KHPA=="')
    (strands,) = shown('{"traceId": "TCvbURWXZpYMCN7/HJ6UFg=="')
    (flattened,) = shown('{"traceId": "l9pLR+38Uv27xyc7Qx03tQ=="')
    at = int(details["observedTimeUnixNano"])
    # OpenLLMetry's choice is shown alone: it is given ids and a time, as the others have
    choice |= {"traceId": "4" * 32, "spanId": "5" * 16, "observedTimeUnixNano": str(at)}
    files = {
        "details": [batch(bare_chat(details, at)), records(details)],
        "older": [batch(bare_chat(asked, at)), records(user_record(asked), asked, answered, answer)],
        "choice": [batch(bare_chat(choice, at)), records(user_record(choice), choice)],
        "azure": [batch(timed(azure, at))],
        "strands": [batch(timed(strands, at))],
        "flattened": [batch(timed(flattened, at))],
    }
    for name, lines in files.items():
        (tmp_path / f"{name}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_project(tmp_path, sources={name: {"otlp": f"{name}.json"} for name in files})
    asked_for = "{{ trace.last_user_message.split()[-1] }}"
    refund = f"called_tool_with: {{name: issue_refund, args: {{order_id: '{asked_for}'}}}}"
    write_spec(
        tmp_path,
        "specs/shown",
        "evals:\n"
        + "".join(f"  - name: {name}\n    source: {name}\n    expect: [succeeded]\n" for name in files)
        + f"  - name: refunds what was asked\n    source: flattened\n    expect:\n      - {refund}\n",
    )
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path)
    assert run.exit_code == 1, run.output  # the flattened span's planted wrong refund, and only it
    cases = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    read = {
        case["id"].split("::")[1].split("[")[0]: (
            case["row"],
            case["status"],
            case["trials"][0]["transcript"],
        )
        for case in cases
    }
    where = "Where is my order ORD-0000?"
    lookup = {"name": "lookup_order", "args": {"order_id": "ORD-0000"}}
    shipped = lookup | {"result": {"order_id": "ORD-0000", "status": "shipped"}}
    refunded = {"name": "issue_refund", "args": {"order_id": "ORD-0001"}, "result": {"refunded": "ORD-0001"}}
    tokens = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    expected = {  # name: (conversation, user, reply, tool calls, tokens)
        "details": (
            hex_id(details),
            "Please refund order ORD-0000",
            "",
            [{"name": "issue_refund", "args": {"order_id": "ORD-0000"}}],
            None,
        ),
        "older": (hex_id(asked), where, "Order ORD-0000 is shipped.", [shipped], None),
        "choice": ("4" * 32, where, "", [lookup], None),
        "azure": (hex_id(azure), where, "Order ORD-0000 is shipped.", [shipped], tokens),
        "strands": ("conv-0000", where, "Order ORD-0000 is shipped.", [shipped], tokens),
        "flattened": (
            "conv-0001",
            "I ordered ORD-0001 and ORD-9001; please refund ORD-9001",
            "Done: order ORD-0001 is refunded.",
            [refunded],
            tokens,
        ),
    }
    for name, (row, user, reply, calls, usage) in expected.items():
        got_row, status, (said, answered_turn) = read[name]
        assert (got_row, status, said["content"]) == (row, "passed", user), name
        assert answered_turn["content"] == reply, name
        assert answered_turn.get("tool_calls") == calls, name
        assert answered_turn.get("usage") == usage, name
    assert read["refunds what was asked"][:2] == ("conv-0001", "failed")


def test_the_mlflow_span_the_section_shows_is_read_as_it_says():
    """The CHAT_MODEL span as the server gives it back (`Span.to_dict()`), in a trace of its session,
    read by the reader an `mlflow:` source uses (a server would cost seconds; tests/
    test_run_traces_mlflow.py runs one): the user's message, the call it asked for, its tokens."""
    entities = pytest.importorskip("mlflow.entities")
    from specengine.traces.mlflow import read_trace
    from specengine.traces.turns import conversation_of

    (shown_span,) = shown('{"name": "Completions"')
    span = entities.Span.from_dict(
        shown_span | {"status": {"code": "STATUS_CODE_OK", "message": ""}, "events": []}
    )
    info = entities.TraceInfo(
        trace_id="tr-8afa655a7cd27f5f72f0862a448d6495",
        trace_location=entities.TraceLocation.from_experiment_id("1"),
        request_time=1,
        state=entities.TraceState.OK,
        trace_metadata={"mlflow.trace.session": "conv-0009"},
    )
    parts = read_trace(entities.Trace(info=info, data=entities.TraceData(spans=[span])), "support-agent")
    assert not isinstance(parts, Unreadable) and parts.conversation == "conv-0009"
    (turn,) = conversation_of(parts.conversation, "staging", [parts]).turns
    assert (turn.user, turn.reply, turn.usage) == (
        "Where is my order ORD-0009?",
        "",
        {"input_tokens": 50, "output_tokens": 10},
    )
    assert [(use.name, use.args, use.id) for use in turn.tool_calls] == [
        ("lookup_order", {"order_id": "ORD-0009"}, "call_ORD-0009")
    ]
