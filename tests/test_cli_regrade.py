"""`specengine regrade RESULTS` end to end: the current specs' checks on stored transcripts, no agent call.

Each test runs the real CLI twice in its own tmp_path: `run` against a scripted agent (and, where
judges are involved, a scripted judge), then, after editing the spec, `regrade` on the results the
run wrote. The agent server's hit count proves that regrade never calls the agent.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliResult, run_cli, write_project, write_spec
from support.judge_server import JudgeServer, choose
from support.runs import RESULTS, check, run_spec, setup_project, validate_results
from support.servers import Reply
from test_cli_judges import ENV, KEY, NO_JUDGE, ONE_QA, judge_args, run_judged, section

REGRADED = "out/regraded.json"


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer(lambda call, hit: choose(call.enum[0], f"Verdict {hit}.")) as server:
        yield server


class Regrade:
    """A finished `specengine regrade`: what it printed and the results it wrote (or None)."""

    def __init__(self, cli: CliResult, results: dict[str, Any] | None):
        self.cli = cli
        self.results = results

    @property
    def exit_code(self) -> int:
        return self.cli.exit_code

    def case(self, suffix: str) -> dict[str, Any]:
        assert self.results is not None, self.cli.output
        found = [c for c in self.results["cases"] if c["id"] == suffix or c["id"].endswith("::" + suffix)]
        assert len(found) == 1, (suffix, [c["id"] for c in self.results["cases"]])
        return found[0]

    def status(self, suffix: str) -> str:
        return self.case(suffix)["status"]


def regrade(
    folder: Path, *args: str, results: str = RESULTS, output: str = REGRADED, env: Mapping[str, Any] = ENV
) -> Regrade:
    cli = run_cli(["regrade", results, "--output", output, *args], cwd=folder, env=env)
    path = folder / output
    return Regrade(cli, json.loads(path.read_text(encoding="utf-8")) if path.exists() else None)


def weather(messages: list[dict[str, Any]]) -> Reply | str:
    text = messages[-1]["content"]
    if text == "weather":
        return Reply(content="Sunny, 21 °C", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
    return f"You said: {text}"


# ---------------------------------------------------------------------------------------------------
# Deterministic checks


def test_a_changed_includes_changes_the_outcome_without_calling_the_agent(agent_server, tmp_path):
    agent_server.script(weather)
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: forecast
            send: weather
            expect:
              - includes: Sunny
              - called_tool_with: {name: get_weather, args: {city: Paris}}
          - name: echo
            send: hello
            expect: [{includes: hello}]
    """
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    assert agent_server.hits() == 2

    write_spec(tmp_path, "spec.yaml", spec.replace("includes: Sunny", "includes: Rainy"))
    again = regrade(tmp_path, "--junit", "out/regraded.xml")
    assert again.exit_code == 1, again.cli.output
    assert agent_server.hits() == 2  # no agent request
    validate_results(again.results)
    forecast = again.case("forecast")
    assert forecast["status"] == "failed"
    rainy = check(forecast, 'includes "Rainy"')
    assert (rainy["status"], rainy["got"]) == ("failed", "Sunny, 21 °C")
    assert (
        check(forecast, 'called_tool_with get_weather {"city": "Paris"}')["status"] == "passed"
    )  # tool calls kept
    assert again.status("echo") == "passed"
    assert forecast["trials"][0]["transcript"] == run.case("forecast")["trials"][0]["transcript"]
    assert again.results["run_id"] != run.results["run_id"]
    assert again.results["selection"] == run.results["selection"]  # still the cases that run selected
    assert json.loads((tmp_path / RESULTS).read_text(encoding="utf-8")) == run.results  # untouched
    assert "spec.yaml:5:" in again.cli.output and 'includes "Rainy"' in again.cli.output

    root = ET.parse(tmp_path / "out" / "regraded.xml").getroot()
    failed = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert failed == ["spec.yaml::forecast"]

    # and back: the original text passes again
    write_spec(tmp_path, "spec.yaml", spec)
    back = regrade(tmp_path)
    assert back.exit_code == 0, back.cli.output
    assert back.status("forecast") == "passed"
    assert agent_server.hits() == 2


