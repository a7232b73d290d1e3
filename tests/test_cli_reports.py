"""Reports from a real run: `run --html/--md/--junit`, GitHub annotations, the step summary, and
`specengine report` on the same results file.

One run of the real CLI against the scripted agent on 127.0.0.1 writes every report at once; the
tests then read those files (and the results JSON the run wrote) instead of crafted fixtures, so
they prove that what a run records is what the reports show.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliResult, run_cli, write_project, write_spec
from support.runs import validate_results
from support.servers import AgentServer, Reply
from test_report_browser import CHROMIUM_ARGS, _chromium

from specengine.report.formats import FORMATS, formats_named

SPEC_PATH = "specs/weather.yaml"
SPEC = """\
suite: weather
evals:
  - name: sunny
    send: weather
    expect:
      - includes: Sunny
      - called_tool: get_weather
  - name: two wrong
    send: odd
    expect:
      - includes: "100%, done: ok"
      - name: "tool: none, 50%"
        called_tool: book_table
      - succeeded
  - name: one wrong
    send: weather
    expect:
      - called_tool: get_weather
      - not_includes: Sunny
  - name: down
    send: broken
    expect: [succeeded]
  - name: later
    skip: waiting for the booking tool
    send: book
    expect: [succeeded]
"""
ODD_REPLY = "50% sure: yes, maybe\nsecond line of the reply"
NO_GITHUB = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}
ANNOTATION = re.compile(r"^::(error|warning|notice)(?: (?P<props>[^:]*))?::(?P<message>.*)$")


def agent(messages: list[dict[str, Any]]) -> Any:
    text = messages[-1]["content"]
    if text == "weather":
        return Reply(content="Sunny", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
    if text == "odd":
        return ODD_REPLY
    if text == "broken":
        return Reply(status=500, body="internal error")
    return f"You said: {text}"


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the one line of `text` that contains `needle`."""
    found = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(found) == 1, f"{needle!r} is on lines {found}"
    return found[0]


def unescape_data(text: str) -> str:
    """The reverse of the GitHub workflow-command escaping of a message (`%25`, `%0D`, `%0A`)."""
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


@dataclass(frozen=True)
class Annotation:
    level: str
    props: dict[str, str]  # raw (still escaped) property values
    message: str  # raw (still escaped) message


def parse_annotations(stdout: str) -> list[Annotation]:
    found = []
    for line in stdout.splitlines():
        if not line.startswith("::"):
            continue
        match = ANNOTATION.match(line)
        assert match, f"not a well-formed workflow command: {line!r}"
        props: dict[str, str] = {}
        for part in (match["props"] or "").split(","):
            key, _, value = part.partition("=")
            assert key and key not in props, f"bad property {part!r} in {line!r}"
            props[key] = value
        found.append(Annotation(match[1], props, match["message"]))
    return found


@dataclass(frozen=True)
class ReportRun:
    """The real run that wrote every report, and where things are."""

    folder: Path
    cli: CliResult
    results: dict[str, Any]
    results_path: str  # relative to `folder`

    def out(self, name: str) -> Path:
        return self.folder / "out" / name

    def case(self, name: str) -> dict[str, Any]:
        return next(c for c in self.results["cases"] if c["id"] == f"{SPEC_PATH}::{name}")


def start_run(folder: Path, name: str, *args: str, env: dict[str, str | None] | None = None) -> ReportRun:
    """`specengine run` on the spec, results in out/<name>.json (each test its own file)."""
    output = f"out/{name}.json"
    cli = run_cli(["run", SPEC_PATH, "--output", output, *args], cwd=folder, env=env)
    path = folder / output
    assert path.exists(), cli.output
    return ReportRun(folder, cli, json.loads(path.read_text(encoding="utf-8")), output)


@pytest.fixture(scope="module")
def server():
    with AgentServer() as agent_server:
        agent_server.script(agent)
        yield agent_server


@pytest.fixture(scope="module")
def project(tmp_path_factory, server):
    folder = tmp_path_factory.mktemp("reports")
    write_project(folder, endpoints={"agent": server.endpoint(retries=0)})
    write_spec(folder, SPEC_PATH, SPEC)
    return folder


