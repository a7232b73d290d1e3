"""Dataset files read row by row: column mapping, line numbers, located errors, streaming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specengine.errors import SpecError
from specengine.source.datasets import (
    ROW_KEYS,
    Row,
    is_dataset_path,
    iter_rows,
    row_id,
)
from specengine.validation import schema


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as caught:
        list(iter_rows(path, path.name))
    assert len(caught.value.diagnostics) == 1
    return str(caught.value.diagnostics[0])


def test_row_keys_are_the_schemas():
    assert tuple(ROW_KEYS) == tuple(schema.load_schema("spec")["$defs"]["row"]["properties"])


def test_csv_columns_map_onto_row_keys(tmp_path):
    path = write(
        tmp_path,
        "rows.csv",
        "id,city,input.unit,expected.weather,metadata.region,labels\n"
        'paris,Paris,celsius,Sunny,europe,"warm, europe"\n'
        "oslo,Oslo,,Snowy,europe,\n",
    )
    assert list(iter_rows(path, "rows.csv")) == [
        Row(
            {
                "id": "paris",
                "input": {"city": "Paris", "unit": "celsius"},
                "expected": {"weather": "Sunny"},
                "metadata": {"region": "europe"},
                "labels": ["warm", "europe"],
            },
            2,
        ),
        Row(
            {
                "id": "oslo",
                "input": {"city": "Oslo", "unit": ""},
                "expected": {"weather": "Snowy"},
                "metadata": {"region": "europe"},
                "labels": [],
            },
            3,
        ),
    ]


def test_csv_lines_count_quoted_newlines_and_blank_lines(tmp_path):
    path = write(tmp_path, "rows.csv", 'city,note\nParis,"two\nlines"\n\nOslo,x\n')
    assert [row.line for row in iter_rows(path, "rows.csv")] == [2, 5]


def test_csv_empty_id_means_no_id(tmp_path):
    path = write(tmp_path, "rows.csv", "id,city\n,Paris\n")
    assert next(iter_rows(path, "rows.csv")).data == {"input": {"city": "Paris"}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,city\nparis,Paris,extra\n", "rows.csv:2:1: this row has 3 values but the header has 2 columns"),
        ("city,city\nParis,Paris\n", "rows.csv:1:1: column 'city' appears twice (columns 1 and 2)"),
        ("expected,city\nx,Paris\n", "rows.csv:1:1: column 'expected' needs a key: write expected.<name>"),
        ("city,\nParis,x\n", "rows.csv:1:1: column 2 of the header has no name"),
        ("id,city\na[1],Paris\n", "rows.csv:2:1: row id 'a[1]' may not contain '[' or ']'"),
    ],
)
def test_csv_errors_are_located(tmp_path, text, message):
    assert error_of(write(tmp_path, "rows.csv", text)).startswith(message)


def test_csv_that_is_not_utf8(tmp_path):
    path = write(tmp_path, "rows.csv", b"city\nParis\n\xff\xfe\n")
    assert error_of(path).startswith("rows.csv:")
    assert "not UTF-8" in error_of(path)


def test_jsonl_rows_with_lines_and_blank_lines(tmp_path):
    path = write(
        tmp_path, "rows.jsonl", '{"id": 1, "input": {"n": 1}}\n\n{"input": {"n": 2}, "labels": ["a"]}\n'
    )
    assert list(iter_rows(path, "rows.jsonl")) == [
        Row({"id": "1", "input": {"n": 1}}, 1),
        Row({"input": {"n": 2}, "labels": ["a"]}, 3),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"input": {}}\n{"input": }\n', "rows.jsonl:2:11: not valid JSON: Expecting value"),
        ('{"input": {}}\n[1, 2]\n', "rows.jsonl:2:1: a row must be a mapping with keys id, input, expected,"),
        (
            '{"input": "Paris"}\n',
            "rows.jsonl:1:1: the row's 'input' must be a mapping (name: value), not text",
        ),
        ('{"id": true}\n', "rows.jsonl:1:1: the row's 'id' must be text, not true/false"),
        ('{"labels": "a,b"}\n', "rows.jsonl:1:1: the row's 'labels' must be a list of texts"),
        ('{"expect": {}}\n', "rows.jsonl:1:1: unknown key 'expect' in a row - did you mean 'expected'?"),
    ],
)
def test_jsonl_errors_are_located(tmp_path, text, message):
    assert error_of(write(tmp_path, "rows.jsonl", text)).startswith(message)


def test_json_array_rows_keep_their_lines(tmp_path):
    rows = [{"id": "a", "input": {"x": 1}}, {"id": "b", "input": {"x": [1, 2]}}]
    path = write(tmp_path, "rows.json", json.dumps(rows, indent=2))
    assert [(row.data["id"], row.line) for row in iter_rows(path, "rows.json")] == [("a", 2), ("b", 8)]
    assert [row.data for row in iter_rows(write(tmp_path, "one.json", "[]"), "one.json")] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a"}', "rows.json:1:1: a JSON dataset must be a list of rows"),
        ('[\n  {"id": "a"},\n  {"id": }\n]', "rows.json:3:10: not valid JSON: Expecting value"),
        ('[{"id": "a"} {"id": "b"}]', "rows.json:1:14: not valid JSON: expected ',' or ']' after a row"),
        ('[{"id": "a"}] x', "rows.json:1:15: not valid JSON: extra text after the closing ']'"),
        ("  ", "rows.json:1:1: the dataset is empty"),
    ],
)
def test_json_errors_are_located(tmp_path, text, message):
    assert error_of(write(tmp_path, "rows.json", text)).startswith(message)


def test_yaml_rows_and_errors(tmp_path):
    path = write(tmp_path, "rows.yaml", "- id: a\n  input: {city: Paris}\n- {id: b, expected: {w: no}}\n")
    assert list(iter_rows(path, "rows.yaml")) == [
        Row({"id": "a", "input": {"city": "Paris"}}, 1),
        Row({"id": "b", "expected": {"w": "no"}}, 3),
    ]
    bad = write(tmp_path, "bad.yaml", "- id: a\n- id: b\n  inptu: {}\n")
    assert error_of(bad).startswith("bad.yaml:2:3: unknown key 'inptu' in a row - did you mean 'input'?")
    not_list = write(tmp_path, "map.yaml", "id: a\n")
    assert error_of(not_list).startswith("map.yaml:1:1: a YAML dataset must be a list of rows")


def test_jsonl_rows_are_streamed(tmp_path):
    """The first rows of a JSON Lines file arrive before a bad row further down is read."""
    path = write(tmp_path, "rows.jsonl", '{"id": "a"}\n{"id": "b"}\nnot json\n')
    rows = iter_rows(path, "rows.jsonl")
    assert next(rows).data == {"id": "a"}
    assert next(rows).data == {"id": "b"}
    with pytest.raises(SpecError):
        next(rows)


def test_unknown_suffix_and_missing_file(tmp_path):
    assert error_of(tmp_path / "rows.txt").startswith("rows.txt:1:1: a dataset must be a .csv, .jsonl")
    assert error_of(tmp_path / "gone.csv").startswith("gone.csv:1:1: cannot read the dataset")


def test_is_dataset_path():
    assert is_dataset_path("data/cities.csv")
    assert is_dataset_path("rows.JSONL")
    assert not is_dataset_path("none")
    assert not is_dataset_path([{"id": "a"}])
    assert not is_dataset_path("notes.txt")


def test_row_id_is_the_id_else_a_stable_hash():
    assert row_id({"id": "paris", "input": {"city": "Paris"}}) == "paris"
    first = row_id({"input": {"a": 1, "b": 2}, "expected": {"x": "y"}})
    assert first == row_id({"expected": {"x": "y"}, "input": {"b": 2, "a": 1}, "labels": ["z"]})
    assert len(first) == 8 and int(first, 16) >= 0
    assert first != row_id({"input": {"a": 1, "b": 3}, "expected": {"x": "y"}})


def test_row_ids_are_stable_across_versions():
    # Case ids in results files and baselines hold these ids: they must never change.
    assert row_id({"id": "a"}) == "a"
    assert row_id({"input": {"city": "Oslo"}}) == "d36fa15d"
    assert row_id({"expected": {"n": 1.5}}) == "71c4526d"
    assert row_id({"id": "", "input": {"x": 1}}) == "addfdc01"
