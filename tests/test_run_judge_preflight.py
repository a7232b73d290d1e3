"""The judge is checked before the agent is called, and judge checks that did not run are never shown
as a plain pass.

End to end through the real CLI with a scripted agent and a scripted judge on 127.0.0.1: a key that
is missing or refused and a judge that does not answer stop the run before the first agent request
(exit 2, the judge's URL named); `--require-judge` and `judge.required: true` make judge checks
that would be skipped a usage error; and a passed case whose judge check was skipped is shown as
such in the console, Markdown, JUnit and HTML.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from support.cli import run_cli, write_project
from support.judge_server import JudgeServer, choose, status
from support.runs import run_spec

KEY = "sk-judge-SECRET-5a1b2c3d"
SPEC = """
evals:
  - name: judged
    send: hi
    expect:
      - includes: hi
      - judge: closed_qa
        criteria: Is it polite?
  - name: plain
    send: hello
    expect: [{includes: hello}]
"""
NOTHING_SENT = "Nothing was sent to the agent."


@pytest.fixture
def judge():
    with JudgeServer(lambda call, hit: choose("Y", "Polite.")) as server:
        yield server


def project(folder, agent, **judge_block):
    write_project(folder, endpoints={"agent": agent.endpoint()}, judge=judge_block or None)


# --- --require-judge and judge.required -----------------------------------------------------------


@pytest.mark.parametrize("how", ["flag", "project"])
def test_required_judge_without_a_model_is_exit_2_before_the_agent(agent_server, tmp_path, how):
    if how == "flag":
        project(tmp_path, agent_server)
        args = ("--require-judge",)
    else:
        project(tmp_path, agent_server, required=True)
        args = ()
    run = run_spec(tmp_path, SPEC, *args)
    assert run.exit_code == 2, run.cli.output
    assert run.cli.stderr == (
        "error: judge required, but no judge model is named: 1 judge check in 1 case would be skipped. "
        f"Name one with judge.model in specengine.yaml or --judge-model. {NOTHING_SENT}\n"
    )
    assert run.results is None
    assert agent_server.hits() == 0


def test_required_judge_is_no_obstacle_without_judge_checks_or_with_a_judge(agent_server, judge, tmp_path):
    project(tmp_path, agent_server, required=True)
    plain = run_spec(tmp_path, SPEC, "-k", "plain")
    assert plain.exit_code == 0, plain.cli.output
    judged = run_spec(
        tmp_path,
        None,
        "--judge-model",
        "m",
        "--judge-base-url",
        judge.judge_url,
        env={"OPENAI_API_KEY": KEY},
    )
    assert judged.exit_code == 0, judged.cli.output
    assert judge.hits() == 1


def test_regrade_requires_the_judge_too(agent_server, tmp_path):
    project(tmp_path, agent_server)
    first = run_spec(tmp_path, SPEC)
    assert first.exit_code == 0
    again = run_cli(["regrade", "out/results.json", "-o", "out/again.json", "--require-judge"], cwd=tmp_path)
    assert again.exit_code == 2
    assert again.stderr.startswith("error: judge required, but no judge model is named")
    assert not (tmp_path / "out" / "again.json").exists()


# --- the judge is checked before the first agent request ------------------------------------------


def test_an_unreachable_judge_is_named_with_its_url_and_nothing_is_sent(agent_server, tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/v1"
    project(tmp_path, agent_server, model="m", base_url=url)
    run = run_spec(tmp_path, SPEC, env={"OPENAI_API_KEY": KEY})
    assert run.exit_code == 2
    assert run.cli.stderr.startswith(f"error: the judge at {url} cannot be reached (ConnectError: ")
    assert "Check judge.base_url in specengine.yaml, or --judge-base-url." in run.cli.stderr
    assert agent_server.hits() == 0


def test_a_refused_key_is_reported_before_the_agent_and_the_key_is_never_shown(agent_server, judge, tmp_path):
    judge.route("/v1/models", lambda request: status(401, f"Incorrect API key provided: {KEY}"), method="GET")
    project(tmp_path, agent_server, model="m", base_url=judge.judge_url)
    run = run_spec(tmp_path, SPEC, env={"OPENAI_API_KEY": KEY})
    assert run.exit_code == 2
    assert run.cli.stderr.startswith(
        f"error: the judge at {judge.judge_url} refused the key in OPENAI_API_KEY (HTTP 401: "
    )
    assert KEY not in run.cli.output
    assert [probe.headers["authorization"] for probe in judge.probes] == [f"Bearer {KEY}"]
    assert (judge.hits(), agent_server.hits()) == (0, 0)


@pytest.mark.parametrize("code", [404, 500])
def test_a_judge_that_answers_its_model_list_with_an_error_stops_the_run_naming_the_url(
    agent_server, judge, tmp_path, code
):
    """Pointed at an agent's own address, the probe got a 404 and every case was paid for before
    each judge check errored: any HTTP error now stops the run, with the URL and the fix."""
    judge.route("/v1/models", lambda request: status(code, "no such route"), method="GET")
    project(tmp_path, agent_server, model="m", base_url=judge.judge_url)
    run = run_spec(tmp_path, SPEC, env={"OPENAI_API_KEY": KEY})
    assert run.exit_code == 2, run.cli.output
    assert run.cli.stderr.startswith(
        f"error: the judge at {judge.judge_url} answered GET {judge.judge_url}/models with HTTP {code}: "
    )
    assert "judge.base_url must be the root of an OpenAI-compatible API" in run.cli.stderr
    assert run.cli.stderr.rstrip().endswith(NOTHING_SENT)
    assert (len(judge.probes), judge.hits(), agent_server.hits()) == (1, 0, 0)


def test_a_secret_in_the_judge_url_is_redacted_in_the_message(agent_server, tmp_path, free_port):
    project(
        tmp_path, agent_server, model="m", base_url=f"http://127.0.0.1:{free_port}/${{JUDGE_ROUTE_TOKEN}}/v1"
    )
    run = run_spec(tmp_path, SPEC, env={"OPENAI_API_KEY": KEY, "JUDGE_ROUTE_TOKEN": "route-SECRET-99"})
    assert run.exit_code == 2
    assert f"the judge at http://127.0.0.1:{free_port}/***/v1 cannot be reached" in run.cli.stderr
    assert "route-SECRET-99" not in run.cli.output


def test_no_judge_check_selected_means_no_judge_check(agent_server, tmp_path, free_port):
    project(tmp_path, agent_server, model="m", base_url=f"http://127.0.0.1:{free_port}/v1")
    run = run_spec(tmp_path, SPEC, "-k", "plain", env={"OPENAI_API_KEY": None})
    assert run.exit_code == 0, run.cli.output


# --- a pass without its judge checks is shown as such ---------------------------------------------


def test_a_passed_case_whose_judge_check_was_skipped_is_not_a_plain_pass(agent_server, tmp_path):
    project(tmp_path, agent_server)
    run = run_spec(
        tmp_path, SPEC, "--md", "out/summary.md", "--junit", "out/junit.xml", "--html", "out/r.html"
    )
    assert run.exit_code == 0, run.cli.output
    assert run.status("judged") == "passed"  # its gate that ran passed: the outcome rules are unchanged

    assert "2 cases: 2 passed (1 with judge checks skipped), 0 failed, 0 errored, 0 skipped" in run.cli.stdout

    markdown = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "**2** passed (1 with judge checks skipped)" in markdown
    assert "<details><summary>Passed, 1 with judge checks skipped</summary>" in markdown
    assert "- ⏭️ judged: judge closed\\_qa (`spec.yaml:6`): no judge configured (--judge-model)" in markdown

    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert (root.get("tests"), root.get("skipped")) == ("2", "1")
    cases = {tc.get("name"): tc for tc in root.iter("testcase")}
    skipped = cases["spec.yaml::judged"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == (
        "passed, but 1 judge check skipped: judge closed_qa (spec.yaml:6): "
        "no judge configured (--judge-model)"
    )
    assert list(cases["spec.yaml::plain"]) == []  # a plain pass stays plain

    html = (tmp_path / "out" / "r.html").read_text(encoding="utf-8")
    data = json.loads(html.split('id="specengine-data">', 1)[1].split("</script>", 1)[0])
    derived = {case["id"]: d for case, d in zip(data["cases"], data["derived"], strict=True)}
    assert derived["spec.yaml::judged"]["skipped"] == "1 judge check skipped"
    assert derived["spec.yaml::judged"]["skipped_tag"] == "judge skipped"
    assert derived["spec.yaml::plain"]["skipped"] == ""
    assert "1 passed case passed without them" in html
