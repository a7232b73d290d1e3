"""Sampled, taught and named judges end to end: `specengine run` with a scripted agent and judge.

The real CLI runs against a scripted agent and a scripted judge on loopback; the tests read what the
judge was asked, how often, and the results JSON (held to schemas/results.schema.json).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from support.cli import write_project
from support.judge_server import JudgeCall, JudgeServer, choose, plain_text
from support.runs import check, run_spec, validate_results
from support.servers import Reply
from test_cli_judges import ENV, MODEL, judge_args, run_judged

from specengine.judge.prompts import prompt_hash
from specengine.plan import JudgeSpec

QA_SAMPLES = """
    evals:
      - name: a
        send: hi
        expect:
          - judge: closed_qa
            criteria: Is it friendly?
            samples: 3
"""


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        yield server


def yes_no_yes(call: JudgeCall, hit: int) -> Reply:
    """Y, N, Y, … by arrival: the same question, answered differently (as a sampled model does)."""
    return choose("N" if hit % 3 == 2 else "Y", f"answer {hit}")


def project(folder, agent_server, **more: Any) -> None:
    write_project(folder, endpoints={"agent": agent_server.endpoint()}, **more)


def test_samples_that_disagree_pass_by_majority_and_are_uncertain(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = yes_no_yes
    project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, QA_SAMPLES)
    assert run.exit_code == 0, run.cli.output
    validate_results(run.results)
    result = check(run.case("a"), "judge closed_qa")
    assert judge.hits() == 3
    assert (result["status"], result["score"], result["spread"], result["uncertain"]) == (
        "passed",
        1.0,
        1.0,
        True,
    )
    assert sorted(sample["choice"] for sample in result["samples"]) == ["N", "Y", "Y"]
    assert sorted(sample["rationale"] for sample in result["samples"]) == ["answer 1", "answer 2", "answer 3"]
    assert result["reason"].startswith("closed_qa score 1.00 (choice Y in 2 of 3 samples: ")
    assert run.case("a")["checks"][0]["uncertain"] is True

    # a re-run asks the judge nothing: every sample is its own cache entry
    again = run_judged(tmp_path, judge, None, env=ENV)
    assert judge.hits() == 3
    repeated = check(again.case("a"), "judge closed_qa")
    assert [s["choice"] for s in repeated["samples"]] == [s["choice"] for s in result["samples"]]
    assert all(sample["cached"] for sample in repeated["samples"]) and repeated["cached"] is True


def test_samples_that_agree_are_certain(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, QA_SAMPLES)
    result = check(run.case("a"), "judge closed_qa")
    assert (result["status"], result["spread"], result["uncertain"]) == ("passed", 0.0, False)
    assert "uncertain" not in run.case("a")["checks"][0]


def test_graded_samples_are_averaged(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = lambda call, hit: choose(["A", "B", "C"][(hit - 1) % 3])
    project(tmp_path, agent_server)
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: custom
                prompt: "Reply: {{ reply }}. (A) great (B) fine (C) bad?"
                choices: {A: 1.0, B: 0.5, C: 0.0}
                samples: 3
                at_least: 0.6
    """
    run = run_judged(tmp_path, judge, spec)
    result = check(run.case("a"), "judge custom")
    assert result["score"] == pytest.approx(0.5)
    assert (result["status"], result["spread"], result["uncertain"]) == ("failed", 1.0, True)
    assert "mean of 3 samples" in result["reason"]


