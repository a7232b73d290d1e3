"""The composite action (action.yml): its inputs, and its shell steps run as a runner runs them
(tests/support/actions_runner.py) against the demo agent and a scripted GitHub API: a push to main
with no baseline yet, then a pull request whose case regressed against that baseline (results
uploaded, annotations, the step summary, one comment, the verdict per `fail-on`), and a shard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.actions_runner import Runner
from support.cli import REPO_ROOT, write_project, write_spec
from support.github_server import GitHubServer, event_file, zipped

ACTION = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
SPEC = """
evals:
  - name: paris
    send: What's the weather in Paris?
    expect: [{includes: Sunny}]
  - name: paris again
    send: What's the weather in Paris?
    expect: [{includes: Snowy}]
"""


def step(name: str) -> dict[str, Any]:
    return next(s for s in STEPS if s.get("name") == name)


def test_the_inputs_the_action_takes():
    names = {"specs", "config", "args", "baseline-branch", "comment", "fail-on", "shard", "python-version"}
    assert names <= set(ACTION["inputs"])
    assert ACTION["runs"]["using"] == "composite"
    assert [s["uses"] for s in STEPS if "uses" in s] == [
        "actions/setup-python@v5",
        "actions/upload-artifact@v4",
    ]
    for shell_step in (s for s in STEPS if "run" in s):  # inputs reach scripts through env:, never inline
        assert "${{" not in shell_step["run"], shell_step["name"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """A workspace with specs for the demo agent, and a scripted GitHub API."""
    workspace = tmp_path_factory.mktemp("workspace")
    write_project(workspace, endpoints={"demo": {"protocol": "demo"}})
    write_spec(workspace, "specs/weather.yaml", SPEC)
    with GitHubServer(repository="acme/shop") as github:
        yield workspace, github


def action_runner(job, tmp_path: Path, pull_request: int | None, **inputs: str) -> Runner:
    workspace, github = job
    tmp_path.mkdir(parents=True, exist_ok=True)
    given = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    context: dict[str, Any] = {"github": {"token": "gh-token", "action_path": str(REPO_ROOT)}}
    runner = Runner(
        workspace,
        tmp_path / "runner",
        env={
            "GITHUB_API_URL": github.base_url,
            "GITHUB_REPOSITORY": "acme/shop",
            "GITHUB_RUN_ID": "555",
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_EVENT_PATH": event_file(tmp_path, pull_request),
        },
        context=context,
    )
    context["inputs"] = {name: runner.expand(value) for name, value in {**given, **inputs}.items()}
    return runner


def test_install_takes_the_actions_own_checkout(job, tmp_path):
    runner = action_runner(job, tmp_path, None)
    fake = runner.temp / "fake"
    fake.mkdir()
    (fake / "python").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/pip-args\n', encoding="utf-8")
    (fake / "python").chmod(0o755)
    ran = runner.run_step(step("Install specengine"), {"PATH": f"{fake}:/usr/bin:/bin"})
    assert ran.exit_code == 0, ran.output
    assert (tmp_path / "pip-args").read_text().split()[-1] == str(REPO_ROOT)


def test_a_push_then_a_pull_request_that_regressed(job, tmp_path):
    workspace, github = job
    push = action_runner(job, tmp_path / "push", None)
    ran = push.run_steps(STEPS[2:])  # setup-python and the install are the runner's
    assert [r.exit_code for r in ran] == [0, 0, 0, 0], [r.output for r in ran]
    run, baseline, comment, verdict = ran
    assert run.outputs["exit-code"] == "1" and run.outputs["artifact"] == "specengine-results"
    assert "::error file=specs/weather.yaml,line=" in run.stdout  # annotations on the spec's line
    assert "1 of 2 cases passed" in run.summary  # the step summary
    assert (push.temp / "specengine" / "junit.xml").exists()
    assert push.used[-1] == {
        "uses": "actions/upload-artifact@v4",
        "with": {"name": "specengine-results", "path": run.outputs["results"]},
    }
    assert "no baseline yet" in baseline.stderr and "file" not in baseline.outputs
    assert "not a pull request" in comment.stderr
    assert "no baseline: failed cases are not judged as regressions" in verdict.stdout

    # main's run, as it would have been when both cases passed, is the pull request's baseline
    results = json.loads(Path(run.outputs["results"]).read_text(encoding="utf-8"))
    for case in results["cases"]:
        case["status"] = "passed"
    github.add_run(41)
    github.add_artifact(410, 41, zipped({"results.json": json.dumps(results)}))

    pull = action_runner(job, tmp_path / "pr", 12)
    ran = pull.run_steps(STEPS[2:])
    assert [r.exit_code for r in ran] == [0, 0, 0, 1], [r.output for r in ran]
    run, baseline, comment, verdict = ran
    assert baseline.outputs["file"].endswith("baseline.json")
    assert "created the comment on pull request #12" in comment.stderr
    body = github.comments[12][0]["body"]
    assert "Regressions (1)" in body and "specs/weather.yaml::paris again" in body
    assert "Regressions (1):" in verdict.stdout  # compare's words in the log

    never = pull.run_step(step("Verdict"), {"FAIL_ON": "never"})
    failure = pull.run_step(step("Verdict"), {"FAIL_ON": "failure"})
    typo = pull.run_step(step("Verdict"), {"FAIL_ON": "sometimes"})
    assert (never.exit_code, failure.exit_code, typo.exit_code) == (0, 1, 2)
    assert "fail-on is failure, regression or never" in typo.stdout

    again = pull.run_step(step("Comment on the pull request"))  # the next push edits the comment
    assert again.exit_code == 0 and len(github.comments[12]) == 1


def test_a_shard_runs_its_share_and_leaves_comparing_to_the_merge(job, tmp_path):
    workspace, github = job
    runner = action_runner(job, tmp_path, 12, shard="2/2", args='-j 2 --name "shard two"')
    github.clear()
    run, baseline, comment, verdict = runner.run_steps(STEPS[2:])
    assert run.outputs["artifact"] == "specengine-results-2-of-2"
    results = json.loads(Path(run.outputs["results"]).read_text(encoding="utf-8"))
    assert results["shard"]["index"] == 2 and results["name"] == "shard two"
    assert github.requests == [] and verdict.exit_code == 0
