"""Hostile results files: one too large for any command to read, one with NaN in its scores, one
whose stored trials have the wrong types. Every command that reads a results file refuses the first
in one line; NaN reads as missing; regrade names the bad trial and writes nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec

from specengine.errors import ResultsError
from specengine.results.reader import load_results, parse_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"
TOO_LARGE = (
    "error: huge.json: 300 MB, over the 256 MB limit of a results file (SPECENGINE_MAX_RESULTS_MB raises it)"
)


@pytest.fixture
def huge(tmp_path) -> Path:
    """A 300 MB results file that takes no disk: sparse, so reading it would take the memory."""
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(300 * 1024 * 1024)
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["report", "huge.json", "--md", "out.md"],
        ["compare", "good.json", "huge.json"],
        ["compare", "huge.json", "good.json"],
        ["merge", "huge.json", "good.json", "-o", "merged.json"],
        ["regrade", "huge.json"],
    ],
    ids=lambda command: " ".join(command),
)
def test_every_command_refuses_a_results_file_over_the_limit_in_one_line(tmp_path, huge, command):
    shutil.copy(FIXTURES / "basic.json", tmp_path / "good.json")
    result = run_cli(command, cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == TOO_LARGE, result.output  # one line, as wide as the terminal
    assert not (tmp_path / "merged.json").exists()


def test_the_limit_is_set_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "two.json"
    with path.open("wb") as handle:
        handle.truncate(2 * 1024 * 1024)
    monkeypatch.setenv("SPECENGINE_MAX_RESULTS_MB", "1")
    with pytest.raises(ResultsError, match="2 MB, over the 1 MB limit of a results file"):
        load_results(path)
    monkeypatch.setenv("SPECENGINE_MAX_RESULTS_MB", "3")
    with pytest.raises(ResultsError, match="not valid JSON"):  # read, then found to be NUL bytes
        load_results(path)


def test_non_finite_numbers_read_as_missing():
    text = (FIXTURES / "basic.json").read_text()
    text = text.replace('"score": 0.4', '"score": NaN').replace('"score": 0.0', '"score": 1e999', 1)
    text = text.replace('"latency_s": 1.2', '"latency_s": -Infinity')
    data = parse_results(text)
    trial = data["cases"][1]["trials"][0]
    assert trial["latency_s"] is None
    assert [check["score"] for check in trial["checks"]][:2] == [None, None]


def test_regrade_of_wrong_types_names_the_trial_and_writes_nothing(tmp_path):
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(tmp_path, "spec", "evals:\n  - name: hi\n    send: Hi\n    expect: [{includes: a}]\n")
    stored = {
        "run_id": "r1",
        "cases": [
            {"id": "spec.yaml::hi", "spec": "spec.yaml", "eval": "hi", "status": "passed",
             "trials": [{"transcript": ["not a message", 3]}], "checks": []},
        ],
    }  # fmt: skip
    (tmp_path / "old.json").write_text(json.dumps(stored))
    result = run_cli(["regrade", "old.json"], cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()).startswith(
        "error: old.json: cases[0] (spec.yaml::hi): trials[0] cannot be read:"
    )
    assert len(result.output.strip().splitlines()) <= 2  # one line, wrapped by the terminal's width
    assert not list(tmp_path.rglob("*.jsonl")) and not (tmp_path / ".specengine" / "runs").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["report", "deep.json", "--md", "out.md"],
        ["compare", "good.json", "deep.json"],
        ["regrade", "deep.json"],
    ],
    ids=lambda command: command[0],
)
def test_a_results_file_nested_past_the_stack_is_refused_in_one_line(tmp_path, command):
    shutil.copy(FIXTURES / "basic.json", tmp_path / "good.json")
    text = (FIXTURES / "basic.json").read_text()
    (tmp_path / "deep.json").write_text(text.replace("{", '{"x": ' + "[" * 100_000 + "]" * 100_000 + ",", 1))
    result = run_cli(command, cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == (
        "error: deep.json: nested too deep to read; is this a results file?"
    ), result.output
