"""`specengine run` end to end with argument matchers, call counts, trajectories and token usage:
the real CLI against scripted agent servers on 127.0.0.1 (chat completions JSON and streamed,
Responses, Databricks), the results read back and held to schemas/results.schema.json, and a
regrade that checks tokens from the stored transcripts."""

from __future__ import annotations

import json

import pytest
from support.cli import run_cli, write_project
from support.protocol_servers import DatabricksServer, ResponsesServer
from support.runs import Run, check, run_spec, setup_project, validate_results
from support.servers import AgentServer, Reply

FIND = {"name": "find_order", "args": {"item": "headphones"}}
REFUND = {
    "name": "refund",
    "args": {
        "order_id": "ORD-730211",
        "amount": 59.97000000000001,
        "items": ["cable", "headphones"],
        "reason": "damaged",
        "note": "Customer says: the box was DAMAGED",
        "request_id": "7f3c9a1e-51d2",
    },
}
USED = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


def agent(messages):
    text = messages[-1]["content"]
    if text == "refund":
        return Reply(content="Refunded $59.97.", tool_calls=[FIND, REFUND], usage=USED)
    if text == "look":
        return Reply(
            content="Found it.", tool_calls=[FIND], usage={"prompt_tokens": 10, "completion_tokens": 5}
        )
    if text == "silent":
        return Reply(content="No usage here.", tool_calls=[FIND])
    return None


SPEC = """
evals:
  - name: matchers pass
    input: {amount: 59.97, prefix: ORD}
    send: refund
    expect:
      - called_tool_with:
          name: refund
          args:
            order_id: {$matches: '^{{ input.prefix }}-\\d{6}$'}
            amount: {$approx: "{{ input.amount }}", $within: 0.01}
            items: {$contains: [headphones, cable]}
            reason: {$one_of: [damaged, late]}
            note: {$includes: damaged, $ignore_case: true}
            request_id: {$any: true}
            coupon: {$absent: true}
      - called_tool_with:
          name: refund
          args: {amount: {$approx: 60}}
        not: true
  - name: approx fails
    send: refund
    expect:
      - called_tool_with:
          name: refund
          args: {amount: {$approx: 19.99, $within: 0.01}}
  - name: exact fails
    send: refund
    expect:
      - called_tool_with:
          name: refund
          exact: true
          args: {order_id: {$any: true}, amount: {$gt: 0}}
  - name: a matcher value that renders to nonsense
    dataset:
      - {id: nonsense, input: {amount: about sixty}}
    send: refund
    expect:
      - called_tool_with:
          name: refund
          args: {amount: {$approx: "{{ input.amount }}"}}
  - name: counts pass
    send: refund
    expect:
      - {called_tool: refund, times: 1}
      - {called_tool: find_order, times: {gte: 1, lte: 2}}
      - max_tool_calls: 2
  - name: counts fail
    send: refund
    expect:
      - {called_tool: find_order, times: 2}
      - max_tool_calls: 1
  - name: trajectories pass
    send: refund
    expect:
      - tool_calls_in_order: [find_order, {name: refund, args: {amount: {$lt: 100}}}]
        mode: exact
      - {tool_calls_in_order: [refund, find_order], mode: any_order}
      - {tool_calls_in_order: [refund, find_order, notify], mode: subset}
      - tool_calls_in_order: [find_order, refund]
  - name: trajectory fails
    send: refund
    expect:
      - {tool_calls_in_order: [refund, find_order], mode: exact}
  - name: tokens pass
    send: refund
    expect:
      - tokens_below: 151
  - name: tokens fail
    send: refund
    expect:
      - tokens_below: 150
  - name: tokens unreported
    send: silent
    expect:
      - tokens_below: 1000
  - name: tokens over the conversation
    turns:
      - send: look
      - send: refund
        expect:
          - {tokens_below: 166, scope: conversation}
          - {tokens_below: 165, scope: conversation, name: conversation over budget}
          - {called_tool: find_order, times: 2, scope: conversation}
"""

