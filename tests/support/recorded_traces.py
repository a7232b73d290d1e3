"""A project whose source is recorded traces, and what the traces tests read of its run: shared by
the `source:` end-to-end tests (tests/test_run_traces.py, tests/test_run_traces_forms.py)."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_cli, write_project, write_spec
from support.traced_agent import ScriptedModel

SPEC = """
evals:
  - name: refunds the order asked for
    source: {name: prod, tool: issue_refund}
    expect:
      - called_tool_with:
          name: issue_refund
          args: {order_id: "{{ trace.last_user_message.split()[-1] }}"}
      - latency_below: 30
      - called_tool: lookup_order
        scope: conversation
"""


def project(tmp_path: Path, recorded: Path, pattern: str, model: ScriptedModel | None = None) -> Path:
    endpoints = {"support": model.endpoint()} if model is not None else None
    write_project(
        tmp_path,
        endpoints=endpoints,
        sources={
            "prod": {"otlp": str(recorded / pattern), "trace_url": "http://jaeger.test/trace/{trace_id}"}
        },
    )
    write_spec(tmp_path, "specs/refunds", SPEC)
    return tmp_path


def results(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def planted_failure(folder: Path, passed: int, number: int) -> dict:
    """Runs the CLI over `folder`'s source: every conversation passes but conversation `number`,
    the planted wrong refund, whose two user messages are read in order; its case is returned."""
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    data = results(folder / "out.json")
    assert data["summary"]["passed"] == passed and data["summary"]["failed"] == 1, run.output
    failed = next(case for case in data["cases"] if case["status"] == "failed")
    transcript = failed["trials"][0]["transcript"]
    order = f"ORD-{number:04d}"
    assert [message["content"] for message in transcript if message["role"] == "user"] == [
        f"Where is my order {order}?",
        f"I ordered {order} and ORD-9{number:03d}; please refund ORD-9{number:03d}",
    ]
    return failed


def calls_with_results(number: int) -> list[list[dict]]:
    """The planted conversation's tool calls, a turn's list each, with their own turn's results."""
    order = f"ORD-{number:04d}"
    return [
        [
            {
                "name": "lookup_order",
                "args": {"order_id": order},
                "result": {"order_id": order, "status": "shipped"},
            }
        ],
        [{"name": "issue_refund", "args": {"order_id": order}, "result": {"refunded": order}}],
    ]
