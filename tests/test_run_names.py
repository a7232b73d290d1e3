"""Runs have names you can say: `last` and `previous` wherever a results file is taken, `run --name`
shown in every report, and the results header that names the endpoints and the git commit.

End to end through the real CLI, with the runs saved where `specengine run` saves them
(`.specengine/runs/` under the working folder).
"""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import validate_results

SPEC = """
evals:
  - name: good
    send: good
    expect: [{includes: good}]
  - name: flaky
    send: flaky
    expect: [{includes: fine}]
"""


def runs(folder: Path) -> list[Path]:
    return sorted((folder / ".specengine" / "runs").glob("*.json"), key=lambda path: path.stat().st_mtime_ns)


def two_runs(folder: Path, agent_server) -> tuple[dict, dict]:
    """A run where `flaky` fails, then one where it passes; returns both results (older first)."""
    agent_server.script({"flaky": "nope"})
    write_project(folder, endpoints={"agent": agent_server})
    write_spec(folder, "spec.yaml", SPEC)
    assert run_cli(["run", "spec.yaml", "--name", "before"], cwd=folder).exit_code == 1
    first = runs(folder)[0]
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns - 10**9))  # clearly older
    agent_server.script({"flaky": "fine"})
    assert run_cli(["run", "spec.yaml", "--name", "after"], cwd=folder).exit_code == 0
    older, newer = runs(folder)
    return json.loads(older.read_text(encoding="utf-8")), json.loads(newer.read_text(encoding="utf-8"))


def test_compare_report_and_merge_take_last_and_previous(agent_server, tmp_path):
    before, after = two_runs(tmp_path, agent_server)
    compared = run_cli(["compare", "previous", "last"], cwd=tmp_path)
    assert compared.exit_code == 0, compared.output
    assert compared.stdout.startswith(
        f"base {before['run_id']} (before) -> head {after['run_id']} (after): 2 cases matched: "
        "0 regressions, 1 fix,"
    )
    reported = run_cli(["report", "last", "--md", "-", "--baseline", "previous"], cwd=tmp_path)
    assert reported.exit_code == 0, reported.output
    assert f"run `{after['run_id']}`" in reported.stdout
    assert f"### Compared with `{before['run_id']}` (before)" in reported.stdout
    merged = run_cli(["merge", "previous", "-o", "merged.json", "--allow-partial"], cwd=tmp_path)
    assert merged.exit_code == 0, merged.output
    assert json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))["run_id"] == before["run_id"]


def test_run_takes_last_for_rerun_failed_and_baseline(agent_server, tmp_path):
    agent_server.script({"flaky": "nope"})
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "spec.yaml", SPEC)
    first = run_cli(["run", "spec.yaml"], cwd=tmp_path)
    assert first.exit_code == 1
    (done,) = runs(tmp_path)
    first_id = json.loads(done.read_text(encoding="utf-8"))["run_id"]
    agent_server.script({"flaky": "fine"})
    agent_server.clear()

    rerun = run_cli(["run", "spec.yaml", "--rerun-failed", "last", "--baseline", "last"], cwd=tmp_path)
    assert rerun.exit_code == 0, rerun.output
    assert [request.json["messages"][-1]["content"] for request in agent_server.requests] == ["flaky"]
    assert f"base {first_id} -> head " in rerun.stdout  # `last` was read before this run added one

    again = run_cli(["run", "spec.yaml", "--rerun-failed", "last"], cwd=tmp_path)
    assert again.exit_code == 0
    newest = runs(tmp_path)[-1].relative_to(tmp_path)
    assert again.stdout == f"nothing to rerun: {newest} has no failed or errored case\n"


def test_regrade_takes_last(agent_server, tmp_path):
    before, after = two_runs(tmp_path, agent_server)
    regraded = run_cli(["regrade", "last", "-o", "regraded.json"], cwd=tmp_path)
    assert regraded.exit_code == 0, regraded.output
    results = json.loads((tmp_path / "regraded.json").read_text(encoding="utf-8"))
    assert results["name"] == "after"  # a regrade keeps the run's name
    assert [case["status"] for case in results["cases"]] == ["passed", "passed"]


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["report", "last", "--md", "-"], "error: last: there is no run in .specengine/runs yet"),
        (["compare", "previous", "last"], "error: previous: there is no run in .specengine/runs yet"),
        (["regrade", "last"], "error: last: there is no run in .specengine/runs yet"),
        (["merge", "last", "-o", "x.json"], "error: last: there is no run in .specengine/runs yet"),
        (["run", "spec.yaml", "--baseline", "last"], "error: --baseline: last: there is no run"),
        (
            ["run", "spec.yaml", "--rerun-failed", "previous"],
            "error: --rerun-failed: previous: there is no run",
        ),
    ],
)
def test_no_run_to_name_is_exit_2_and_says_so(agent_server, tmp_path, command, said):
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "spec.yaml", SPEC)
    result = run_cli(command, cwd=tmp_path)
    assert result.exit_code == 2
    assert said in result.stderr
    assert agent_server.hits() == 0