def test_the_project_sets_the_default_samples_and_a_check_overrides_it(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    project(tmp_path, agent_server, judge={"model": MODEL, "base_url": judge.judge_url, "samples": 3})
    spec = """
        evals:
          - name: three
            send: hi
            expect: [{judge: closed_qa, criteria: Friendly?}]
          - name: one
            send: hello
            expect: [{judge: closed_qa, criteria: Friendly?, samples: 1}]
    """
    run = run_spec(tmp_path, spec, env=ENV)
    assert run.exit_code == 0, run.cli.output
    assert len(check(run.case("three"), "judge closed_qa")["samples"]) == 3
    assert "samples" not in check(run.case("one"), "judge closed_qa")
    assert judge.hits() == 4


def test_a_sample_that_fails_makes_the_check_an_error_and_keeps_the_others(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = lambda call, hit: plain_text() if hit == 2 else choose("Y")
    project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, QA_SAMPLES)
    assert run.exit_code == 1
    result = check(run.case("a"), "judge closed_qa")
    assert result["status"] == "error"
    assert result["reason"].startswith("sample ")
    assert " of 3: the judge answered without calling select_choice" in result["reason"]
    assert sorted(str(s["score"]) for s in result["samples"]) == ["1.0", "1.0", "None"]
    # the two answered samples were cached: a re-run asks only for the missing one
    judge.script = lambda call, hit: choose("Y")
    again = run_judged(tmp_path, judge, None, env=ENV)
    assert check(again.case("a"), "judge closed_qa")["status"] == "passed"
    assert judge.hits() == 4


NAMED = {
    "polite": {
        "criteria": "Is the reply polite to {{ input.name }}?",
        "model": "judge-big",
        "samples": 2,
        "examples": [{"input": "Hi", "output": "Go away.", "choice": "N", "why": "It is rude."}],
    }
}


def test_a_named_judge_brings_its_rubric_model_samples_and_examples(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello Ada!")
    project(tmp_path, agent_server, judges=NAMED)
    spec = """
        evals:
          - name: a
            input: {name: Ada}
            send: hi
            expect:
              - judge: polite
                examples: [{output: "Hello!", choice: Y}]
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    validate_results(run.results)
    assert judge.hits() == 2
    assert [call.body["model"] for call in judge.calls] == ["judge-big", "judge-big"]
    prompt = judge.calls[0].prompt
    assert "[Criterion]: Is the reply polite to Ada?" in prompt
    examples = prompt.split("[END EXAMPLES]")[0]
    assert "[Output]: Go away.\n[Right choice]: N\n[Why]: It is rude." in examples
    assert examples.index("Go away.") < examples.index("[Output]: Hello!")  # the judge's, then the check's
    result = check(run.case("a"), "judge polite")
    spec_as_written = JudgeSpec(
        "closed_qa",
        criteria=NAMED["polite"]["criteria"],
        examples=_examples(NAMED["polite"]["examples"], [{"output": "Hello!", "choice": "Y"}]),
    )
    assert result["judge"]["name"] == "polite"
    assert result["judge"]["model"] == "judge-big"
    assert result["judge"]["prompt_hash"] == prompt_hash(spec_as_written)
    assert len(result["samples"]) == 2


def _examples(*groups: list[dict[str, Any]]):
    from specengine.compile.judge_specs import judge_examples

    return judge_examples([item for group in groups for item in group])


def test_every_judge_result_is_pinned(agent_server, judge, tmp_path):
    from autoevals.version import VERSION

    agent_server.script(lambda messages: "Hello!")
    project(tmp_path, agent_server)
    run = run_judged(
        tmp_path, judge, "evals: [{name: a, send: hi, expect: [{judge: closed_qa, criteria: Ok?}]}]"
    )
    assert check(run.case("a"), "judge closed_qa")["judge"] == {
        "model": MODEL,
        "prompt_hash": prompt_hash(JudgeSpec("closed_qa", criteria="Ok?")),
        "autoevals": VERSION,
        "temperature": 0.0,  # the sampling sent: a changed setting is a changed judge
    }


def test_trials_show_the_judges_mean_and_spread(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = lambda call, hit: choose("Y" if hit == 1 else "N")
    project(tmp_path, agent_server)
    spec = """
        evals:
          - name: a
            send: hi
            trials: 2
            expect: [{judge: closed_qa, criteria: Friendly?}]
    """
    run = run_judged(tmp_path, judge, spec, "--no-cache", "--md", "out/summary.md")
    validate_results(run.results)
    assert run.status("a") == "failed"
    [row] = run.case("a")["checks"]
    assert (row["score"], row["spread"]) == (0.5, 1.0)
    assert "uncertain" not in row  # one sample per trial: the trials differ, no sample disagreed
    console = " ".join(run.cli.output.split())
    assert "trials: mean 0.50, spread 1.00 across 2 trials" in console
    markdown = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "(failed in 1 of 2 trials; mean 0.50, spread 1.00)" in markdown


def test_run_validates_named_judges_before_anything_runs(agent_server, judge, tmp_path):
    project(tmp_path, agent_server, judges=NAMED)
    run = run_spec(
        tmp_path, "evals: [{name: a, send: hi, expect: [{judge: polit}]}]", *judge_args(judge), env=ENV
    )
    assert run.exit_code == 2
    assert "unknown judge 'polit' - did you mean 'polite'?" in run.cli.output
    assert agent_server.hits() == 0 and judge.hits() == 0


def test_an_uncertain_check_is_marked_in_every_report(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = yes_no_yes
    project(tmp_path, agent_server)
    spec = (
        QA_SAMPLES
        + """
      - name: b
        send: hello
        expect:
          - judge: closed_qa
            criteria: Is it formal?
            samples: 3
    """
    )
    args = ("--junit", "out/junit.xml", "--md", "out/summary.md", "--html", "out/report.html")
    run = run_judged(tmp_path, judge, spec, *args, "--format", "github")
    validate_results(run.results)
    doubted = [case["id"] for case in run.cases if case["checks"][0].get("uncertain")]
    assert doubted, "some case's samples disagreed"  # six samples, answers Y N Y Y N Y in some order
    console = " ".join(run.cli.output.split())
    assert f"Uncertain judges ({len(doubted)})" in console
    assert f"in {doubted[0]} [" in console and ", uncertain]: samples " in console
    assert "(spread 1.00)" in console
    assert f"{len(doubted)} uncertain check" in console

    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    marked = {
        tc.get("name")
        for tc in root.iter("testcase")
        if any(p.get("name") == "uncertain" for p in tc.iter("property"))
    }
    assert marked == set(doubted)

    markdown = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert f"Uncertain judges ({len(doubted)})" in markdown
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert f"uncertain judges {len(doubted)}" in html
    assert '"uncertain":["judge closed_qa: samples ' in html

    warnings = [line for line in run.cli.stdout.splitlines() if line.startswith("::warning")]
    passed_doubted = [case_id for case_id in doubted if run.status(case_id.split("::")[1]) == "passed"]
    assert len(warnings) == len(passed_doubted)


def test_a_failed_uncertain_check_says_so_beside_its_failure(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = lambda call, hit: choose("Y" if hit == 1 else "N", f"answer {hit}")
    project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, QA_SAMPLES, "--junit", "out/junit.xml")
    assert run.status("a") == "failed"
    console = run.cli.output
    assert "judge closed_qa [failed, uncertain]" in console
    [picks] = re.findall(
        r"samples: (\w, \w, \w) \(the judge's samples disagreed\)", " ".join(console.split())
    )
    assert sorted(picks.split(", ")) == ["N", "N", "Y"]
    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    failure = next(tc.find("failure") for tc in root.iter("testcase"))
    assert "[uncertain: the judge's samples disagreed]" in failure.get("message")
