"""Datasets: row keys, CSV columns, merging over the eval, row ids and their problems.

docs/spec-format.md sections: [Datasets](../docs/spec-format.md#datasets),
[Row ids and case ids](../docs/spec-format.md#row-ids-and-case-ids).
"""

from __future__ import annotations

import json

import pytest


def _setup(write_project, write_spec, folder, dataset: str, send: str = "{{ input.city }}"):
    write_project(folder, endpoints={"demo": {"protocol": "demo"}})
    write_spec(
        folder,
        "s",
        f"""
        dataset: {dataset}
        labels: [file]
        evals:
          - name: e
            input: {{city: Lyon, country: France}}
            expected: {{weather: Rain, temperature: 10}}
            send: "{send}"
            expect: [succeeded]
        """,
    )


def _cases(run_cli, cwd):
    result = run_cli(["plan", "s.yaml", "--json"], cwd=cwd)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["cases"]


def test_csv_columns_fill_id_labels_input_expected_and_metadata(run_cli, write_project, write_spec, tmp_path):
    (tmp_path / "rows.csv").write_text(
        'id,city,input.zip,expected.weather,metadata.owner,labels\nparis,Paris,75001,Sunny,me," a, b "\n'
    )
    send = (
        "{{ input.city }} {{ input.country }} {{ input.zip }} {{ expected.weather }}"
        " {{ expected.temperature }} {{ metadata.owner }}"
    )
    _setup(write_project, write_spec, tmp_path, "rows.csv", send)
    (case,) = _cases(run_cli, tmp_path)
    assert case["id"] == "s.yaml::e[paris]"
    assert case["labels"] == ["file", "a", "b"]
    # a row's input and expected merge over the eval's, key by key at the top level
    assert case["steps"][0]["send"] == "Paris France 75001 Sunny 10 me"


@pytest.mark.parametrize(
    ("header", "row", "problem"),
    [
        pytest.param(
            "city,input.city",
            "Paris,Lyon",
            "rows.csv:1:1: columns 'city' and 'input.city' both fill input.city: keep one of them",
            id="two columns that fill the same key",
        ),
        pytest.param(
            "expected,city",
            "x,Paris",
            "rows.csv:1:1: column 'expected' needs a key: write expected.<name>, e.g. expected.city",
            id="a column named like a row mapping needs a key",
        ),
        pytest.param(
            "id,city",
            "a::b,Paris",
            "rows.csv:2:1: row id 'a::b' may not contain '::': case ids use '::' and '[...]' as separators",
            id="row ids may not hold case id separators",
        ),
    ],
)
def test_a_bad_csv_header_or_id_is_an_error_at_its_line(
    run_cli, write_project, write_spec, tmp_path, header, row, problem
):
    (tmp_path / "rows.csv").write_text(f"{header}\n{row}\n")
    _setup(write_project, write_spec, tmp_path, "rows.csv")
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [problem]


def test_a_row_may_hold_only_the_row_keys(run_cli, write_project, write_spec, tmp_path):
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "a", "input": {"city": "Paris"}}\n{"id": "b", "city": "Rome"}\n'
    )
    _setup(write_project, write_spec, tmp_path, "rows.jsonl")
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("rows.jsonl:2:1: unknown key 'city' in a row")
    assert (
        "a row may hold only id, input, expected, metadata, labels (put template variables under input)"
        in line
    )


def test_row_ids_hash_input_and_expected_and_survive_reordering(run_cli, write_project, write_spec, tmp_path):
    rows = tmp_path / "rows.jsonl"
    first = {"input": {"city": "Paris"}, "labels": ["x"]}
    second = {"input": {"city": "Rome"}, "expected": {"weather": "Sun"}}
    rows.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    _setup(write_project, write_spec, tmp_path, "rows.jsonl")
    before = [case["id"] for case in _cases(run_cli, tmp_path)]
    first["labels"] = ["y"]  # labels and metadata are not part of the id
    rows.write_text(json.dumps(second) + "\n" + json.dumps(first) + "\n")
    after = [case["id"] for case in _cases(run_cli, tmp_path)]
    assert sorted(before) == sorted(after) and before != after
    import hashlib

    canonical = json.dumps(
        {"input": {"city": "Paris"}, "expected": {}},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert before[0] == f"s.yaml::e[{hashlib.sha256(canonical.encode()).hexdigest()[:8]}]"


def test_duplicate_row_ids_name_both_lines_in_files_and_inline(run_cli, write_project, write_spec, tmp_path):
    (tmp_path / "rows.csv").write_text("id,city\nx,Paris\ny,Rome\nx,Oslo\n")
    _setup(write_project, write_spec, tmp_path, "rows.csv")
    write_spec(
        tmp_path,
        "inline",
        """
        evals:
          - name: e
            dataset:
              - {id: 1, input: {a: 1}}
              - {id: "1"}
              - {input: {a: 2}}
              - {input: {a: 2}}
              - {id: 1.10}
              - {id: 1.1}
            send: x
            expect: [succeeded]
        """,
    )
    result = run_cli(["validate", "s.yaml", "inline.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "inline.yaml:5:9: duplicate row id '1' (first used on line 4)",
        "inline.yaml:7:9: this row has the same input and expected as the row on line 6"
        " (both get the id c27ee922): give the rows an id column or make them differ",
        "rows.csv:4:1: duplicate row id 'x' (first used on line 2)",
    ]


def test_dataset_paths_are_relative_to_the_spec_folder_and_a_missing_file_is_named(
    run_cli, write_project, write_spec, tmp_path
):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    (tmp_path / "specs" / "data").mkdir(parents=True)
    (tmp_path / "specs" / "data" / "rows.yaml").write_text("- {id: a, input: {city: Paris}}\n")
    spec = "dataset: data/{name}\nevals: [{{name: e, send: x, expect: [succeeded]}}]\n"
    write_spec(tmp_path, "specs/ok.yaml", spec.format(name="rows.yaml"))
    write_spec(tmp_path, "specs/missing.yaml", spec.format(name="nope.csv"))
    result = run_cli(["validate", ".."], cwd=tmp_path / "specs" / "data")
    assert result.exit_code == 1
    spec = (tmp_path / "specs" / "missing.yaml").resolve().as_posix()  # outside the working folder
    assert result.stdout.splitlines() == [f"{spec}:1:10: dataset file not found: nope.csv"]