EXPECTED = {
    "matchers pass": "passed",
    "approx fails": "failed",
    "exact fails": "failed",
    "a matcher value that renders to nonsense": "error",
    "counts pass": "passed",
    "counts fail": "failed",
    "trajectories pass": "passed",
    "trajectory fails": "failed",
    "tokens pass": "passed",
    "tokens fail": "failed",
    "tokens unreported": "error",
    "tokens over the conversation": "failed",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    folder = tmp_path_factory.mktemp("tool-checks")
    with AgentServer() as server:
        server.script(agent)
        setup_project(folder, server)
        reports = ("--junit", "out/junit.xml", "--md", "out/summary.md", "--html", "out/report.html")
        return run_spec(folder, SPEC, "-j", "4", *reports)


def test_every_case_has_its_outcome(run):
    assert run.exit_code == 1, run.cli.output
    assert {case["eval"]: case["status"] for case in run.cases} == EXPECTED
    validate_results(run.results)


def test_a_failed_argument_matcher_names_path_matcher_and_value_in_results_and_console(run):
    [failed] = run.case("approx fails")["trials"][0]["checks"]
    assert failed["reason"].splitlines()[0] == "args.amount: expected ≈ 19.99 (± 0.01), got 59.97000000000001"
    assert failed["expected"] == 'refund({"amount": {"$approx": 19.99, "$within": 0.01}})'
    assert "spec.yaml:" in run.cli.output
    assert "args.amount: expected ≈ 19.99 (± 0.01), got 59.97000000000001" in run.cli.output


def test_exact_names_the_arguments_beyond_those_named(run):
    [failed] = run.case("exact fails")["trials"][0]["checks"]
    lines = failed["reason"].splitlines()
    assert lines[0] == (
        'args.items: not expected (exact: true allows only the arguments named), got ["cable", "headphones"]'
    )
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "args.items",
        "args.reason",
        "args.note",
        "args.request_id",
    ]


def test_a_matcher_value_that_renders_to_nonsense_is_an_error_with_the_reason(run):
    [errored] = run.case("a matcher value that renders to nonsense[nonsense]")["trials"][0]["checks"]
    assert errored["status"] == "error"
    assert errored["reason"] == 'args.amount: $approx takes a number, not "about sixty"'


def test_call_counts(run):
    case = run.case("counts fail")
    assert check(case, "called_tool find_order 2 times")["reason"] == (
        'find_order was called 1 time, expected 2 times: find_order({"item": "headphones"})'
    )
    assert check(case, "max_tool_calls 1")["reason"].startswith("the turn made 2 tool calls, the limit is 1:")


def test_a_trajectory_failure_shows_where_and_the_actual_order(run):
    [failed] = run.case("trajectory fails")["trials"][0]["checks"]
    assert failed["name"] == "tool_calls_in_order refund → find_order (exact)"
    assert failed["reason"] == (
        "call 1 was find_order, expected refund; the actual order was: find_order → refund"
    )


