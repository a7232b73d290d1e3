"""Specs and datasets as people write and save them: YAML mistakes in words, and files from Excel and
Windows read as meant.

Through the real CLI: an unquoted colon inside text is shown back quoted; a line indented under a
value and a matcher's options written beside it (not under it) say how to indent them; CSV files
saved with `;` or tabs (or Excel's `sep=` line) are read by their delimiter; a UTF-8 byte order mark
and Windows line ends work in specs, the project file and every dataset format; a UTF-16 file is
named as such; a dataset path that is not found gets the path where the file is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".git").mkdir()
    write_project(tmp_path, endpoints={"agent": {"protocol": "demo"}})
    return tmp_path


def _problems(folder: Path, spec: str, name: str = "spec.yaml") -> list[str]:
    write_spec(folder, name, spec)
    result = run_cli(["validate", name], cwd=folder)
    assert "Traceback" not in result.output
    lines = result.stdout.splitlines()
    assert result.exit_code == (1 if lines else 0), result.output
    return lines


# --- YAML mistakes in words ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        pytest.param(
            """
            evals:
              - name: total
                send: What is my total?
                expect:
                  - includes: Total: $45.00
            """,
            "spec.yaml:5:19: a colon and a space inside text start a new key in YAML: put the text in quotes:"
            ' - includes: "Total: $45.00"',
            id="a check's text",
        ),
        pytest.param(
            """
            evals:
              - name: note
                send: Note: I'll call back  # a comment stays a comment
                expect: [succeeded]
            """,
            "spec.yaml:3:11: a colon and a space inside text start a new key in YAML: put the text in quotes:"
            ' send: "Note: I\'ll call back" # a comment stays a comment',
            id="a send with a comment",
        ),
        pytest.param(
            """
            evals:
              - name: quotes inside
                send: hi
                description: He said "refund": no
                expect: [succeeded]
            """,
            "spec.yaml:4:18: a colon and a space inside text start a new key in YAML: put the text in quotes:"
            " description: 'He said \"refund\": no'",
            id="text holding double quotes",
        ),
        pytest.param(
            """
            evals:
              - name: indented
                send: hi
                  expect: [succeeded]
            """,
            "spec.yaml:4:7: this line is indented further than the line above it, so YAML reads it as more"
            " of that line's value: indent it as the keys it belongs with (or, if it is text, put the whole"
            " text in quotes)",
            id="a key indented under a value",
        ),
    ],
)
def test_yaml_mistakes_say_what_to_write(project, spec, problem):
    assert _problems(project, spec) == [problem]


def test_a_colon_in_text_of_a_windows_file(project):
    (project / "spec.yaml").write_bytes(
        b"\xef\xbb\xbfevals:\r\n  - name: a\r\n    send: Order: A-1\r\n    expect: [succeeded]\r\n"
    )
    result = run_cli(["validate", "spec.yaml"], cwd=project)
    assert result.stdout.splitlines() == [
        "spec.yaml:3:11: a colon and a space inside text start a new key in YAML: put the text in quotes:"
        ' send: "Order: A-1"'
    ]


def test_matcher_options_beside_the_matcher_say_to_indent_them(project):
    spec = """
    evals:
      - name: refund
        send: I want a refund
        expect:
          - called_tool_with:
            name: refund
            args: {amount: 5}
          - is_json:
            type: object
            required: [order_id]
      - name: in a turn
        turns:
          - send: hi
            expect:
              - called_tool_with:
                name: refund
                args: {amount: 5}
    """
    assert _problems(project, spec) == [
        "spec.yaml:5:9: name and args must be indented under called_tool_with: as written they sit beside"
        " it, so called_tool_with is empty; indent them 2 spaces more than 'called_tool_with:'",
        "spec.yaml:8:9: type and required must be indented under is_json: as written they sit beside it,"
        " so is_json is empty; indent them 2 spaces more than 'is_json:'",
        "spec.yaml:15:13: name and args must be indented under called_tool_with: as written they sit beside"
        " it, so called_tool_with is empty; indent them 2 spaces more than 'called_tool_with:'",
    ]
    options = ("name: refund", "args: {amount: 5}", "type: object", "required: [order_id]")
    fixed = "".join(
        f"  {line}" if line.strip() in options else line for line in spec.splitlines(keepends=True)
    )
    assert _problems(project, fixed) == []
    one = "evals:\n  - name: a\n    send: hi\n    expect:\n      - is_json:\n        type: array\n"
    assert _problems(project, one) == [
        "spec.yaml:5:9: type must be indented under is_json: as written it sits beside it, so is_json is"
        " empty; indent it 2 spaces more than 'is_json:'",
    ]


# --- datasets as people save them ------------------------------------------------------------------

SPEC = """
dataset: data/orders.{suffix}
evals:
  - name: total
    send: "Total of {{{{ input.order }}}}?"
    expect: [{{includes: "{{{{ expected.total }}}}"}}]
