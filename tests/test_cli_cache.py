"""The judge verdict cache end to end: `specengine run` twice, `--no-cache`, `specengine cache clear|info`.

Each test runs in its own tmp_path as the working folder, so `.specengine/cache` starts empty; the
judge server's hit count says whether a verdict came from the cache or from the judge.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.cli import run_cli, write_project
from support.judge_server import JudgeServer, choose, status
from support.runs import check, run_spec, setup_project
from test_cli_judges import ENV, KEY, MODEL, run_judged

USAGE = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}
SPEC = """
evals:
  - name: judged
    send: hi
    expect:
      - judge: closed_qa
        criteria: Is it polite?
"""


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer(lambda call, hit: choose("Y", f"Verdict number {hit}.", usage=USAGE)) as server:
        yield server


def test_a_second_identical_run_asks_the_judge_nothing(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    first = run_judged(tmp_path, judge, SPEC)
    assert first.exit_code == 0, first.cli.output
    assert judge.hits() == 1
    asked = check(first.case("judged"), "judge closed_qa")
    assert asked["cached"] is False
    assert (first.summary["judge_calls"], first.summary["judge_cache_hits"]) == (1, 0)
    assert first.summary["judge_tokens"] == 100

    second = run_judged(tmp_path, judge, None)
    assert second.exit_code == 0, second.cli.output
    assert judge.hits() == 1  # no new judge request
    assert agent_server.hits() == 2  # the agent is asked every time
    cached = check(second.case("judged"), "judge closed_qa")
    assert cached["cached"] is True
    assert (cached["status"], cached["score"], cached["rationale"]) == ("passed", 1.0, "Verdict number 1.")
    summary = second.summary
    assert (summary["judge_calls"], summary["judge_cache_hits"], summary["judge_tokens"]) == (0, 1, 0)
    assert "judge: 0 calls, 1 cache hit, 0 tokens" in second.cli.output


def test_a_changed_reply_asks_the_judge_again(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    agent_server.script(lambda messages: "Hello there!")
    assert run_judged(tmp_path, judge, SPEC).exit_code == 0
    agent_server.script(lambda messages: "Hello there, friend!")
    again = run_judged(tmp_path, judge, None)
    assert judge.hits() == 2
    assert "Hello there, friend!" in judge.calls[1].prompt
    assert check(again.case("judged"), "judge closed_qa")["rationale"] == "Verdict number 2."
    assert again.summary["judge_cache_hits"] == 0

    agent_server.script(lambda messages: "Hello there!")  # the first reply again: its verdict is kept
    back = run_judged(tmp_path, judge, None)
    assert judge.hits() == 2
    assert check(back.case("judged"), "judge closed_qa")["rationale"] == "Verdict number 1."


@pytest.mark.parametrize(
    ("new", "asks"),
    [
        ("criteria: Is it kind?", True),  # what the judge is asked changed
        ("criteria: Is it polite?\n        at_least: 0.9", False),  # only how its score is read
        ("criteria: Is it polite?\n        name: politeness\n        soft: true", False),
    ],
    ids=["criteria", "threshold", "name-and-soft"],
)
def test_only_a_change_in_what_the_judge_is_asked_asks_again(agent_server, judge, tmp_path, new, asks):
    setup_project(tmp_path, agent_server)
    run_judged(tmp_path, judge, SPEC)
    assert "criteria: Is it polite?" in SPEC
    run = run_judged(tmp_path, judge, SPEC.replace("criteria: Is it polite?", new))
    assert run.exit_code == 0, run.cli.output
    assert judge.hits() == (2 if asks else 1)
    assert run.summary["judge_cache_hits"] == (0 if asks else 1)


def test_another_judge_model_asks_again(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    run_judged(tmp_path, judge, SPEC)
    other = ("--judge-model", "another-model", "--judge-base-url", judge.judge_url)
    run = run_spec(tmp_path, None, *other, env=ENV)
    assert run.exit_code == 0, run.cli.output
    assert [call.body["model"] for call in judge.calls] == [MODEL, "another-model"]


def test_no_cache_asks_the_judge_every_time_and_stores_nothing(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    for expected_hits in (1, 2):
        run = run_judged(tmp_path, judge, SPEC, "--no-cache")
        assert run.exit_code == 0, run.cli.output
        assert judge.hits() == expected_hits
        assert run.summary["judge_cache_hits"] == 0
    assert not list((tmp_path / ".specengine").rglob("*.json"))  # no verdict stored
    run_judged(tmp_path, judge, None)  # nothing was stored, so this one asks too
    assert judge.hits() == 3
    run = run_judged(tmp_path, judge, None, "--no-cache")  # a stored verdict is not read either
    assert judge.hits() == 4
    assert check(run.case("judged"), "judge closed_qa")["cached"] is False


def test_cache_clear_empties_it_and_the_next_run_asks_again(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = SPEC + "      - {judge: closed_qa, criteria: Is it short?}\n"
    run_judged(tmp_path, judge, spec)
    assert judge.hits() == 2

    info = run_cli(["cache", "info"], cwd=tmp_path)
    assert info.exit_code == 0, info.output
    assert info.stdout.startswith("2 cached judge verdicts")

    cleared = run_cli(["cache", "clear"], cwd=tmp_path)
    assert cleared.exit_code == 0, cleared.output
    assert cleared.stdout.startswith("Removed 2 cached judge verdicts")
    assert run_cli(["cache", "info"], cwd=tmp_path).stdout.startswith("0 cached judge verdicts")
    again = run_cli(["cache", "clear"], cwd=tmp_path)
    assert again.exit_code == 0 and "already empty" in again.stdout

    run = run_judged(tmp_path, judge, None)
    assert judge.hits() == 4
    assert run.summary["judge_cache_hits"] == 0
    run_judged(tmp_path, judge, None)
    assert judge.hits() == 4  # stored again by the run after the clear


def test_cache_clear_with_dir_clears_only_that_folder(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    run_judged(tmp_path, judge, SPEC)
    other = tmp_path / "elsewhere"
    cleared = run_cli(["cache", "clear", "--dir", str(other)], cwd=tmp_path)
    assert cleared.exit_code == 0 and "already empty" in cleared.stdout
    run_judged(tmp_path, judge, None)
    assert judge.hits() == 1  # the project's cache was untouched


def test_judge_errors_are_never_cached(agent_server, tmp_path):
    answers = {1: status(500, "hiccup"), 2: choose("Y", "Recovered.")}
    with JudgeServer(lambda call, hit: answers.get(hit, choose("N", "Should not be asked."))) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": MODEL, "base_url": judge.judge_url, "retries": 0, "timeout": 5},
        )
        failed = run_judged(tmp_path, judge, SPEC)
        assert failed.exit_code == 1, failed.cli.output
        assert check(failed.case("judged"), "judge closed_qa")["status"] == "error"
        assert judge.hits() == 1

        recovered = run_judged(tmp_path, judge, None)
        assert recovered.exit_code == 0, recovered.cli.output
        assert judge.hits() == 2  # the error was not stored: the judge is asked again
        assert check(recovered.case("judged"), "judge closed_qa")["rationale"] == "Recovered."

        cached = run_judged(tmp_path, judge, None)
        assert judge.hits() == 2  # the good verdict was stored
        assert check(cached.case("judged"), "judge closed_qa")["rationale"] == "Recovered."


def test_a_missing_key_is_not_cached_either(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    remote = ("--judge-base-url", "https://judge.example.com/v1")  # a judge elsewhere needs its key
    missing = run_judged(tmp_path, judge, SPEC, *remote, env={"OPENAI_API_KEY": None})
    assert missing.exit_code == 2, missing.cli.output
    assert "OPENAI_API_KEY is not set" in missing.cli.stderr
    assert (judge.hits(), agent_server.hits()) == (0, 0)
    assert not (tmp_path / ".specengine" / "cache").exists()
    run = run_judged(tmp_path, judge, None, env={"OPENAI_API_KEY": KEY})
    assert run.exit_code == 0, run.cli.output
    assert judge.hits() == 1


def test_identical_judge_requests_within_a_run_ask_once(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: repeated
            trials: 3
            send: hi
            expect: [{judge: closed_qa, criteria: Is it polite?}]
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    assert agent_server.hits() == 3
    assert judge.hits() == 1
    assert (run.summary["judge_calls"], run.summary["judge_cache_hits"]) == (1, 2)
    assert run.case("repeated")["passed_trials"] == 3


def test_run_v_shows_the_judges_first_request_as_sent_with_its_key_masked(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    ran = run_judged(tmp_path, judge, SPEC, "-v")
    assert ran.exit_code == 0, ran.cli.output
    out = ran.cli.output
    assert f"judge request as sent: POST {judge.judge_url}/chat/completions" in out, out
    assert "authorization: Bearer ***" in out
    assert KEY not in out
    assert '"temperature": 0.0' in out
    assert f'"model": "{MODEL}"' in out
    assert out.count("request as sent") == 1  # the first request only
