"""`source:` over an MLflow tracking server: a support agent traced by MLflow's own tracing
(`mlflow.openai.autolog()` for the model calls, `@mlflow.trace` for the agent and its tools, the
session set with `mlflow.update_current_trace`), logged to a real `mlflow server`, then graded by
the CLI with no request to any agent; the planted bug (a refund to the wrong order) found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from support.cli import run_cli, write_project, write_spec
from support.recorded_traces import SPEC as RECORDED_SPEC
from support.traced_agent import TOOLS, ScriptedModel, conversations

pytest.importorskip("mlflow.openai")

AGENT = textwrap.dedent(
    """
    import json, sys
    import mlflow, openai

    job = json.loads(sys.argv[1])
    mlflow.set_tracking_uri(job["tracking_uri"])
    mlflow.set_experiment(job["experiment"])
    mlflow.openai.autolog()
    client = openai.OpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)

    @mlflow.trace(span_type="TOOL")
    def lookup_order(order_id):
        return {"order_id": order_id, "status": "shipped"}

    @mlflow.trace(span_type="TOOL")
    def issue_refund(order_id):
        return {"refunded": order_id}

    @mlflow.trace(name="support", span_type="AGENT")
    def answer(history, session):
        mlflow.update_current_trace(session_id=session)
        while True:
            reply = client.chat.completions.create(
                model="support-model", messages=history, tools=job["tools"])
            message = reply.choices[0].message
            calls = message.tool_calls or []
            history.append({"role": "assistant", "content": message.content,
                            **({"tool_calls": [call.model_dump() for call in calls]} if calls else {})})
            if not calls:
                return message.content
            for call in calls:
                tool = {"lookup_order": lookup_order, "issue_refund": issue_refund}[call.function.name]
                result = tool(**json.loads(call.function.arguments))
                history.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})

    for conversation in job["conversations"]:
        history = [{"role": "system", "content": "You are the support agent of an online shop."}]
        for text in conversation["messages"]:
            history.append({"role": "user", "content": text})
            answer(history, conversation["id"])
    mlflow.flush_trace_async_logging()
    """
)

# the same checks as over the OTLP source, over the MLflow one
SPEC = RECORDED_SPEC.replace("source: {name: prod,", "source: {name: staging,")


@pytest.fixture(scope="module")
def logged(mlflow_server, tmp_path_factory) -> str:
    """Ten two-turn conversations (the tenth with the planted bug) traced into an experiment."""
    experiment = f"support-agent-{tmp_path_factory.mktemp('x').name}"
    with ScriptedModel() as model:
        job = {
            "tracking_uri": mlflow_server.url,
            "experiment": experiment,
            "base_url": model.v1_url,
            "tools": TOOLS,
            "conversations": conversations(10, bug_every=10),
        }
        env = {**os.environ, "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"}
        done = subprocess.run(
            [sys.executable, "-c", AGENT, json.dumps(job)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return experiment


def test_mlflow_traces_are_graded_by_session_and_the_planted_bug_found(tmp_path, mlflow_server, logged):
    write_project(
        tmp_path,
        sources={"staging": {"mlflow": {"experiment": logged, "tracking_uri": mlflow_server.url}}},
    )
    write_spec(tmp_path, "specs/refunds", SPEC)
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path)
    assert run.exit_code == 1, run.output
    data = json.loads((tmp_path / "out.json").read_text())
    statuses = {case["row"]: case["status"] for case in data["cases"]}
    assert statuses == {f"conv-{n:04d}": "passed" for n in range(9)} | {"conv-0009": "failed"}, run.output
    failed = next(case for case in data["cases"] if case["status"] == "failed")
    check = next(check for check in failed["trials"][0]["checks"] if check["matcher"] == "called_tool_with")
    assert check["got"] == 'issue_refund({"order_id": "ORD-0009"})'
    assert check["expected"] == 'issue_refund({"order_id": "ORD-9009"})'
    transcript = failed["trials"][0]["transcript"]
    assert [message["content"] for message in transcript if message["role"] == "user"] == [
        "Where is my order ORD-0009?",
        "I ordered ORD-0009 and ORD-9009; please refund ORD-9009",
    ]
    # the TOOL span and the tool call in the CHAT_MODEL span's answer are one call, with its result
    assert transcript[-1]["tool_calls"] == [
        {"name": "issue_refund", "args": {"order_id": "ORD-0009"}, "result": {"refunded": "ORD-0009"}}
    ]
    recorded_case = failed["recorded"]
    assert recorded_case["source"] == "staging" and recorded_case["conversation"] == "conv-0009"
    assert len(recorded_case["trace_ids"]) == 2 and all(
        one.startswith("tr-") for one in recorded_case["trace_ids"]
    )


def test_a_missing_experiment_is_named(tmp_path, mlflow_server):
    write_project(
        tmp_path,
        sources={"staging": {"mlflow": {"experiment": "no-such-agent", "tracking_uri": mlflow_server.url}}},
    )
    write_spec(tmp_path, "specs/refunds", SPEC)
    run = run_cli(["run", "specs"], cwd=tmp_path)
    assert run.exit_code == 2
    assert (
        f"source 'staging': no experiment named 'no-such-agent' in MLflow at {mlflow_server.url}"
        in run.output
    )


def test_an_mlflow_source_without_an_experiment_is_refused_at_its_line(tmp_path):
    write_project(tmp_path, sources={"staging": {"mlflow": {"experimnt": "x"}}})
    write_spec(tmp_path, "specs/refunds", SPEC)
    run = run_cli(["validate", "specs"], cwd=tmp_path)
    assert run.exit_code != 0
    assert "needs experiment: the name of the experiment whose traces are read" in run.output
    assert "unknown key 'experimnt' in mlflow (known: experiment, tracking_uri)" in run.output


def _span(kind: str, outputs: str, inputs: str = '{"order_id": "A1"}') -> object:
    """A span as MLflow reads it back from a server: each attribute JSON text it parses when asked."""
    from mlflow.entities import Span

    attributes = {"mlflow.traceRequestId": '"tr-1"', "mlflow.spanType": json.dumps(kind)}
    attributes |= {"mlflow.spanInputs": inputs, "mlflow.spanOutputs": outputs}
    return Span.from_dict(
        {
            "trace_id": "dHI=",
            "span_id": "AAAAAAAAAAE=",
            "parent_span_id": None,
            "name": "lookup_order",
            "start_time_unix_nano": 1,
            "end_time_unix_nano": 2,
            "attributes": attributes,
            "status": {"code": "STATUS_CODE_OK", "message": ""},
            "events": [],
        }
    )


def _trace(*spans: object) -> object:
    from mlflow.entities import Trace, TraceData, TraceInfo, TraceLocation, TraceState

    location = TraceLocation.from_experiment_id("1")
    info = TraceInfo(trace_id="tr-1", trace_location=location, request_time=1, state=TraceState.OK)
    return Trace(info=info, data=TraceData(spans=list(spans)))


def test_a_span_nested_deeper_than_the_limit_is_held_as_too_deep_and_one_past_the_stack_is_unreadable():
    from specengine.traces.mlflow import read_trace
    from specengine.traces.model import Unreadable
    from specengine.traces.values import TOO_DEEP

    deep = "[" * 900 + "]" * 900  # MLflow parses it into a list 900 deep, which walking would overflow
    parts = read_trace(_trace(_span("TOOL", deep, inputs=deep), _span("CHAT_MODEL", deep, inputs=deep)), "x")
    assert not isinstance(parts, Unreadable)
    assert [(tool.args, tool.result) for tool in parts.tools] == [(TOO_DEEP, TOO_DEEP)]
    (call,) = parts.calls
    assert call.input == () and [message.text for message in call.output] == [TOO_DEEP]

    class Overflowing:
        """A span whose outputs ran out of stack while MLflow parsed them."""

        span_type, parent_id, span_id, name, start_time_ns, end_time_ns = "TOOL", None, "s", "t", 1, 2
        inputs = {}

        @property
        def outputs(self) -> object:
            raise RecursionError("maximum recursion depth exceeded")

    unreadable = read_trace(_trace(Overflowing()), "support")
    assert isinstance(unreadable, Unreadable)
    assert "tr-1" in str(unreadable) and "nested deeper than 128 levels" in str(unreadable)
