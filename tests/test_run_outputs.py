"""`specengine run` end to end: exit codes, results JSON and JSONL, JUnit, --json, skipped judges, secrets."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import RESULTS, check, run_spec, setup_project, validate_results
from support.servers import Reply


def agent(messages):
    text = messages[-1]["content"]
    if text == "weather":
        return Reply(content="Sunny", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
    if text == "broken":
        return Reply(status=500, body="internal error")
    if text == "ansi":
        return "\x1b[31mred text\x1b[0m with a \x00 nul and <tags> & ampersands"
    return f"You said: {text}"


# ---------------------------------------------------------------------------------------------------
# Exit codes


def test_exit_0_when_every_case_passed_or_was_skipped(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: passes, send: hi, expect: [{includes: hi}]}
          - {name: later, skip: "waiting for the booking tool", send: book, expect: [succeeded]}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    skipped = run.case("later")
    assert skipped["status"] == "skipped"
    assert skipped["skip_reason"] == "waiting for the booking tool"
    assert skipped["trials"] == []
    assert (run.summary["passed"], run.summary["skipped"]) == (1, 1)
    assert agent_server.hits() == 1  # the skipped eval is never sent


@pytest.mark.parametrize(
    ("spec", "status"),
    [
        ("evals: [{name: a, send: hi, expect: [{includes: bye}]}]", "failed"),
        ("evals: [{name: a, send: broken, expect: [succeeded]}]", "error"),
    ],
)
def test_exit_1_when_a_case_failed_or_errored(agent_server, tmp_path, spec, status):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server, retries=0)
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 1
    assert run.status("a") == status


def test_exit_2_on_an_invalid_spec_and_nothing_is_sent(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "good.yaml", "evals: [{name: fine, send: hi, expect: [succeeded]}]")
    write_spec(
        tmp_path,
        "bad.yaml",
        """
        evals:
          - name: typo
            send: hi
            expect:
              - include: hi
          - name: nothing to check
            send: hi
        """,
    )
    run = run_spec(tmp_path, None, paths=["."])
    assert run.exit_code == 2
    assert agent_server.hits() == 0
    assert run.results is None
    assert "bad.yaml:5:" in run.cli.stderr  # the unknown matcher, with its line
    assert "bad.yaml:6:" in run.cli.stderr  # the eval with nothing to check
    assert "Traceback" not in run.cli.output


def test_exit_2_when_a_variable_is_missing_and_nothing_is_sent(agent_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(headers={"Authorization": "Bearer ${NOT_SET_TOKEN}"})},
    )
    run = run_spec(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]", env={"NOT_SET_TOKEN": None})
    assert run.exit_code == 2
    assert "NOT_SET_TOKEN" in run.cli.stderr
    assert agent_server.hits() == 0


MIXED = """
evals:
  - {name: p1, send: a, expect: [{includes: a}]}
  - {name: p2, send: b, expect: [{includes: b}]}
  - {name: p3, send: c, expect: [{includes: c}]}
  - {name: f1, send: d, expect: [{includes: nope}]}
  - {name: s1, skip: later, send: e, expect: [succeeded]}
"""


@pytest.mark.parametrize(("rate", "code"), [("0.75", 0), ("0.7", 0), ("0.8", 1), ("1", 1), ("0", 0)])
def test_min_pass_rate_counts_passed_over_ran(agent_server, tmp_path, rate, code):
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, MIXED, "--min-pass-rate", rate)
    assert run.summary == {**run.summary, "passed": 3, "failed": 1, "skipped": 1}
    assert run.exit_code == code, run.cli.output
    assert "pass rate 75.0%" in " ".join(run.cli.output.split())  # the summary line may wrap


def test_without_min_pass_rate_one_failure_exits_1(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    assert run_spec(tmp_path, MIXED).exit_code == 1


# ---------------------------------------------------------------------------------------------------
# Results JSON, JSONL log, JUnit, --json


RICH = """
suite: weather suite
labels: [smoke]
metadata: {owner: team}
evals:
  - name: sunny
    send: weather
    expect:
      - includes: Sunny
      - called_tool_with: {name: get_weather, args: {city: Paris}}
      - {includes: Rainy, soft: true}
  - name: conversation
    trials: 2
    turns:
      - send: hello
      - reset
      - send: again
        expect: [{includes: again}]
  - name: rows
    send: "{{ input.word }}"
    expect: [{includes: "{{ expected.word }}"}]
    dataset:
      - {id: one, input: {word: alpha}, expected: {word: alpha}}
      - {input: {word: beta}, expected: {word: gamma}}
  - {name: broken, send: broken, expect: [succeeded]}
  - {name: judged, send: hi, expect: [{judge: closed_qa, criteria: Is it polite?}]}
  - {name: skipped, skip: not yet, send: hi, expect: [succeeded]}
  - {name: colours, send: ansi, expect: [{includes: green}]}