def test_previous_with_one_run_and_a_file_named_last(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "spec.yaml", SPEC)
    run_cli(["run", "spec.yaml"], cwd=tmp_path)
    only = runs(tmp_path)[0].relative_to(tmp_path)
    result = run_cli(["compare", "previous", "last"], cwd=tmp_path)
    assert result.exit_code == 2
    assert f"error: previous: .specengine/runs holds only one run ({only}), so there is no run before it" in (
        result.stderr
    )
    (tmp_path / "last").write_text("{}", encoding="utf-8")  # a file of that name is read as a file
    as_file = run_cli(["report", "last", "--md", "-"], cwd=tmp_path)
    assert as_file.exit_code == 2
    assert 'error: last: not a specengine results file (no "cases" list)' in as_file.stderr


# --- run --name, the endpoints and the git commit -------------------------------------------------


def test_the_name_is_stored_and_shown_in_every_report(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "spec.yaml", SPEC)
    run = run_cli(
        ["run", "spec.yaml", "--name", "nightly 42", "-o", "out/r.json"]
        + ["--md", "out/s.md", "--junit", "out/j.xml", "--html", "out/r.html"],
        cwd=tmp_path,
    )
    results = json.loads((tmp_path / "out" / "r.json").read_text(encoding="utf-8"))
    validate_results(results)
    assert results["name"] == "nightly 42"
    assert 'results: out/r.json (run "nightly 42")' in run.stdout
    assert (
        (tmp_path / "out" / "s.md").read_text(encoding="utf-8").startswith("## ❌ specengine · nightly 42: ")
    )
    suite = ET.parse(tmp_path / "out" / "j.xml").getroot().find("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties == {"run_id": results["run_id"], "run_name": "nightly 42"}
    html = (tmp_path / "out" / "r.html").read_text(encoding="utf-8")
    assert f"<title>specengine report · nightly 42 · {results['run_id']}</title>" in html
    assert "specengine report · nightly 42</div>" in html


def test_results_name_the_endpoints_with_secrets_redacted_and_never_their_headers(agent_server, tmp_path):
    token = "tok-SECRET-8c8c8c"
    endpoint = agent_server.endpoint(headers={"Authorization": "Bearer ${TOKEN}"})
    endpoint["url"] = endpoint["url"] + "?key=${TOKEN}"
    write_project(
        tmp_path,
        endpoints={"agent": endpoint, "unused": {"protocol": "demo"}},
        defaults={"endpoint": "agent"},
    )
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: a, expect: [succeeded]}]")
    run = run_cli(
        ["run", "spec.yaml", "-o", "r.json", "--html", "r.html"], cwd=tmp_path, env={"TOKEN": token}
    )
    assert run.exit_code == 0, run.output
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    results = json.loads(text)
    validate_results(results)
    assert results["endpoints"] == {
        "agent": {"protocol": "openai-chat", "url": agent_server.url + "?key=***"}
    }
    assert token not in text and "Bearer" not in text
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    url = f'<span class="mono">{agent_server.url}?key=***</span>'
    assert f'endpoint <span class="mono">agent</span> (openai-chat) {url}' in html


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_results_name_the_git_commit_and_branch_of_the_specs(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: a, expect: [succeeded]}]")
    outside = run_cli(["run", "spec.yaml", "-o", "outside.json"], cwd=tmp_path)
    assert outside.exit_code == 0
    assert "git" not in json.loads((tmp_path / "outside.json").read_text(encoding="utf-8"))

    git(tmp_path, "init", "-q", "-b", "feature/x")
    git(tmp_path, "add", "specengine.yaml", "spec.yaml")
    git(tmp_path, "commit", "-q", "-m", "specs")
    commit = git(tmp_path, "rev-parse", "HEAD")
    run_cli(["run", "spec.yaml", "-o", "r.json", "--html", "r.html"], cwd=tmp_path)
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    validate_results(results)
    assert results["git"] == {"commit": commit, "branch": "feature/x"}
    assert f'commit <span class="mono">{commit[:12]} on feature/x</span>' in (tmp_path / "r.html").read_text(
        encoding="utf-8"
    )

    git(tmp_path, "checkout", "-q", "--detach")
    run_cli(["run", "spec.yaml", "-o", "d.json"], cwd=tmp_path)
    assert json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))["git"] == {
        "commit": commit,
        "branch": None,
    }
