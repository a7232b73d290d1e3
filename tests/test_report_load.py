"""Reading results files: good files load, bad ones give one plain sentence naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specengine.errors import ResultsError
from specengine.results.reader import load_results, parse_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


def test_loads_a_results_file():
    data = load_results(FIXTURES / "basic.json")
    assert data["run_id"] == "a1b2c3d4"
    assert [c["status"] for c in data["cases"]] == [
        "passed",
        "failed",
        "error",
        "skipped",
        "failed",
        "passed",
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("nope.json", None, r"nope\.json: no such file"),
        ("folder", "a folder", "is a folder"),
        ("empty.json", b"  \n", "empty"),
        ("bin.json", b"\xff\xfe\x00garbage", "not UTF-8"),
    ],
)
def test_unreadable_files_are_named_with_the_reason(tmp_path, name, content, message):
    path = tmp_path / name
    if content == "a folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ResultsError, match=message) as err:
        load_results(path)
    assert name in str(err.value)


def test_truncated_json_gives_line_and_column(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"run_id": "x",\n "cases": [')
    with pytest.raises(ResultsError) as err:
        load_results(path)
    assert str(err.value).startswith(f"{path}:2:")
    assert "not valid JSON" in str(err.value)


def test_jsonl_log_is_recognised(tmp_path):
    path = tmp_path / "run.jsonl"
    line = json.dumps({"id": "a::b", "status": "passed"})
    path.write_text(line + "\n" + line + "\n")
    with pytest.raises(ResultsError, match="JSONL log"):
        load_results(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected a JSON object"),
        ('{"summary": {}}', 'no "cases" list'),
        ('{"cases": [1]}', r"cases\[0\]: expected an object"),
        ('{"cases": [{"status": "passed"}]}', 'missing "id"'),
        (
            '{"cases": [{"id": "a", "status": "green"}]}',
            "'green'; expected one of passed, failed, error, skipped",
        ),
        ('{"cases": [{"id": "a", "status": "passed"}, {"id": "a", "status": "failed"}]}', "appears twice"),
        ('{"cases": [{"id": "a", "status": "passed", "trials": {}}]}', '"trials" must be a list'),
    ],
)
def test_shape_errors(text, message):
    with pytest.raises(ResultsError, match=message):
        parse_results(text, "r.json")


def test_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"cases": []}).encode())
    assert load_results(path) == {"cases": []}