@pytest.fixture(scope="module")
def report_run(project):
    """One run with --html, --md and --junit, outside GitHub Actions."""
    run = start_run(
        project,
        "all-reports",
        "--html",
        "out/report.html",
        "--md",
        "out/summary.md",
        "--junit",
        "out/junit.xml",
        env=NO_GITHUB,
    )
    assert run.cli.exit_code == 1, run.cli.output
    return run


# ---------------------------------------------------------------------------------------------------
# The run itself


def test_the_run_recorded_what_the_reports_are_about(report_run):
    validate_results(report_run.results)
    statuses = {c["eval"]: c["status"] for c in report_run.results["cases"]}
    assert statuses == {
        "sunny": "passed",
        "two wrong": "failed",
        "one wrong": "failed",
        "down": "error",
        "later": "skipped",
    }
    for line in ("wrote out/junit.xml", "wrote out/report.html", "wrote out/summary.md"):
        assert line in report_run.cli.stdout
    assert "::error" not in report_run.cli.stdout  # not in GitHub Actions, no --format github


@pytest.mark.parametrize(
    ("command", "formats"),
    [("run", FORMATS), ("regrade", FORMATS), ("report", FORMATS), ("compare", formats_named(["markdown"]))],
)
def test_commands_offer_the_options_of_the_report_formats(command, formats):
    """Each format declares its option once; every command that writes reports shows it the same way."""
    help_text = " ".join(run_cli([command, "--help"]).stdout.split())
    options = [f.option for f in formats if f.option is not None]
    assert options
    for option in options:
        shown = f"{option.flag} {option.metavar}" if option.metavar else option.flag
        assert f"{shown} {option.help}" in help_text, (command, option.flag)
    others = {f.option.flag for f in FORMATS if f.option is not None} - {o.flag for o in options}
    assert all(f"{flag} " not in help_text for flag in others - {"--json"})  # compare's --json is its own


# ---------------------------------------------------------------------------------------------------
# JUnit


def test_junit_has_a_testcase_per_case_and_lists_every_failed_check_as_spec_line(report_run):
    root = ET.parse(report_run.out("junit.xml")).getroot()
    testcases = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert sorted(testcases) == sorted(c["id"] for c in report_run.results["cases"])
    assert len(list(root.iter("testcase"))) == len(report_run.results["cases"])
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "5",
        "2",
        "1",
        "1",
    )

    two = testcases[f"{SPEC_PATH}::two wrong"]
    failure = two.find("failure")
    assert failure is not None
    includes_line = line_of(SPEC, 'includes: "100%, done: ok"')
    tool_line = line_of(SPEC, '- name: "tool: none, 50%"')
    succeeded_line = line_of(SPEC, "      - succeeded")
    assert failure.get("message").startswith("2 checks failed; first: ")
    assert f"({SPEC_PATH}:{includes_line})" in failure.get("message")
    listed = [line for line in failure.text.splitlines() if line.startswith(SPEC_PATH + ":")]
    assert [line.split(":")[1] for line in listed] == [str(includes_line), str(tool_line)]
    assert "whether book_table was called cannot be seen" in failure.text
    assert f"{SPEC_PATH}:{succeeded_line}" not in failure.text  # the check that passed is not listed
    assert ODD_REPLY in two.find("system-out").text  # the transcript, newline and all
    assert two.get("line") == str(line_of(SPEC, "- name: two wrong"))

    one = testcases[f"{SPEC_PATH}::one wrong"].find("failure")
    assert one.get("message").startswith(
        f'not_includes "Sunny" ({SPEC_PATH}:{line_of(SPEC, "not_includes")})'
    )
    assert testcases[f"{SPEC_PATH}::down"].find("error") is not None
    assert testcases[f"{SPEC_PATH}::later"].find("skipped").get("message") == "waiting for the booking tool"
    assert list(testcases[f"{SPEC_PATH}::sunny"]) == []  # a passed case has no child elements


# ---------------------------------------------------------------------------------------------------
# HTML


