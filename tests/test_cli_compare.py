"""`specengine compare` and `run --baseline` on results of real runs whose agent changed in between.

The base run and the head run use the same scripted agent on 127.0.0.1; between them the agent's
answers change (one case breaks, calling its tool differently; one heals) and the spec changes (one
eval removed, one added), the way a pull request changes an agent and its evals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliResult, run_cli, write_project, write_spec
from support.servers import AgentServer, Reply

SPEC_PATH = "specs/shop.yaml"
COMMON = """\
evals:
  - {name: steady, send: hello, expect: [{includes: hello}]}
  - {name: will break, send: price, expect: [{includes: "42 EUR"}]}
  - {name: will heal, send: stock, expect: [{includes: "in stock"}]}
  - {name: known bad, send: never, expect: [{includes: nope}]}
"""
BASE_SPEC = COMMON + "  - {name: retired, send: old, expect: [succeeded]}\n"
HEAD_SPEC = COMMON + "  - {name: brand new, send: fresh, expect: [succeeded]}\n"
ANSWERS: dict[str, dict[str, str | Reply]] = {
    "base": {
        "price": Reply(
            content="It costs 42 EUR.", tool_calls=[{"name": "get_price", "args": {"currency": "EUR"}}]
        ),
        "stock": "Sorry, out of stock.",
    },
    "head": {
        "price": Reply(
            content="It costs 45 EUR.",
            tool_calls=[{"name": "get_price", "args": {"currency": "USD"}}, {"name": "convert", "args": {}}],
        ),
        "stock": "Yes, it is in stock.",
    },
}
PRICE_CALL_CHANGES = [
    "turn 1: convert call added",
    'turn 1: get_price args.currency changed from "EUR" to "USD"',
]
NO_GITHUB = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


def case_id(name: str) -> str:
    return f"{SPEC_PATH}::{name}"


def line_of(text: str, needle: str) -> int:
    found = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(found) == 1, f"{needle!r} is on lines {found}"
    return found[0]


class Agent:
    """The scripted agent; `version` picks which set of answers it gives."""

    def __init__(self) -> None:
        self.version = "base"

    def __call__(self, messages: list[dict[str, Any]]) -> str | Reply:
        text = messages[-1]["content"]
        return ANSWERS[self.version].get(text, f"You said: {text}")


class Project:
    def __init__(self, folder: Path, agent: Agent, server: AgentServer) -> None:
        self.folder = folder
        self.agent = agent
        self.server = server

    def run(self, version: str, spec: str, output: str, *args: str) -> CliResult:
        """Run the spec against the agent's `version`; results in `output` (relative to the folder)."""
        self.agent.version = version
        write_spec(self.folder, SPEC_PATH, spec)
        return run_cli(["run", SPEC_PATH, "--output", output, *args], cwd=self.folder, env=NO_GITHUB)

    def cli(self, *args: str) -> CliResult:
        return run_cli(list(args), cwd=self.folder, env=NO_GITHUB)

    def results(self, name: str) -> dict[str, Any]:
        return json.loads((self.folder / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    agent = Agent()
    with AgentServer() as server:
        server.script(agent)
        folder = tmp_path_factory.mktemp("compare")
        write_project(folder, endpoints={"agent": server.endpoint()})
        project = Project(folder, agent, server)
        base = project.run("base", BASE_SPEC, "base.json")
        assert base.exit_code == 1, base.output  # "will heal" and "known bad" fail in the base run
        head = project.run("head", HEAD_SPEC, "head.json")
        assert head.exit_code == 1, head.output
        yield project


def statuses(results: dict[str, Any]) -> dict[str, str]:
    return {c["eval"]: c["status"] for c in results["cases"]}


def test_the_runs_differ_as_intended(project):
    assert statuses(project.results("base.json")) == {
        "steady": "passed",
        "will break": "passed",
        "will heal": "failed",
        "known bad": "failed",
        "retired": "passed",
    }
    assert statuses(project.results("head.json")) == {
        "steady": "passed",
        "will break": "failed",
        "will heal": "passed",
        "known bad": "failed",
        "brand new": "passed",
    }


def test_compare_reports_regression_fix_new_and_removed_and_exits_1(project):
    cli = project.cli("compare", "base.json", "head.json")
    assert cli.exit_code == 1, cli.output
    base_id, head_id = project.results("base.json")["run_id"], project.results("head.json")["run_id"]
    lines = cli.stdout.splitlines()
    assert lines[0] == (
        f"base {base_id} -> head {head_id}: 4 cases matched: 1 regression, 1 fix, 1 new, 1 removed, "
        "0 judge score changes"
    )
    assert "pass rate 60.0% -> 60.0% (+0.0 points)" in lines[1]

    def section(title: str) -> list[str]:
        start = lines.index(title)
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
        return lines[start + 1 : end]

    break_line = line_of(HEAD_SPEC, "will break")
    regression, *call_changes = section("Regressions (1):")
    assert regression.startswith(f"  {SPEC_PATH}:{break_line}  {case_id('will break')}  passed -> failed")
    assert 'the reply does not include "42 EUR"' in regression
    assert call_changes == [f"    {change}" for change in PRICE_CALL_CHANGES]
    assert section("Fixes (1):") == [
        f"  {SPEC_PATH}:{line_of(HEAD_SPEC, 'will heal')}  {case_id('will heal')}  failed -> passed"
    ]
    assert section("New cases (1):") == [
        f"  {SPEC_PATH}:{line_of(HEAD_SPEC, 'brand new')}  {case_id('brand new')}  new, passed"
    ]
    assert section("Removed cases (1):") == [
        f"  {SPEC_PATH}:{line_of(BASE_SPEC, 'retired')}  {case_id('retired')}  was passed"
    ]
    assert "known bad" not in cli.stdout  # failed in both runs: not a change


def test_compare_json_parses(project):
    cli = project.cli("compare", "base.json", "head.json", "--json")
    assert cli.exit_code == 1, cli.output
    data = json.loads(cli.stdout)
    assert data["regressed"] is True
    assert data["matched"] == 4
    assert [(c["id"], c["base_status"], c["head_status"]) for c in data["regressions"]] == [
        (case_id("will break"), "passed", "failed")
    ]
    assert [(c["id"], c["base_status"], c["head_status"]) for c in data["fixes"]] == [
        (case_id("will heal"), "failed", "passed")
    ]
    assert [(c["id"], c["base_status"], c["head_status"]) for c in data["new"]] == [
        (case_id("brand new"), None, "passed")
    ]
    assert [(c["id"], c["base_status"], c["head_status"]) for c in data["removed"]] == [
        (case_id("retired"), "passed", None)
    ]
    assert data["regressions"][0]["line"] == line_of(HEAD_SPEC, "will break")
    assert [
        f"turn {c['turn']}: {c['change']}" for c in data["regressions"][0]["tool_calls"]
    ] == PRICE_CALL_CHANGES
    assert (data["base_run_id"], data["head_run_id"]) == (
        project.results("base.json")["run_id"],
        project.results("head.json")["run_id"],
    )


def test_compare_markdown_on_stdout(project):
    cli = project.cli("compare", "base.json", "head.json", "--md", "-")
    assert cli.exit_code == 1, cli.output
    md = cli.stdout
    base_id = project.results("base.json")["run_id"]
    assert md.startswith("## ❌ specengine: 3 of 5 cases passed (60.0%)\n")
    assert f"### Compared with `{base_id}`" in md
    assert "#### 🔻 Regressions (1)" in md
    assert "#### 🔺 Fixes (1)" in md
    assert "<details><summary>New cases (1)</summary>" in md
    assert "<details><summary>Removed cases (1)</summary>" in md
    row = next(line for line in md.splitlines() if line.startswith(f"| {SPEC_PATH}::will break |"))
    assert "✅ passed → ❌ failed" in row
    assert f"`{SPEC_PATH}:{line_of(HEAD_SPEC, 'will break')}`" in row
    calls = md.split("Tool calls that changed (base → head):\n\n", 1)[1].split("\n\n", 1)[0]
    assert calls.splitlines() == [
        f"- `{SPEC_PATH}::will break`",
        "  - turn 1: convert call added",
        '  - turn 1: get\\_price args.currency changed from "EUR" to "USD"',
    ]
    assert " -> " not in md  # only Markdown on stdout, not the text report too
    assert md == project.cli("report", "head.json", "--md", "-", "--baseline", "base.json").stdout


def test_compare_markdown_to_a_file_and_text_on_stdout(project):
    cli = project.cli("compare", "base.json", "head.json", "--md", "out/compare.md")
    assert cli.exit_code == 1
    assert cli.stdout.startswith("base ")
    assert "#### 🔻 Regressions (1)" in (project.folder / "out" / "compare.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["base.json", "head.json"])
def test_comparing_a_run_with_itself_exits_0(project, name):
    cli = project.cli("compare", name, name)
    assert cli.exit_code == 0, cli.output
    assert "5 cases matched: 0 regressions, 0 fixes, 0 new, 0 removed" in cli.stdout
    assert json.loads(project.cli("compare", name, name, "--json").stdout)["regressed"] is False


def test_compare_in_the_other_direction_sees_the_fix_as_a_regression(project):
    cli = project.cli("compare", "head.json", "base.json", "--json")
    assert cli.exit_code == 1
    data = json.loads(cli.stdout)
    assert [c["id"] for c in data["regressions"]] == [case_id("will heal")]
    assert [c["id"] for c in data["new"]] == [case_id("retired")]
    assert [c["id"] for c in data["removed"]] == [case_id("brand new")]


def test_compare_with_an_unreadable_input_exits_2(project):
    cli = project.cli("compare", "base.json", "missing.json")
    assert cli.exit_code == 2
    assert "missing.json: no such file" in cli.stderr
    assert "Traceback" not in cli.output


# ---------------------------------------------------------------------------------------------------
# run --baseline


def test_run_baseline_regression_alone_exits_1(project):
    # --min-pass-rate 0: the failures alone would exit 0, so exit 1 comes from the regression
    alone = project.run("head", HEAD_SPEC, "out/no-baseline.json", "--min-pass-rate", "0")
    assert alone.exit_code == 0, alone.output
    assert "Regressions" not in alone.output

    cli = project.run(
        "head", HEAD_SPEC, "out/with-baseline.json", "--min-pass-rate", "0", "--baseline", "base.json"
    )
    assert cli.exit_code == 1, cli.output
    assert "4 cases matched: 1 regression, 1 fix, 1 new, 1 removed" in cli.stdout
    assert f"{case_id('will break')}  passed -> failed" in cli.stdout
    assert [
        line.strip() for line in cli.stdout.splitlines() if line.startswith("    turn ")
    ] == PRICE_CALL_CHANGES
    assert project.results("out/with-baseline.json")["summary"]["failed"] == 2


def test_run_baseline_without_regression_exits_0_despite_known_failures(project):
    cli = project.run(
        "head",
        HEAD_SPEC,
        "out/same.json",
        "--min-pass-rate",
        "0",
        "--baseline",
        "head.json",
        "--md",
        "out/same.md",
    )
    assert cli.exit_code == 0, cli.output
    assert "5 cases matched: 0 regressions, 0 fixes, 0 new, 0 removed" in cli.stdout
    md = (project.folder / "out" / "same.md").read_text(encoding="utf-8")
    assert f"### Compared with `{project.results('head.json')['run_id']}`" in md
    assert "Regressions (" not in md


def test_run_baseline_writes_the_comparison_into_the_markdown(project):
    cli = project.run("head", HEAD_SPEC, "out/pr.json", "--baseline", "base.json", "--md", "out/pr.md")
    assert cli.exit_code == 1
    md = (project.folder / "out" / "pr.md").read_text(encoding="utf-8")
    assert "#### 🔻 Regressions (1)" in md and "#### 🔺 Fixes (1)" in md
    report = project.cli("report", "out/pr.json", "--md", "-", "--baseline", "base.json")
    assert report.stdout == md


@pytest.mark.parametrize(
    ("baseline", "message"),
    [
        ("missing.json", "missing.json: no such file"),
        (SPEC_PATH, f"{SPEC_PATH}:1:1: not valid JSON"),
    ],
)
def test_run_with_an_unreadable_baseline_exits_2_before_sending_anything(project, baseline, message):
    before = project.server.hits()
    cli = project.run("head", HEAD_SPEC, "out/never.json", "--baseline", baseline)
    assert cli.exit_code == 2, cli.output
    assert f"error: --baseline: {message}" in cli.stderr
    assert project.server.hits() == before
    assert not (project.folder / "out" / "never.json").exists()
    assert "Traceback" not in cli.output
