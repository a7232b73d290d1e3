"""The literal spans docs/spec-format.md shows for each convention ("How conversations are read") are
read as it says: the GenAI `chat` span with its `execute_tool` span, the OpenInference LLM span and the
JSONL chat log line each make a conversation with its refund call, graded by the CLI. The page leaves
out what does not matter to a span's reading (the tool span's ids and times, the OpenInference span's
ids): the test adds them, and nothing else."""

from __future__ import annotations

import json
import re

from support.cli import REPO_ROOT, run_cli, write_project, write_spec

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
    asked = "{{ trace.first_user_message.split()[-1] }}"
    refund = f"- called_tool_with: {{name: issue_refund, args: {{order_id: '{asked}'}}}}"
    write_spec(
        tmp_path,
        "specs/shown",
        "evals:\n"
        + "".join(
            f"  - name: {name}\n    source: {name}\n    expect:\n      {refund}\n"
            for name in ("genai", "openinference", "logs")
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