"""


@pytest.fixture
def rich_run(agent_server, tmp_path):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server, retries=0)
    return run_spec(tmp_path, RICH, "--junit", "out/junit.xml", "-j", "4")


def test_results_validate_against_the_schema(rich_run):
    assert rich_run.exit_code == 1, rich_run.cli.output
    validate_results(rich_run.results)
    assert [(case["eval"], case["status"]) for case in rich_run.cases] == [
        ("sunny", "passed"),
        ("conversation", "passed"),
        ("rows", "passed"),
        ("rows", "failed"),
        ("broken", "error"),
        ("judged", "skipped"),
        ("skipped", "skipped"),
        ("colours", "failed"),
    ]
    summary = rich_run.summary
    counts = [summary[key] for key in ("cases", "passed", "failed", "errored", "skipped")]
    assert counts == [8, 3, 2, 1, 2]
    sunny = rich_run.case("sunny")
    assert (sunny["suite"], sunny["spec"], sunny["line"], sunny["labels"]) == (
        "weather suite",
        "spec.yaml",
        5,
        ["smoke"],
    )
    assert sunny["trials"][0]["transcript"][1]["tool_calls"] == [
        {"name": "get_weather", "args": {"city": "Paris"}}
    ]


def test_the_jsonl_log_sits_beside_the_results(rich_run):
    log = rich_run.folder / "out" / "results.jsonl"
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert sorted(case["id"] for case in lines) == sorted(rich_run.ids)
    assert len(lines) == len(rich_run.cases)
    by_id = {case["id"]: case for case in lines}
    assert all(by_id[case["id"]] == case for case in rich_run.cases)


def test_a_results_path_without_json_suffix_gets_a_jsonl_log(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, "evals: [{name: a, send: a, expect: [succeeded]}]", output="out/run-results")
    assert run.exit_code == 0, run.cli.output
    assert run.results is not None
    assert (tmp_path / "out" / "run-results.jsonl").is_file()


def test_the_default_output_is_under_dot_specengine(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: a, expect: [succeeded]}]")
    cli = run_cli(["run", "spec.yaml"], cwd=tmp_path)
    assert cli.exit_code == 0, cli.output
    written = list((tmp_path / ".specengine" / "runs").glob("*.json"))
    assert len(written) == 1
    results = json.loads(written[0].read_text(encoding="utf-8"))
    assert written[0].name == f"{results['run_id']}.json"
    assert written[0].with_suffix(".jsonl").is_file()
    validate_results(results)


def test_junit_parses_despite_control_characters_and_points_at_lines(rich_run):
    root = ET.parse(rich_run.folder / "out" / "junit.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "8",
        "2",
        "1",
        "2",
    )
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert set(cases) == set(rich_run.ids)
    colours = cases["spec.yaml::colours"]
    failure = colours.find("failure")
    line = rich_run.case("colours")["trials"][0]["checks"][0]["line"]
    assert f"spec.yaml:{line}" in failure.get("message")
    assert f"spec.yaml:{line}" in failure.text
    out = colours.find("system-out").text
    assert "red text" in out and "\x1b" not in out and "\x00" not in out
    assert cases["spec.yaml::broken"].find("error") is not None
    assert cases["spec.yaml::skipped"].find("skipped").get("message") == "not yet"
    assert cases["spec.yaml::sunny"].find("failure") is None
    # the raw reply is kept intact in the results JSON
    reply = rich_run.case("colours")["trials"][0]["transcript"][1]["content"]
    assert "\x1b[31m" in reply and "\x00" in reply


def test_json_prints_the_results_on_stdout_and_the_report_on_stderr(agent_server, tmp_path):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: good, send: weather, expect: [{includes: Sunny}]}
          - {name: bad, send: weather, expect: [{includes: Snow}]}
        """,
        "--json",
    )
    assert run.exit_code == 1
    printed = json.loads(run.cli.stdout)
    assert printed == run.results
    validate_results(printed)
    assert "2 cases" in run.cli.stderr
    assert "Failures" in run.cli.stderr
    assert "2 cases" not in run.cli.stdout


# ---------------------------------------------------------------------------------------------------
# Judge checks without a judge