"""


def _run(folder: Path, suffix: str) -> list[dict]:
    """Run the spec over data/orders.<suffix> with the demo agent; the cases of the results."""
    result = run_cli(["run", f"{suffix}.yaml", "--output", f"{suffix}.json"], cwd=folder)
    assert result.exit_code in (0, 1), result.output
    return json.loads((folder / f"{suffix}.json").read_text(encoding="utf-8"))["cases"]


def _save(path: Path, text: str, *, bom: bool = True, crlf: bool = True) -> None:
    data = text.replace("\n", "\r\n") if crlf else text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode("utf-8"))


@pytest.mark.parametrize(
    "csv",
    [
        pytest.param("id;order;expected.total\nr1;A-1;45,00\nr2;A-2;12,50\n", id="semicolons"),
        pytest.param("id\torder\texpected.total\nr1\tA-1\t45,00\nr2\tA-2\t12,50\n", id="tabs"),
        pytest.param("sep=;\nid;order;expected.total\nr1;A-1;45,00\nr2;A-2;12,50\n", id="Excel's sep line"),
        pytest.param('id,order,expected.total\nr1,A-1,"45,00"\nr2,A-2,"12,50"\n', id="commas"),
    ],
)
def test_csv_files_from_excel_are_read_by_their_delimiter(project, csv):
    _save(project / "data" / "orders.csv", csv)
    write_spec(project, "csv.yaml", SPEC.format(suffix="csv"))
    cases = _run(project, "csv")
    assert [case["id"] for case in cases] == ["csv.yaml::total[r1]", "csv.yaml::total[r2]"]
    assert [case["expected"] for case in cases] == [{"total": "45,00"}, {"total": "12,50"}]
    assert cases[0]["trials"][0]["transcript"][0]["content"] == "Total of A-1?"


ROWS = {
    "jsonl": '{"id": "r1", "input": {"order": "A-1"}, "expected": {"total": "45.00"}}\n',
    "json": '[\n  {"id": "r1", "input": {"order": "A-1"}, "expected": {"total": "45.00"}}\n]\n',
    "yaml": "- id: r1\n  input: {order: A-1}\n  expected: {total: '45.00'}\n",
    "csv": "id,order,expected.total\nr1,A-1,45.00\n",
}


@pytest.mark.parametrize("suffix", list(ROWS))
def test_a_byte_order_mark_and_windows_line_ends_everywhere(tmp_path, suffix):
    (tmp_path / ".git").mkdir()
    _save(
        tmp_path / "specengine.yaml", "endpoints:\n  agent: {protocol: demo}\ndefaults: {endpoint: agent}\n"
    )
    _save(tmp_path / "data" / f"orders.{suffix}", ROWS[suffix])
    _save(
        tmp_path / f"{suffix}.yaml",
        SPEC.format(suffix=suffix).replace('"Total', "|\n      Total").replace('?"', "?"),
    )
    assert run_cli(["validate", f"{suffix}.yaml"], cwd=tmp_path).exit_code == 0
    (case,) = _run(tmp_path, suffix)
    assert case["id"] == f"{suffix}.yaml::total[r1]"
    assert case["expected"] == {"total": "45.00"}
    assert case["trials"][0]["transcript"][0]["content"] == "Total of A-1?\n"


def test_a_row_with_too_few_values_names_the_delimiter(project):
    _save(project / "data" / "orders.csv", "id;order;expected.total\nr1;A-1;45\nr2,A-2,12\n")
    assert _problems(project, SPEC.format(suffix="csv")) == [
        "data/orders.csv:3:1: this row has 1 values but the header has 3 columns"
        " (values are separated by semicolons, as in the header)",
    ]


def test_a_utf16_file_is_named_as_such(project):
    (project / "data").mkdir()
    (project / "data" / "orders.csv").write_bytes("id\torder\nr1\tA-1\n".encode("utf-16"))
    assert _problems(project, SPEC.format(suffix="csv")) == [
        'data/orders.csv:1:1: the file is UTF-16 text (Excel\'s "Unicode Text"):'
        ' save it as "CSV UTF-8" instead',
    ]


@pytest.mark.parametrize(
    ("written", "spec_name", "problem"),
    [
        pytest.param(
            "orders.csv",
            "spec.yaml",
            "spec.yaml:1:10: dataset file not found: orders.csv - did you mean 'data/orders.csv'?",
            id="under data",
        ),
        pytest.param(
            "data/order.csv",
            "spec.yaml",
            "spec.yaml:1:10: dataset file not found: data/order.csv - did you mean 'data/orders.csv'?",
            id="a typo",
        ),
        pytest.param(
            "orders.csv",
            "specs/spec.yaml",
            "specs/spec.yaml:1:10: dataset file not found: specs/orders.csv - did you mean"
            " '../data/orders.csv'? (a dataset path is relative to the spec's folder)",
            id="beside the project file",
        ),
        pytest.param(
            "refunds.csv",
            "spec.yaml",
            "spec.yaml:1:10: dataset file not found: refunds.csv",
            id="nothing close",
        ),
    ],
)
def test_a_dataset_that_is_elsewhere_gets_its_path(project, written, spec_name, problem):
    _save(project / "data" / "orders.csv", "id,order,expected.total\nr1,A-1,45\n")
    spec = SPEC.format(suffix="csv").replace("data/orders.csv", written)
    assert _problems(project, spec, spec_name) == [problem]
