"""Human reviews become few-shot examples: `specengine agreement --export-examples FILE`, then a run
whose judge reads them. The real CLI runs against a scripted agent and judge on loopback; reviews
are written with the review store's public API, as the review app writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml
from support.cli import run_cli, write_project
from support.judge_server import JudgeServer, choose
from support.runs import run_spec
from test_cli_judges import ENV, MODEL

from specengine.results.decode import read_case
from specengine.review import ReviewStore
from specengine.review.store import new_review

SPEC = """
evals:
  - name: paris
    send: paris
    expect:
      - judge: closed_qa
        criteria: Does it give the weather?
  - name: rome
    send: rome
    expect:
      - judge: closed_qa
        criteria: Does it give the weather?
"""


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer(lambda call, hit: choose("Y", "Looks fine.")) as server:  # a lenient judge
        yield server


def weather(messages):
    return "Sunny in Paris, 21 °C." if messages[-1]["content"] == "paris" else "I don't know."


def first_run(tmp_path, agent_server, judge, spec=SPEC, **project):
    agent_server.script(weather)
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        judge={"model": MODEL, "base_url": judge.judge_url},
        **project,
    )
    (tmp_path / ".git").mkdir(exist_ok=True)
    run = run_spec(tmp_path, spec, env=ENV, output=".specengine/runs/first.json")
    assert run.results is not None, run.cli.output
    return run


def review(tmp_path, run, case: str, check: str, verdict: str, note: str = "") -> None:
    store = ReviewStore(tmp_path)
    store.append(
        new_review(
            read_case(run.case(case)),
            run=run.results["run_id"],
            check=check,
            verdict=verdict,
            note=note,
            reviewer="Ada",
        )
    )


def test_reviews_are_exported_as_examples_the_judge_then_reads(agent_server, judge, tmp_path):
    run = first_run(tmp_path, agent_server, judge)
    review(tmp_path, run, "rome", "judge closed_qa", "incorrect", "It gives no weather at all.")
    review(tmp_path, run, "paris", "judge closed_qa", "correct")

    exported = run_cli(
        ["agreement", "--dir", str(tmp_path), "--export-examples", "out/examples.yaml"], cwd=tmp_path
    )
    assert exported.exit_code == 0, exported.output
    assert "2 reviewed verdicts, agreement 50.0%" in exported.stdout
    assert exported.stderr.strip() == (
        "wrote out/examples.yaml: 2 examples for 2 judge checks (1 overriding the judge)"
    )
    text = (tmp_path / "out" / "examples.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Few-shot examples from human reviews")
    assert yaml.safe_load(text) == {
        "spec.yaml:5 judge closed_qa": [
            {"input": "paris", "output": "Sunny in Paris, 21 °C.", "score": 1},
        ],
        "spec.yaml:10 judge closed_qa": [
            {"input": "rome", "output": "I don't know.", "score": 0, "why": "It gives no weather at all."},
        ],
    }

    # closing the loop: the exported list pasted under the check's examples: teaches the judge
    examples = yaml.safe_load(text)["spec.yaml:10 judge closed_qa"]
    taught = SPEC.replace(
        "  - name: rome\n    send: rome\n    expect:\n      - judge: closed_qa\n"
        "        criteria: Does it give the weather?\n",
        "  - name: rome\n    send: rome\n    expect:\n      - judge: closed_qa\n"
        "        criteria: Does it give the weather?\n"
        f"        examples: {json.dumps(examples)}\n",
    )
    assert taught != SPEC
    (tmp_path / "spec.yaml").write_text(taught, encoding="utf-8")
    assert run_cli(["validate", "spec.yaml"], cwd=tmp_path).exit_code == 0
    run_spec(tmp_path, None, env=ENV, output=".specengine/runs/second.json")
    prompt = judge.calls[-1].prompt
    assert (
        "[Input]: rome\n[Output]: I don't know.\n[Right choice]: N\n[Why]: It gives no weather at all."
        in prompt
    )


def test_a_named_judges_reviews_are_listed_under_its_name(agent_server, judge, tmp_path):
    spec = "evals: [{name: rome, send: rome, expect: [{judge: weather, at_least: 1}]}]"
    run = first_run(tmp_path, agent_server, judge, spec, judges={"weather": {"criteria": "Gives weather?"}})
    review(tmp_path, run, "rome", "judge weather", "incorrect", "No weather.")
    exported = run_cli(["agreement", "--dir", str(tmp_path), "--export-examples", "ex.yaml"], cwd=tmp_path)
    assert exported.exit_code == 0, exported.output
    assert yaml.safe_load((tmp_path / "ex.yaml").read_text(encoding="utf-8")) == {
        "weather": [{"input": "rome", "output": "I don't know.", "score": 0, "why": "No weather."}]
    }


def test_an_inverted_threshold_exports_the_other_end_of_the_scale(agent_server, judge, tmp_path):
    spec = """
evals:
  - name: rome
    send: rome
    expect:
      - judge: closed_qa
        criteria: Does it give the weather?
        threshold: {lt: 0.5}
"""
    run = first_run(tmp_path, agent_server, judge, spec)
    assert run.status("rome") == "failed"  # the lenient judge said Y; a low score was needed
    review(tmp_path, run, "rome", "judge closed_qa", "incorrect", "It should pass: it gives no weather.")
    run_cli(["agreement", "--dir", str(tmp_path), "--export-examples", "ex.yaml"], cwd=tmp_path)
    [example] = yaml.safe_load((tmp_path / "ex.yaml").read_text(encoding="utf-8"))[
        "spec.yaml:5 judge closed_qa"
    ]
    assert example["score"] == 0  # passing this check means the judge says N


def test_without_reviews_the_file_says_so_and_holds_no_examples(agent_server, judge, tmp_path):
    first_run(tmp_path, agent_server, judge)
    exported = run_cli(["agreement", "--dir", str(tmp_path), "--export-examples", "ex.yaml"], cwd=tmp_path)
    assert exported.exit_code == 0, exported.output
    assert "0 examples for 0 judge checks" in exported.stderr
    assert yaml.safe_load((tmp_path / "ex.yaml").read_text(encoding="utf-8")) == {}