def test_judges_without_a_judge_are_skipped_never_passed(agent_server, tmp_path):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: judge only
            send: hi
            expect:
              - {judge: closed_qa, criteria: Is the reply polite?}
          - name: judge and matcher
            send: weather
            expect:
              - includes: Sunny
              - {judge: factuality, expected: It is sunny}
          - name: soft judge
            send: hi
            expect:
              - {judge: closed_qa, criteria: Is it short?, soft: true}
              - includes: hi
        """,
    )
    assert run.exit_code == 0, run.cli.output
    only = run.case("judge only")
    assert only["status"] == "skipped"
    judged = check(only, "judge closed_qa")
    assert (judged["status"], judged["reason"], judged["score"]) == (
        "skipped",
        "no judge configured (--judge-model)",
        None,
    )
    assert run.status("judge and matcher") == "passed"
    assert check(run.case("judge and matcher"), "judge factuality")["status"] == "skipped"
    assert run.status("soft judge") == "passed"
    assert run.summary["gates_skipped"] == 2
    assert run.summary["skipped"] == 1
    assert "2 gates skipped" in run.cli.output
    validate_results(run.results)


# ---------------------------------------------------------------------------------------------------
# Secrets


TOKEN = "tok-9f8e7d6c5b4a-secret"


def test_a_secret_from_the_environment_never_appears_in_any_output(agent_server, tmp_path):
    def leaky(request):
        auth = request.headers.get("authorization", "")
        text = request.json["messages"][-1]["content"]
        if text == "status":
            return Reply(status=401, body={"error": {"message": f"bad credentials {auth}"}})
        return {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"I was sent: {auth}"}}],
        }

    agent_server.route(agent_server.path, leaky)
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(headers={"Authorization": "Bearer ${AGENT_TOKEN}"})},
    )
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: echoed, send: hi, expect: [{includes: nothing like this}, {equals: nope}]}
          - {name: rejected, send: status, expect: [succeeded]}
        """,
        "--junit",
        "out/junit.xml",
        "--json",
        env={"AGENT_TOKEN": TOKEN},
    )
    assert run.exit_code == 1
    assert agent_server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"  # it was sent
    assert run.status("echoed") == "failed"
    assert run.status("rejected") == "error"
    assert "I was sent: Bearer ***" in run.cli.output  # the reply is shown, without the token
    assert "bad credentials Bearer ***" in run.case("rejected")["error"]["message"]
    outputs = {
        "stdout": run.cli.stdout,
        "stderr": run.cli.stderr,
        "results": (tmp_path / RESULTS).read_text(encoding="utf-8"),
        "jsonl": (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8"),
        "junit": (tmp_path / "out" / "junit.xml").read_text(encoding="utf-8"),
    }
    for name, text in outputs.items():
        assert TOKEN not in text, name
        assert "tok-9f8e7d6c5b4a" not in text, name
    leftovers = [
        p for p in Path(tmp_path).rglob("*") if p.is_file() and TOKEN in p.read_text("utf-8", "replace")
    ]
    assert leftovers == []


def test_checks_of_an_errored_trial_are_not_counted_as_skipped_gates(free_port, tmp_path):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"agent": {"protocol": "openai-chat", "url": url, "retries": 0}})
    run = run_spec(tmp_path, "evals: [{name: down, send: hi, expect: [succeeded, {includes: hello}]}]")
    assert run.exit_code == 1
    assert [c["status"] for c in run.case("down")["trials"][0]["checks"]] == ["skipped", "skipped"]
    assert run.summary["gates_skipped"] == 0  # the error is the news, not a missing judge
    assert "gates skipped" not in run.cli.output


def test_a_configured_judge_scores_gates_and_its_key_stays_secret(agent_server, tmp_path):
    from support.judge_server import JudgeServer, choose

    key = "judge-key-31337"
    agent_server.script(agent)
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: judged
            send: weather
            expect:
              - {judge: closed_qa, criteria: Does it give the weather?}
    """
    with JudgeServer(lambda call, hit: choose("Y", reasons=f"It says Sunny. {key}")) as judge:
        args = ("--judge-model", "judge-model", "--judge-base-url", judge.judge_url)
        run = run_spec(tmp_path, spec, *args, env={"OPENAI_API_KEY": key})
        assert run.exit_code == 0, run.cli.output
        verdict = check(run.case("judged"), "judge closed_qa")
        assert (verdict["status"], verdict["score"]) == ("passed", 1.0)
        assert "It says Sunny." in verdict["rationale"]
        assert run.summary["gates_skipped"] == 0
        assert run.summary["judge_calls"] == 1
        assert judge.requests[0].headers["authorization"] == f"Bearer {key}"
        assert "Sunny" in judge.calls[0].prompt  # the judge saw the reply
        for text in (run.cli.output, (tmp_path / RESULTS).read_text(encoding="utf-8")):
            assert key not in text

        remote = ("--judge-base-url", "https://judge.example.com/v1")  # elsewhere: its key is required
        missing = run_spec(tmp_path, None, *args, *remote, "--no-cache", env={"OPENAI_API_KEY": None})
        assert missing.exit_code == 2
        assert "OPENAI_API_KEY is not set" in missing.cli.stderr
        assert judge.hits() == 1  # no call without a key
