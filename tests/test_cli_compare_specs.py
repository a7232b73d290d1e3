"""`specengine compare` after a spec edit: two real runs, an edit between them, the real compare.

A run records what defined each case and check (results/definition.py), so compare tells the agent's
doing (a regression or a fix) from the spec's (a soft check made a gate, a raised threshold, an
edited argument, a new check) and from the judge's (another judge model). One spec holds an eval for
each kind of change; the agent changes its answer in one of them only.
"""

from __future__ import annotations

import json

from support.cli import run_cli
from support.judge_server import JudgeCall, JudgeServer, choose
from support.runs import run_spec, setup_project, validate_results
from support.servers import Reply
from test_cli_judges import ENV

from specengine.github.comment import comment_body
from specengine.report.compare import compare

BASE = """
evals:
  - name: soft made a gate
    send: one
    expect: [{includes: nowhere, soft: true}]
  - name: threshold raised
    send: two
    expect: [{judge: custom, prompt: "Grade {{ reply }}", choices: {A: 0.75, B: 0}, at_least: 0.7}]
  - name: argument edited
    send: three
    expect: [{includes: answer three}]
  - name: check added
    send: four
    expect: [{includes: answer four}]
  - name: judged anew
    send: five
    expect: [{judge: closed_qa, criteria: Fine?}]
  - name: agent changed
    send: six
    expect: [{includes: answer six}]
  - name: removed later
    send: seven
    expect: [{includes: seven}]
"""

HEAD = (
    BASE.replace("soft: true", "soft: false")
    .replace("at_least: 0.7", "at_least: 0.8")
    .replace("includes: answer three", "includes: answer 3")
    .replace("expect: [{includes: answer four}]", "expect: [{includes: answer four}, {includes: forty}]")
    .split("  - name: removed later")[0]
)


def judged(call: JudgeCall, hit: int) -> Reply:
    """The custom judge picks A (0.75); closed_qa says yes for the lenient model, no for the strict."""
    if "Grade" in call.prompt:
        return choose("A")
    return choose("N" if call.body["model"] == "judge-strict" else "Y")


def test_each_kind_of_change_is_told_apart(agent_server, tmp_path):
    replies = {"six": "answer six"}
    agent_server.script(
        lambda messages: replies.get(messages[-1]["content"], f"answer {messages[-1]['content']}")
    )
    setup_project(tmp_path, agent_server)
    with JudgeServer(judged) as judge:
        flags = ("--judge-base-url", judge.judge_url, "--judge-model")
        base = run_spec(tmp_path, BASE, *flags, "judge-lenient", env=ENV, output="base.json")
        replies["six"] = "something else"
        head = run_spec(tmp_path, HEAD, *flags, "judge-strict", env=ENV, output="head.json")
    assert base.results is not None, base.cli.output
    assert head.results is not None, head.cli.output
    assert [case["status"] for case in base.cases] == ["passed"] * 7
    assert [case["status"] for case in head.cases] == ["failed"] * 6
    validate_results(head.results)
    raised = head.case("threshold raised")["trials"][0]["checks"][0]
    assert raised["definition"] == "{judge: custom, prompt: 'Grade {{ reply }}', choices: {A: 0.75, B: 0.0}}"
    edited = head.case("argument edited")["checks"][0]
    assert edited["definition"] == "{includes: answer 3}"
    assert edited["fingerprint"] == head.case("argument edited")["trials"][0]["checks"][0]["fingerprint"]
    assert head.case("agent changed")["fingerprint"] == base.case("agent changed")["fingerprint"]

    text = run_cli(["compare", "base.json", "head.json"], cwd=tmp_path)
    assert text.exit_code == 1, text.output  # the agent's one regression
    assert "1 regression," in text.stdout and "4 spec changed, 1 judged differently" in text.stdout
    assert "Regressions (1):\n  spec.yaml:17  spec.yaml::agent changed  passed -> failed" in text.stdout
    assert "spec changed (soft → gate)" in text.stdout
    assert "spec changed (at_least 0.7 → 0.8)" in text.stdout
    assert "spec changed ({includes: answer three} → {includes: answer 3})" in text.stdout
    assert 'spec changed (new check: includes "forty")' in text.stdout
    assert "judged differently (model judge-lenient → judge-strict)" in text.stdout
    assert "Removed cases (1):\n  spec.yaml:20  spec.yaml::removed later  was passed" in text.stdout

    data = json.loads(run_cli(["compare", "base.json", "head.json", "--json"], cwd=tmp_path).stdout)
    assert [item["id"] for item in data["regressions"]] == ["spec.yaml::agent changed"]
    assert {item["id"].split("::")[1]: item["spec_changed"] for item in data["spec_changed"]} == {
        "soft made a gate": "soft → gate",
        "threshold raised": "at_least 0.7 → 0.8",
        "argument edited": "{includes: answer three} → {includes: answer 3}",
        "check added": 'new check: includes "forty"',
    }
    [score] = data["score_changes"]  # the custom judge's 0.75 did not move; only its threshold did
    assert (score["case_id"], score["judged_differently"]) == (
        "spec.yaml::judged anew",
        "model judge-lenient → judge-strict",
    )

    markdown = run_cli(["compare", "base.json", "head.json", "--md", "compare.md"], cwd=tmp_path)
    assert markdown.exit_code == 1
    written = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "#### ✏️ Spec changed (4)" in written and "spec changed (at\\_least 0.7 → 0.8)" in written
    comment = comment_body(head.results, compare(base.results, head.results), "evals", None)
    assert "#### ✏️ Spec changed (4)" in comment and "#### 🔻 Regressions (1)" in comment


def test_a_file_written_before_fingerprints_still_tells_gate_from_soft(agent_server, tmp_path):
    agent_server.script(lambda messages: "hello")
    setup_project(tmp_path, agent_server)
    soft = "evals: [{name: a, send: hi, expect: [{includes: bye, soft: true}]}]"
    run_spec(tmp_path, soft, output="base.json")
    run_spec(tmp_path, soft.replace("true", "false"), output="head.json")
    for name in ("base.json", "head.json"):  # as an older version wrote them
        path = tmp_path / name
        results = json.loads(path.read_text(encoding="utf-8"))
        for case in results["cases"]:
            case.pop("fingerprint")
            for holder in (case, *case["trials"]):
                for check in holder["checks"]:
                    check.pop("fingerprint")
                    check.pop("definition")
        path.write_text(json.dumps(results), encoding="utf-8")
    data = json.loads(run_cli(["compare", "base.json", "head.json", "--json"], cwd=tmp_path).stdout)
    assert (data["regressions"], [item["spec_changed"] for item in data["spec_changed"]]) == (
        [],
        ["soft → gate"],
    )