def embedded_data(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="specengine-data">(.*?)</script>', html, re.S)
    assert match, "no embedded results"
    return json.loads(match[1])


def test_html_is_one_self_contained_file_holding_every_case(report_run):
    html = report_run.out("report.html").read_text(encoding="utf-8")
    remote = re.findall(r"""\b(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    assert remote == []
    assert re.search(r"<script[^>]+\bsrc\s*=", html, re.I) is None
    assert re.search(r"<link\b", html, re.I) is None
    assert re.search(r"@import|url\(\s*['\"]?(?:https?:)?//", html, re.I) is None
    data = embedded_data(html)
    assert [c["id"] for c in data["cases"]] == [c["id"] for c in report_run.results["cases"]]
    assert data["cases"] == report_run.results["cases"]
    assert data["summary"]["failed"] == 2


# ---------------------------------------------------------------------------------------------------
# Markdown


def test_markdown_has_counts_pass_rate_and_a_failures_table(report_run):
    md = report_run.out("summary.md").read_text(encoding="utf-8")
    first = md.splitlines()[0]
    assert first == "## ❌ specengine: 1 of 4 cases passed (25.0%)"
    assert "**1** passed · **2** failed · **1** errored · 1 skipped" in md
    assert f"run `{report_run.results['run_id']}`" in md
    assert "### Failures (3 cases)" in md
    rows = [line for line in md.splitlines() if line.startswith("| ❌") or line.startswith("| 💥")]
    cells = [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]
    where_reason = [(c[2], c[3]) for c in cells]
    includes_line = line_of(SPEC, 'includes: "100%, done: ok"')
    tool_line = line_of(SPEC, '- name: "tool: none, 50%"')
    assert (f"`{SPEC_PATH}:{includes_line}`", f"`{SPEC_PATH}:{tool_line}`") == (
        where_reason[0][0],
        where_reason[1][0],
    )
    assert where_reason[0][1].startswith('the reply does not include "100%, done: ok"')
    assert where_reason[1][1].startswith(
        "the endpoint reported no tool call in any turn, so whether book\\_table"
    )
    assert where_reason[2][0] == f"`{SPEC_PATH}:{line_of(SPEC, 'not_includes')}`"
    assert where_reason[3][0] == f"`{SPEC_PATH}:{line_of(SPEC, '- name: down')}`"  # the errored case
    assert "500" in where_reason[3][1]
    assert len(rows) == 4
    assert "1 skipped</summary>" in md and "waiting for the booking tool" in md


# ---------------------------------------------------------------------------------------------------
# `specengine report` on the same results file


def test_report_command_writes_the_same_files_from_the_results(report_run):
    folder = report_run.folder
    cli = run_cli(
        [
            "report",
            report_run.results_path,
            "--html",
            "again/report.html",
            "--md",
            "again/summary.md",
            "--junit",
            "again/junit.xml",
        ],
        cwd=folder,
        env=NO_GITHUB,
    )
    assert cli.exit_code == 0, cli.output
    for name in ("report.html", "summary.md", "junit.xml"):
        assert (folder / "again" / name).read_bytes() == report_run.out(name).read_bytes(), name


def test_report_json_prints_the_results_file_as_it_is(report_run):
    cli = run_cli(["report", report_run.results_path, "--json"], cwd=report_run.folder, env=NO_GITHUB)
    assert cli.exit_code == 0, cli.output
    assert cli.stdout == (report_run.folder / report_run.results_path).read_text(encoding="utf-8")


def test_regrade_writes_the_reports_report_would_write_from_its_results(report_run):
    folder = report_run.folder
    outputs = (
        "--junit",
        "regraded/junit.xml",
        "--html",
        "regraded/report.html",
        "--md",
        "regraded/summary.md",
    )
    regrade = run_cli(
        ["regrade", report_run.results_path, "--output", "regraded/results.json", *outputs],
        cwd=folder,
        env=NO_GITHUB,
    )
    assert regrade.exit_code == 1, regrade.output  # the same failures, graded again
    for line in ("wrote regraded/junit.xml", "wrote regraded/report.html", "wrote regraded/summary.md"):
        assert line in regrade.stdout
    again = ("--junit", "from-regraded/junit.xml", "--html", "from-regraded/report.html")
    report = run_cli(
        ["report", "regraded/results.json", *again, "--md", "from-regraded/summary.md"],
        cwd=folder,
        env=NO_GITHUB,
    )
    assert report.exit_code == 0, report.output
    for name in ("junit.xml", "report.html", "summary.md"):
        assert (folder / "from-regraded" / name).read_bytes() == (folder / "regraded" / name).read_bytes(), (
            name
        )
    assert "## ❌ specengine: 1 of 4 cases passed (25.0%)" in (folder / "regraded" / "summary.md").read_text()


def test_report_markdown_to_stdout_matches_the_file(report_run):
    cli = run_cli(["report", report_run.results_path, "--md", "-"], cwd=report_run.folder, env=NO_GITHUB)
    assert cli.exit_code == 0, cli.output
    assert cli.stdout == report_run.out("summary.md").read_text(encoding="utf-8")  # no extra blank line


# ---------------------------------------------------------------------------------------------------
# GitHub annotations and the step summary


def check_annotations(annotations: list[Annotation], results: dict[str, Any]) -> None:
    """Every failed gate and the errored case are annotated at their YAML line, escaped by the rules."""
    assert [a.level for a in annotations] == ["error"] * 4
    assert all(a.props["file"] == SPEC_PATH for a in annotations)
    lines = [int(a.props["line"]) for a in annotations]
    assert lines == [
        line_of(SPEC, 'includes: "100%, done: ok"'),
        line_of(SPEC, '- name: "tool: none, 50%"'),
        line_of(SPEC, "not_includes"),
        line_of(SPEC, "- name: down"),
    ]
    includes, tool, _, down = annotations
    cases = {c["eval"]: c for c in results["cases"]}
    check = next(c for c in cases["two wrong"]["trials"][0]["checks"] if c["matcher"] == "includes")
    reason = check["reason"]
    assert "%" in reason and ":" in reason and "," in reason  # the test needs all three in the reason

    # message: `%` and line breaks escaped; `:` and `,` stay
    assert "%25, done: ok" in includes.message
    assert "\n" not in includes.message and "%0A" in includes.message
    assert unescape_data(includes.message).startswith(reason + "\nexpected: ")
    assert "50%25 sure: yes, maybe" in includes.message  # the reply, in the `got:` part
    assert re.search(r"%(?!25|0A|0D)", includes.message) is None  # no bare % left

    # properties: `:` and `,` escaped too, so the title cannot end the property list early
    title = tool.props["title"]
    assert title == f"{SPEC_PATH}%3A%3Atwo wrong%3A tool%3A none%2C 50%25"
    assert unescape_property(title) == f"{SPEC_PATH}::two wrong: tool: none, 50%"
    assert "," not in title and ":" not in title
    assert unescape_data(tool.message).startswith("the endpoint reported no tool call in any turn")
    assert "500" in unescape_data(down.message)


@pytest.mark.parametrize(
    ("name", "args", "env"),
    [
        ("actions", (), {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None}),
        ("format-github", ("--format", "github"), NO_GITHUB),
        ("github-switch", ("--github",), NO_GITHUB),
        (
            "every-way",
            ("--github", "--format", "github"),
            {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None},
        ),
    ],
)
def test_annotations_in_github_actions_or_when_asked(project, name, args, env):
    run = start_run(project, name, *args, env=env)
    assert run.cli.exit_code == 1
    annotations = parse_annotations(run.cli.stdout)
    check_annotations(annotations, run.results)  # each failure once, however many ways they were asked for
    report = run_cli(["report", run.results_path, "--github"], cwd=project, env=NO_GITHUB)
    assert report.exit_code == 0, report.output
    assert parse_annotations(report.stdout) == annotations


def test_format_is_checked_before_the_run(project, server):
    before = server.hits()
    typo = run_cli(
        ["run", SPEC_PATH, "--output", "out/typo.json", "--format", "githb"], cwd=project, env=NO_GITHUB
    )
    assert typo.exit_code == 2, typo.output
    assert "githb" in typo.stderr and "github" in typo.stderr
    assert server.hits() == before
    upper = start_run(project, "format-upper", "--format", "GitHub", env=NO_GITHUB)
    assert len(parse_annotations(upper.cli.stdout)) == 4


def test_annotations_go_to_stderr_with_json(project):
    run = start_run(project, "json", "--json", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None})
    assert run.cli.exit_code == 1
    assert json.loads(run.cli.stdout) == run.results  # stdout stays pure JSON
    check_annotations(parse_annotations(run.cli.stderr), run.results)


def test_step_summary_is_appended_not_overwritten(project, tmp_path):
    summary = tmp_path / "step-summary.md"
    earlier = "### an earlier step wrote this\n"
    summary.write_text(earlier, encoding="utf-8")
    env = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": str(summary)}
    run = start_run(project, "summary-1", "--md", "out/step.md", env=env)
    assert run.cli.exit_code == 1
    markdown = run.out("step.md").read_text(encoding="utf-8")
    assert markdown.startswith("## ❌ specengine: 1 of 4 cases passed (25.0%)")
    assert summary.read_text(encoding="utf-8") == earlier + markdown
    assert run.results["run_id"] in markdown

    second = start_run(project, "summary-2", env=env)  # no --md: the summary is still written
    text = summary.read_text(encoding="utf-8")
    assert text.startswith(earlier + markdown)
    assert text.count("## ❌ specengine:") == 2
    assert f"run `{second.results['run_id']}`" in text


# ---------------------------------------------------------------------------------------------------
# Annotations need paths relative to the repository, not to the project file


@pytest.mark.parametrize("where", ["repo root", "project folder with GITHUB_WORKSPACE"])
def test_annotation_paths_are_relative_to_the_repository(server, tmp_path, where):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    project = repo / "evals"
    write_project(project, endpoints={"agent": server.endpoint(retries=0)})
    spec = "evals:\n  - name: wrong\n    send: hi\n    expect:\n      - includes: nope\n"
    write_spec(project, "specs/x.yaml", spec)
    env: dict[str, str | None] = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": None}
    if where == "repo root":
        cwd, target = repo, "evals/specs"
        env["GITHUB_WORKSPACE"] = None
    else:
        cwd, target = project, "specs"
        env["GITHUB_WORKSPACE"] = str(repo)
    cli = run_cli(["run", target, "--output", tmp_path / "r.json"], cwd=cwd, env=env)
    assert cli.exit_code == 1, cli.output
    [annotation] = parse_annotations(cli.stdout)
    assert annotation.props["file"] == "evals/specs/x.yaml"  # where GitHub finds the file
    assert annotation.props["line"] == str(line_of(spec, "includes: nope"))
    results = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert results["cases"][0]["spec"] == "specs/x.yaml"  # ids stay relative to the project file


# ---------------------------------------------------------------------------------------------------
# The HTML in a real browser


@pytest.fixture
def browser():
    """Chromium for one test: Playwright's sync API holds an event loop open while it runs, and
    `specengine run` (asyncio.run) cannot start inside it, so the browser must not outlive the test."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium binary (install the Debian package `chromium`)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def test_html_in_a_browser_shows_the_failed_case_with_reason_and_transcript(browser, report_run, tmp_path):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            problems.append(f"network request: {route.request.url}")
            route.abort()

    page.route("**/*", guard)
    page.goto(report_run.out("report.html").as_uri())
    assert page.locator("tr.row").count() == 5
    assert page.locator("#pass-rate").inner_text() == "25.0%"

    page.click('button[data-status="failed"]')
    rows = page.locator("tr.row")
    assert rows.count() == 2
    assert all(rows.nth(i).locator(".pill").inner_text() == "Failed" for i in range(2))

    rows.filter(has_text="two wrong").click()
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    failed = drawer.locator(".check.failed")
    assert failed.count() == 2
    assert 'the reply does not include "100%, done: ok"' in failed.nth(0).locator(".reason").inner_text()
    includes_line = line_of(SPEC, 'includes: "100%, done: ok"')
    assert f"{SPEC_PATH}:{includes_line}" in failed.nth(0).inner_text()
    assert failed.nth(1).locator(".name").inner_text() == "tool: none, 50%"
    assert "whether book_table was called cannot be seen" in failed.nth(1).locator(".reason").inner_text()
    transcript = drawer.locator(".transcript").inner_text()
    assert "odd" in transcript
    assert "50% sure: yes, maybe" in transcript and "second line of the reply" in transcript

    shot = tmp_path / "failed-case.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    assert problems == []
    context.close()