def test_regrade_json_prints_the_new_results_on_stdout(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = "evals: [{name: echo, send: hello, expect: [{includes: hello}]}]"
    run_spec(tmp_path, spec)
    write_spec(tmp_path, "spec.yaml", spec.replace("includes: hello", "includes: goodbye"))
    again = regrade(tmp_path, "--json")
    assert again.exit_code == 1
    printed = json.loads(again.cli.stdout)
    assert printed == again.results
    assert printed["cases"][0]["status"] == "failed"
    assert "Failures" in again.cli.stderr and "Failures" not in again.cli.stdout
    assert agent_server.hits() == 1


def test_regrade_without_output_writes_a_new_results_file(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run_spec(tmp_path, "evals: [{name: echo, send: hello, expect: [{includes: hello}]}]")
    cli = run_cli(["regrade", RESULTS], cwd=tmp_path, env=ENV)
    assert cli.exit_code == 0, cli.output
    written = list((tmp_path / ".specengine" / "runs").glob("*.json"))
    assert len(written) == 1
    assert f"results: {written[0].relative_to(tmp_path)}" in cli.output
    assert json.loads(written[0].read_text(encoding="utf-8"))["cases"][0]["status"] == "passed"


def test_strict_regrade_makes_soft_checks_gates(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path, "evals: [{name: e, send: hi, expect: [{includes: hi}, {includes: zz, soft: true}]}]"
    )
    assert run.exit_code == 0, run.cli.output
    assert regrade(tmp_path).exit_code == 0
    strict = regrade(tmp_path, "--strict")
    assert strict.exit_code == 1
    assert strict.status("e") == "failed"
    assert agent_server.hits() == 1


def test_an_errored_trial_stays_errored_and_its_checks_do_not_run(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(status=500, body="down"))
    setup_project(tmp_path, agent_server, retries=0)
    run = run_spec(tmp_path, "evals: [{name: down, send: hi, expect: [{includes: hi}]}]")
    assert run.status("down") == "error"
    again = regrade(tmp_path)
    assert again.exit_code == 1
    assert again.status("down") == "error"
    assert [c["status"] for c in again.case("down")["trials"][0]["checks"]] == ["skipped"]
    assert agent_server.hits() == 1


def test_every_trial_and_dataset_row_is_regraded(agent_server, tmp_path):
    replies = iter(["a yes", "a no", "b yes", "b no"])
    agent_server.script(lambda messages: next(replies))
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: rows
            trials: 2
            pass_rate: 0.5
            send: "{{ input.q }}"
            dataset: [{id: a, input: {q: qa}}, {id: b, input: {q: qb}}]
            expect: [{includes: "yes"}]
    """
    run = run_spec(tmp_path, spec, "-j", "1")
    assert run.exit_code == 0, run.cli.output
    write_spec(tmp_path, "spec.yaml", spec.replace('includes: "yes"', 'includes: "no"'))
    again = regrade(tmp_path)
    for row in ("rows[a]", "rows[b]"):
        old = [t["transcript"][1]["content"] for t in run.case(row)["trials"]]
        statuses = [t["status"] for t in again.case(row)["trials"]]
        assert statuses == ["passed" if "no" in reply else "failed" for reply in old]
        assert again.case(row)["passed_trials"] == 1
        assert again.status(row) == "passed"
    assert agent_server.hits() == 4


# ---------------------------------------------------------------------------------------------------
# Renamed and removed evals


def test_a_renamed_or_removed_eval_is_reported_not_dropped_silently(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - {name: kept, send: a, expect: [{includes: a}]}
          - {name: old name, send: b, expect: [{includes: b}]}
          - {name: removed, send: c, expect: [{includes: c}]}
    """
    run_spec(tmp_path, spec)
    renamed = """
        evals:
          - {name: kept, send: a, expect: [{includes: a}]}
          - {name: new name, send: b, expect: [{includes: b}]}
    """
    write_spec(tmp_path, "spec.yaml", renamed)
    again = regrade(tmp_path)
    assert "spec.yaml::old name" in again.cli.stderr
    assert "spec.yaml::removed" in again.cli.stderr
    assert "2 cases" in again.cli.stderr and "not regraded" in again.cli.stderr
    assert "1 cases of the specs are not in" in " ".join(again.cli.stderr.split())  # new name: never run
    assert again.status("kept") == "passed"
    assert agent_server.hits() == 3


def test_regrade_of_a_missing_results_file_is_a_usage_error(tmp_path):
    cli = run_cli(["regrade", "nope.json"], cwd=tmp_path)
    assert cli.exit_code == 2
    assert "nope.json" in cli.stderr
    assert "Traceback" not in cli.output


# ---------------------------------------------------------------------------------------------------
# Judges in regrade


def test_a_changed_judge_threshold_regrades_from_the_cache(agent_server, judge, tmp_path):
    judge.script = lambda call, hit: choose("A", "A subset of the expert answer.")  # factuality 0.4
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: fact
            send: hi
            expect:
              - {judge: factuality, expected: "You said: hi, twice", at_least: 0.4}
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    assert judge.hits() == 1

    write_spec(tmp_path, "spec.yaml", spec.replace("at_least: 0.4", "at_least: 0.6"))
    again = regrade(tmp_path, *judge_args(judge))
    assert again.exit_code == 1, again.cli.output
    verdict = check(again.case("fact"), "judge factuality")
    assert (verdict["status"], verdict["score"], verdict["cached"]) == ("failed", 0.4, True)
    assert verdict["rationale"] == "A subset of the expert answer."
    assert verdict["threshold"] == {"gte": 0.6}
    assert "judge:    A subset of the expert answer." in again.cli.output
    assert judge.hits() == 1  # same question, same reply: the stored verdict
    assert again.results["summary"]["judge_cache_hits"] == 1
    assert agent_server.hits() == 1

    fresh = regrade(tmp_path, *judge_args(judge), "--no-cache")
    assert judge.hits() == 2
    assert check(fresh.case("fact"), "judge factuality")["cached"] is False


def test_a_judge_check_added_after_the_run_is_graded_by_regrade(agent_server, judge, tmp_path):
    agent_server.script(weather)
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: forecast
            send: weather
            expect:
              - includes: Sunny
    """
    run = run_spec(tmp_path, spec)  # no judge at all in this run
    assert run.exit_code == 0, run.cli.output
    added = spec + "          - {judge: closed_qa, criteria: Does it give a temperature?}\n"
    write_spec(tmp_path, "spec.yaml", added)

    unjudged = regrade(tmp_path)
    assert check(unjudged.case("forecast"), "judge closed_qa")["reason"] == NO_JUDGE
    assert unjudged.status("forecast") == "passed"  # its other gate passed
    assert unjudged.results["summary"]["gates_skipped"] == 1
    assert judge.hits() == 0

    again = regrade(tmp_path, *judge_args(judge))
    assert again.exit_code == 0, again.cli.output
    verdict = check(again.case("forecast"), "judge closed_qa")
    assert (verdict["status"], verdict["rationale"]) == ("passed", "Verdict 1.")
    [call] = judge.calls
    assert section(call.prompt, "Task") == "weather"
    assert section(call.prompt, "Submission") == "Sunny, 21 °C"
    assert again.results["summary"]["judge_calls"] == 1
    assert agent_server.hits() == 1


def test_regrade_reads_the_judge_from_the_project_block(agent_server, judge, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        judge={"model": "block-model", "base_url": judge.judge_url, "api_key_env": "REGRADE_KEY"},
    )
    spec = "evals: [{name: a, send: hi, expect: [{judge: closed_qa, criteria: Polite?}]}]"
    run_spec(tmp_path, spec, env={"REGRADE_KEY": KEY})
    again = regrade(tmp_path, "--no-cache", env={"REGRADE_KEY": KEY})
    assert again.exit_code == 0, again.cli.output
    assert [call.body["model"] for call in judge.calls] == ["block-model", "block-model"]
    remote = ("--judge-base-url", "https://judge.example.com/v1")  # a judge elsewhere needs its key
    missing = regrade(tmp_path, "--no-cache", *remote, env={"REGRADE_KEY": None})
    assert missing.exit_code == 2, missing.cli.output
    assert "REGRADE_KEY is not set" in missing.cli.stderr
    assert judge.hits() == 2
    assert agent_server.hits() == 1


def test_a_conversation_judge_sees_the_same_transcript_in_regrade(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: chat
            turns:
              - send: before the reset
              - reset
              - send: first
              - send: second
                expect:
                  - {judge: closed_qa, criteria: Consistent?, scope: conversation}
    """
    run = run_judged(tmp_path, judge, spec, "--no-cache")
    assert run.exit_code == 0, run.cli.output
    again = regrade(tmp_path, *judge_args(judge), "--no-cache")
    assert again.exit_code == 0, again.cli.output
    first, second = judge.calls
    assert second.prompt == first.prompt
    assert "before the reset" not in second.prompt
    assert "first" in section(second.prompt, "Task")
    assert agent_server.hits() == 3


def test_the_judge_key_stays_out_of_regrade_output(agent_server, tmp_path):
    with JudgeServer(lambda call, hit: choose("N", f"I can see {KEY}.")) as judge:
        setup_project(tmp_path, agent_server)
        run_judged(tmp_path, judge, ONE_QA)
        again = regrade(tmp_path, *judge_args(judge), "--no-cache", "--junit", "out/r.xml")
    assert again.exit_code == 1
    assert check(again.case("a"), "judge closed_qa")["rationale"]
    for text in (
        again.cli.output,
        (tmp_path / REGRADED).read_text(),
        (tmp_path / "out" / "r.xml").read_text(),
    ):
        assert KEY not in text


def test_regrade_does_not_need_the_agent_endpoint_variables(agent_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(headers={"Authorization": "Bearer ${AGENT_TOKEN}"})},
    )
    run = run_spec(
        tmp_path, "evals: [{name: a, send: hi, expect: [{includes: hi}]}]", env={"AGENT_TOKEN": "t0k"}
    )
    assert run.exit_code == 0, run.cli.output
    again = regrade(tmp_path, env={"AGENT_TOKEN": None})
    assert again.exit_code == 0, again.cli.output
    assert again.status("a") == "passed"


def test_regrade_that_matches_no_case_is_a_usage_error_not_a_pass(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run_spec(tmp_path, "evals: [{name: before, send: hi, expect: [{includes: hi}]}]")
    write_spec(tmp_path, "spec.yaml", "evals: [{name: after, send: hi, expect: [{includes: hi}]}]")
    again = regrade(tmp_path)
    assert again.exit_code == 2, again.cli.output  # nothing was regraded: never a green run
    assert "spec.yaml::before" in again.cli.stderr
    assert "nothing was regraded" in " ".join(again.cli.stderr.split())
    assert agent_server.hits() == 1


# ---------------------------------------------------------------------------------------------------
# Which stored cases regrade grades, skips, or counts as missing (regrade_cases on its own)


def _planned(name: str, skip: str | None = None):
    from specengine.plan import Case, Check, Source, Step

    check = Check(matcher="includes", argument="hi", name="c", source=Source("s.yaml", 3), named=True)
    return Case(
        id=f"s.yaml::{name}", index=0, suite="s", spec="s.yaml", eval_name=name, line=1, endpoint="agent",
        steps=(Step("send", "hi", (check,)),), variables={}, skip=skip,
    )  # fmt: skip


def test_regrade_cases_grades_what_is_stored_and_counts_the_rest():
    import asyncio

    from specengine.grade.regrade import regrade_cases
    from specengine.plan import JudgeConfig
    from specengine.results.decode import read_case

    end = {"step": 0, "stop_reason": "goal_reached", "turns": 1, "user": "u", "goal": "g", "simulator": None}
    transcript = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hi there"}]
    trial = {"transcript": transcript, "error": None, "attempts": 2, "simulations": [end]}
    stored = {
        case_id: read_case({"id": case_id, "status": "passed", "trials": trials})
        for case_id, trials in (
            ("s.yaml::gone", []),  # stored without trials: missing, like one not stored at all
            ("s.yaml::kept", [trial]),
            ("s.yaml::later", []),
            ("s.yaml::renamed", [trial]),  # no longer planned: orphaned
            ("s.yaml::once", [{"transcript": transcript}]),  # tried once: no attempts written
        )
    }
    cases = [
        _planned("gone"),
        _planned("absent"),
        _planned("later", skip="not yet"),
        _planned("kept"),
        _planned("once"),
    ]
    results: list = []
    report = asyncio.run(
        regrade_cases(cases, stored, results.append, strict=False, judge=None, judge_config=JudgeConfig())
    )
    assert (report.regraded, report.orphaned, report.not_in_results) == (
        3, ("s.yaml::gone", "s.yaml::renamed"), 2,
    )  # fmt: skip
    written = {result.case.eval_name: result.as_dict() for result in results}
    assert sorted(written) == ["kept", "later", "once"]
    assert "attempts" not in written["once"]["trials"][0]
    assert (written["later"]["status"], written["later"]["skip_reason"]) == ("skipped", "not yet")
    [regraded] = written["kept"]["trials"]
    assert (regraded["status"], regraded["attempts"], regraded["simulations"]) == ("passed", 2, [end])