def test_usage_is_recorded_per_turn_trial_case_and_run(run):
    conversation = run.case("tokens over the conversation")
    trial = conversation["trials"][0]
    replies = [message for message in trial["transcript"] if message["role"] == "assistant"]
    assert [reply["usage"] for reply in replies] == [
        {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},  # no total reported: in + out
        {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
    ]
    assert (
        trial["usage"]
        == conversation["usage"]
        == {"input_tokens": 130, "output_tokens": 35, "total_tokens": 165}
    )
    silent = run.case("tokens unreported")
    assert "usage" not in silent and "usage" not in silent["trials"][0]  # nothing reported, nothing recorded
    reporting = [case for case in run.cases if "usage" in case]
    assert run.summary["usage"] == {
        "input_tokens": sum(case["usage"]["input_tokens"] for case in reporting),
        "output_tokens": sum(case["usage"]["output_tokens"] for case in reporting),
        "total_tokens": sum(case["usage"]["total_tokens"] for case in reporting),
    }
    assert run.summary["usage"]["total_tokens"] == 10 * 150 + 165


def test_every_report_shows_the_tokens(run):
    shown = (
        "1,665 tokens (1,330 in, 335 out)"  # 10 turns of 150 (120 in, 30 out) and one of 15 (10 in, 5 out)
    )
    [summary_line] = [line for line in run.cli.output.splitlines() if " passed, " in line]
    assert summary_line.endswith(f" · {shown}")
    junit = (run.folder / "out" / "junit.xml").read_text(encoding="utf-8")
    assert '<property name="total_tokens" value="1665" />' in junit
    assert shown in (run.folder / "out" / "summary.md").read_text(encoding="utf-8")
    assert f"used {shown}" in (run.folder / "out" / "report.html").read_text(encoding="utf-8")


def test_tokens_below(run):
    assert check(run.case("tokens fail"), "tokens_below 150")["reason"] == (
        "the turn used 150 tokens (120 in, 30 out), the limit is 150"
    )
    unreported = check(run.case("tokens unreported"), "tokens_below 1000")
    assert unreported["status"] == "error"
    assert unreported["reason"].startswith("the endpoint reported no token usage for this turn")
    conversation = run.case("tokens over the conversation")
    assert check(conversation, "tokens_below 166")["status"] == "passed"
    assert check(conversation, "conversation over budget")["reason"] == (
        "the 2 turns used 165 tokens (130 in, 35 out), the limit is 165"
    )
    assert check(conversation, "called_tool find_order 2 times")["status"] == "passed"


def test_regrade_checks_tokens_from_the_stored_transcripts(run, tmp_path):
    (tmp_path / ".git").mkdir()
    for name in ("specengine.yaml", "out/results.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((run.folder / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "spec.yaml").write_text(
        SPEC.replace("tokens_below: 150", "tokens_below: 149"), encoding="utf-8"
    )
    regraded = run_cli(["regrade", "out/results.json", "--output", "out/regraded.json"], cwd=tmp_path)
    results = json.loads((tmp_path / "out" / "regraded.json").read_text(encoding="utf-8"))
    validate_results(results)
    [case] = [case for case in results["cases"] if case["eval"] == "tokens fail"]
    assert (
        case["trials"][0]["checks"][0]["reason"]
        == "the turn used 150 tokens (120 in, 30 out), the limit is 149"
    )
    assert case["usage"] == {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
    assert results["summary"]["usage"] == run.summary["usage"]
    assert regraded.exit_code == 1


# ---------------------------------------------------------------------------------------------------
# Usage from every protocol: streamed chat, Responses, Databricks (chat and streamed)

USAGE_SPEC = """
evals:
  - name: usage
    send: refund
    expect:
      - tokens_below: 1000
      - called_tool_with: {name: refund, args: {amount: {$approx: 59.97, $within: 0.01}}}
"""


@pytest.mark.parametrize(
    ("make", "options", "usage"),
    [
        (AgentServer, {"stream": True}, {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}),
        (ResponsesServer, {}, {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}),
        (ResponsesServer, {"stream": True}, {"input_tokens": 5, "output_tokens": 7, "total_tokens": 12}),
        (
            lambda: DatabricksServer("chat"),
            {"api": "chat"},
            {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
        ),
        (
            lambda: DatabricksServer("chat", streaming=True),
            {"api": "chat", "stream": True},
            {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
        ),
    ],
    ids=["chat streamed", "responses", "responses streamed", "databricks chat", "databricks chat streamed"],
)
def test_usage_is_read_from_each_protocol(tmp_path, make, options, usage):
    with make() as server:
        server.script(agent)
        write_project(tmp_path, endpoints={"agent": server.endpoint(**options)})
        result = run_spec(tmp_path, USAGE_SPEC)
    assert result.exit_code == 0, result.cli.output
    [case] = result.cases
    assert case["usage"] == result.summary["usage"] == usage
    validate_results(result.results)


# ---------------------------------------------------------------------------------------------------
# The example specs against the built-in demo agent


def test_the_orders_example_passes_against_the_demo_and_reports_its_tokens(tmp_path):
    from support.cli import REPO_ROOT

    result = run_cli(["run", "specs/orders.yaml", "--output", str(tmp_path / "orders.json")], cwd=REPO_ROOT)
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    validate_results(results)
    assert results["summary"]["passed"] == results["summary"]["cases"] == 4
    assert all(case["usage"]["total_tokens"] > 0 for case in results["cases"])
    names = [check["name"] for case in results["cases"] for check in case["checks"]]
    assert "tool_calls_in_order find_order → refund (exact)" in names
    assert "called_tool find_order 2 times" in names
