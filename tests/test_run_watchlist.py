"""Nothing a user should watch is left unsaid: the console, the Markdown summary and the HTML overview
name the failed soft checks and the skipped cases (with why); `run -v` lists every case with its
status and, with trials, k/N passed; `validate` counts specs and the project file apart."""

from __future__ import annotations

import html
import re

import pytest
from support.cli import run_cli, write_project, write_spec
from support.support_bot import SupportBot

SPEC = """
evals:
  - name: refund
    send: I want a refund
    expect:
      - includes: on its way
      - includes: refund number
        soft: true
      - latency_below: 0.000001
        soft: true
  - name: greeting
    send: hello
    expect:
      - judge: closed_qa
        criteria: Is the reply a greeting?
  - name: order status
    send: Where is ORD-123?
    trials: 2
    expect:
      - called_tool: lookup_order
"""

SOFT = '2 soft checks failed: includes "refund number" (refund), latency_below 0.000001 (refund)'


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    folder = tmp_path_factory.mktemp("watch")
    with SupportBot() as bot:
        write_project(folder, endpoints={"bot": bot.endpoint()})
        write_spec(folder, "spec", SPEC)
        run = run_cli(["run", "spec.yaml", "-v", "--md", "out.md", "--html", "out.html"], cwd=folder)
        validated = run_cli(["validate", "spec.yaml"], cwd=folder)
    return folder, run, validated


def test_the_console_names_soft_failures_and_skipped_cases(watched):
    _, run, _ = watched
    assert run.exit_code == 0, run.output
    assert SOFT in run.stdout
    assert "1 skipped: greeting (no judge configured (--judge-model))" in run.stdout


def test_verbose_lists_every_case_with_k_of_n(watched):
    _, run, _ = watched
    lines = run.stdout.splitlines()
    assert "PASSED spec.yaml::refund" in lines
    assert "SKIPPED spec.yaml::greeting (no judge configured (--judge-model))" in lines
    assert "PASSED spec.yaml::order status (2/2 passed)" in lines


def test_the_markdown_and_html_summaries_name_them_too(watched):
    folder, _, _ = watched
    markdown = re.sub(r"\\(.)", r"\1", (folder / "out.md").read_text(encoding="utf-8"))  # as rendered
    assert SOFT in markdown and "1 skipped: greeting (no judge configured" in markdown
    page = html.unescape((folder / "out.html").read_text(encoding="utf-8"))
    assert SOFT in page and "1 skipped: greeting (no judge configured" in page


def test_validate_counts_specs_and_the_project_file_apart(watched):
    _, _, validated = watched
    assert validated.exit_code == 0
    assert validated.stderr.strip() == "1 spec valid, project file valid"
