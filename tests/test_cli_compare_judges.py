"""`specengine compare` on runs judged differently: two real runs, then the real compare command.

Each test runs `specengine run` twice against a scripted agent and a scripted judge, changing the
judge (its model, its rubric) or the agent between the runs, and reads what compare prints, its
JSON and its exit code: a changed judge is named, and never counted as the agent's regression.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from support.cli import run_cli
from support.judge_server import JudgeCall, JudgeServer, choose
from support.runs import run_spec, setup_project
from support.servers import Reply
from test_cli_judges import ENV

SPEC = """
    evals:
      - name: greet
        send: hi
        expect:
          - judge: closed_qa
            criteria: {criteria}
"""


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        yield server


def by_model(call: JudgeCall, hit: int) -> Reply:
    """The strict model says no, the lenient one yes: the same reply judged two ways."""
    return choose("N" if call.body["model"] == "judge-strict" else "Y", "Judged.")


def run_with(folder, judge: JudgeServer, model: str, output: str, criteria: str = "Friendly?", spec=SPEC):
    text = spec.replace("{criteria}", criteria) if spec is not None else None
    run = run_spec(
        folder,
        text,
        "--judge-model",
        model,
        "--judge-base-url",
        judge.judge_url,
        env=ENV,
        output=output,
    )
    assert run.results is not None, run.cli.output
    return run


def compare(folder, *args: str):
    return run_cli(["compare", "base.json", "head.json", *args], cwd=folder)


def test_a_new_judge_model_that_fails_a_case_is_not_a_regression(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = by_model
    setup_project(tmp_path, agent_server)
    assert run_with(tmp_path, judge, "judge-lenient", "base.json").status("greet") == "passed"
    assert run_with(tmp_path, judge, "judge-strict", "head.json").status("greet") == "failed"

    text = compare(tmp_path)
    assert text.exit_code == 0, text.output
    assert "0 regressions" in text.stdout and "1 judged differently" in text.stdout
    assert "judged differently (model judge-lenient → judge-strict)" in text.stdout
    assert "Regressions (" not in text.stdout

    data = json.loads(compare(tmp_path, "--json").stdout)
    assert (data["regressed"], data["regressions"]) == (False, [])
    [rejudged] = data["judged_differently"]
    assert (rejudged["id"], rejudged["base_status"], rejudged["head_status"]) == (
        "spec.yaml::greet",
        "passed",
        "failed",
    )
    assert rejudged["judged_differently"] == "model judge-lenient → judge-strict"
    [score] = data["score_changes"]
    assert (score["base"], score["head"]) == (1.0, 0.0)
    assert score["judged_differently"] == "model judge-lenient → judge-strict"

    markdown = compare(tmp_path, "--md", "-").stdout
    assert "Judged differently (1)" in markdown
    assert "judged differently (model judge-lenient → judge-strict)" in markdown


def test_the_same_judge_failing_a_changed_reply_is_a_regression(agent_server, judge, tmp_path):
    judge.script = lambda call, hit: choose("Y" if "Hello" in call.prompt.split("[Submission]")[1] else "N")
    setup_project(tmp_path, agent_server)
    agent_server.script(lambda messages: "Hello!")
    run_with(tmp_path, judge, "judge-lenient", "base.json")
    agent_server.script(lambda messages: "Go away.")
    run_with(tmp_path, judge, "judge-lenient", "head.json")

    text = compare(tmp_path)
    assert text.exit_code == 1, text.output
    assert "1 regression" in text.stdout and "judged differently" not in text.stdout


def test_an_edited_rubric_is_named_as_a_changed_prompt(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = lambda call, hit: choose("N" if "Formal" in call.prompt else "Y")
    setup_project(tmp_path, agent_server)
    run_with(tmp_path, judge, "judge-m", "base.json", criteria="Friendly?")
    assert run_with(tmp_path, judge, "judge-m", "head.json", criteria="Formal?").status("greet") == "failed"

    text = compare(tmp_path)
    assert text.exit_code == 0, text.output
    assert "judged differently (prompt changed)" in text.stdout


def test_a_case_that_also_fails_a_deterministic_check_is_still_a_regression(agent_server, judge, tmp_path):
    judge.script = by_model
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: greet
            send: hi
            expect:
              - includes: Hello
              - judge: closed_qa
                criteria: Friendly?
    """
    agent_server.script(lambda messages: "Hello!")
    run_with(tmp_path, judge, "judge-lenient", "base.json", spec=spec)
    agent_server.script(lambda messages: "Bye!")
    run_with(tmp_path, judge, "judge-strict", "head.json", spec=spec)

    text = compare(tmp_path)
    assert text.exit_code == 1, text.output
    assert "1 regression" in text.stdout
    assert "0 judged differently" not in text.stdout and "1 judged differently" not in text.stdout
    data = json.loads(compare(tmp_path, "--json").stdout)
    assert [item["id"] for item in data["regressions"]] == ["spec.yaml::greet"]
    assert data["judged_differently"] == []


def test_a_run_with_a_baseline_passes_when_only_the_judge_changed(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Hello!")
    judge.script = by_model
    setup_project(tmp_path, agent_server)
    run_with(tmp_path, judge, "judge-lenient", "base.json")
    run = run_spec(
        tmp_path,
        None,
        "--judge-model",
        "judge-strict",
        "--judge-base-url",
        judge.judge_url,
        "--baseline",
        "base.json",
        env=ENV,
        output="head.json",
    )
    assert run.exit_code == 1  # the case failed: that still fails the run
    assert "judged differently (model judge-lenient → judge-strict)" in run.cli.output
    assert "0 regressions" in run.cli.output
