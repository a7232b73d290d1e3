"""`specengine report`: writes each requested output from a results file; usage and input errors exit 2."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

import specengine.commands.compare  # noqa: F401  (registers the command)
import specengine.commands.merge  # noqa: F401
import specengine.commands.report  # noqa: F401
from specengine.cli import app

FIXTURES = Path(__file__).parent / "fixtures" / "results"
BASIC = str(FIXTURES / "basic.json")
runner = CliRunner()


def test_writes_all_outputs(tmp_path):
    html, md, junit = tmp_path / "r.html", tmp_path / "md" / "r.md", tmp_path / "j.xml"
    res = runner.invoke(app, ["report", BASIC, "--html", str(html), "--md", str(md), "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    assert 'id="specengine-data"' in html.read_text(encoding="utf-8")
    assert md.read_text(encoding="utf-8").startswith("## ❌ specengine: 2 of 5 cases passed")
    assert ET.parse(junit).getroot().get("failures") == "2"
    assert f"wrote {junit}" in res.stderr


def test_markdown_to_stdout_with_baseline():
    res = runner.invoke(
        app, ["report", str(FIXTURES / "head.json"), "--md", "-", "--baseline", str(FIXTURES / "base.json")]
    )
    assert res.exit_code == 0, res.output
    assert "### Compared with `base0001`" in res.stdout
    assert "wrote" not in res.stderr


def test_github_annotations_on_stdout():
    res = runner.invoke(app, ["report", BASIC, "--github"])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("::error file=specs/weather.yaml,line=35,")


def test_no_output_is_a_usage_error():
    res = runner.invoke(app, ["report", BASIC])
    assert res.exit_code == 2
    assert "give at least one output" in res.output


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("gone.json", None, "gone.json: no such file"),
        ("spec.json", '{"evals": []}', 'not a specengine results file (no "cases" list)'),
    ],
)
def test_unreadable_results_exit_2_and_write_nothing(tmp_path, name, content, message):
    if content is not None:
        (tmp_path / name).write_text(content)
    res = runner.invoke(app, ["report", str(tmp_path / name), "--junit", str(tmp_path / "j.xml")])
    assert res.exit_code == 2
    assert message in res.stderr
    assert not (tmp_path / "j.xml").exists()


def test_unwritable_output_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = runner.invoke(app, ["report", BASIC, "--junit", str(blocker / "j.xml")])
    assert res.exit_code == 2
    assert "cannot write" in res.stderr
    assert "Traceback" not in res.output
