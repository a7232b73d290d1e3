"""Which files are specs, in a folder and when named on the command line.

In a folder every *.yaml / *.yml is a spec except the project file, anything under a folder named
`data` and any file a spec names as its dataset; a file named explicitly is classified by the same
rules, and nothing is skipped silently.

docs/spec-format.md section: [Files and discovery](../docs/spec-format.md#files-and-discovery).
"""

from __future__ import annotations

import json

import pytest

SPEC_USING_ROWS = """
    dataset: rows.yaml
    evals:
      - name: e
        send: "{{ input.x }}"
        expect: [succeeded]
    """


def _project(write_project, folder):
    write_project(folder, endpoints={"demo": {"protocol": "demo"}})


def _case_ids(run_cli, cwd, *args):
    result = run_cli(["plan", *args, "--json"], cwd=cwd)
    assert result.exit_code == 0, result.output
    return [case["id"] for case in json.loads(result.stdout)["cases"]]


def test_a_folder_skips_the_project_file_data_folders_and_named_datasets(
    run_cli, write_project, write_spec, tmp_path
):
    _project(write_project, tmp_path)
    write_spec(tmp_path, "specs/s.yaml", SPEC_USING_ROWS)
    (tmp_path / "specs" / "rows.yaml").write_text("- {id: a, input: {x: 1}}\n")
    write_spec(tmp_path, "specs/data/junk.yaml", "this: is not a spec\n")
    write_spec(tmp_path, "specs/other.yml", "evals: [{name: o, send: x, expect: [succeeded]}]\n")
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert _case_ids(run_cli, tmp_path, "specs") == ["specs/other.yml::o", "specs/s.yaml::e[a]"]


def test_an_invalid_yaml_spec_in_a_folder_is_an_error_never_ignored(
    run_cli, write_project, write_spec, tmp_path
):
    _project(write_project, tmp_path)
    write_spec(tmp_path, "specs/broken.yaml", "evals: [\n")
    write_spec(tmp_path, "specs/empty.yaml", "")
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "specs/broken.yaml:2:1:" in result.stdout
    assert "specs/empty.yaml:1:1: the file is empty" in result.stdout


@pytest.mark.parametrize(
    ("name", "duplicated", "fixed", "problem"),
    [
        pytest.param(
            "rows.yaml",
            "- {id: a, input: {x: 1}}\n- {id: a, input: {x: 2}}\n",
            "- {id: a, input: {x: 1}}\n- {id: b, input: {x: 2}}\n",
            "specs/rows.yaml:2:1: duplicate row id 'a' (first used on line 1)",
            id="yaml",
        ),
        pytest.param(
            "rows.csv",
            "id,x\na,1\nb,2\na,3\n",
            "id,x\na,1\nb,2\n",
            "specs/rows.csv:4:1: duplicate row id 'a' (first used on line 2)",
            id="csv, not read as yaml",
        ),
    ],
)
def test_a_dataset_named_explicitly_is_checked_as_a_dataset(
    run_cli, write_project, write_spec, tmp_path, name, duplicated, fixed, problem
):
    _project(write_project, tmp_path)
    write_spec(tmp_path, "specs/s.yaml", SPEC_USING_ROWS.replace("rows.yaml", name))
    rows = tmp_path / "specs" / name
    rows.write_text(duplicated)
    result = run_cli(["validate", f"specs/{name}"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [problem]
    rows.write_text(fixed)
    result = run_cli(["validate", f"specs/{name}"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "the spec needs" not in result.output


def test_a_dataset_named_together_with_its_spec_is_reported_once(
    run_cli, write_project, write_spec, tmp_path
):
    _project(write_project, tmp_path)
    write_spec(tmp_path, "specs/s.yaml", SPEC_USING_ROWS.replace("rows.yaml", "data/rows.jsonl"))
    (tmp_path / "specs" / "data").mkdir()
    (tmp_path / "specs" / "data" / "rows.jsonl").write_text('{"id": "a::b"}\n')
    result = run_cli(["validate", "specs/s.yaml", "specs/data/rows.jsonl"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "specs/data/rows.jsonl:1:1: row id 'a::b' may not contain '::':"
        " case ids use '::' and '[...]' as separators"
    ]


@pytest.mark.parametrize(
    ("path", "note"),
    [
        pytest.param(
            "specs/data/notes.yaml",
            "specs/data/notes.yaml: not checked: it is under a folder named data",
            id="under a data folder",
        ),
        pytest.param("notes.txt", "notes.txt: not checked: specs are .yaml or .yml files", id="not yaml"),
    ],
)
def test_a_file_named_explicitly_that_is_not_a_spec_is_not_read_and_says_so(
    run_cli, write_project, tmp_path, path, note
):
    _project(write_project, tmp_path)
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text("this: is not a spec\n")
    result = run_cli(["validate", path], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "unknown key" not in result.output
    assert note in result.stderr


def test_a_yaml_file_named_explicitly_is_a_spec_and_checked(run_cli, write_project, write_spec, tmp_path):
    _project(write_project, tmp_path)
    write_spec(tmp_path, "loose.yaml", "evals: [{name: a, send: x}]\n")
    result = run_cli(["validate", "loose.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "loose.yaml:1:9: this eval checks nothing" in result.stdout
