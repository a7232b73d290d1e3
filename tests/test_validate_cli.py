"""`specengine validate` and `specengine init` as users and CI call them: exit codes, output formats,
file discovery (project files, datasets, data folders), pre-commit batches, and start-up imports."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from support.cli import REPO_ROOT, loaded_modules, run_cli

from specengine.endpoints import ADAPTERS

PROJECT = "endpoints:\n  demo:\n    protocol: demo\ndefaults:\n  endpoint: demo\n"
VALID = "evals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n"


def make_project(folder: Path, specs: dict[str, str], project: str | None = PROJECT) -> Path:
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    if project is not None:
        (folder / "specengine.yaml").write_text(project, encoding="utf-8")
    for name, text in specs.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return folder


# --- exit codes and summaries ----------------------------------------------------------------------


def test_valid_files_exit_0_with_a_summary(tmp_path):
    make_project(tmp_path, {"specs/a.yaml": VALID, "specs/b.yml": VALID})
    result = run_cli(["validate", "specs", "specengine.yaml"], cwd=tmp_path)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr.strip() == "2 specs valid, project file valid"


def test_problems_exit_1_with_count_of_problems_and_files(tmp_path):
    make_project(
        tmp_path,
        {
            "specs/a.yaml": "evals:\n  - name: a\n    send: hi\n",
            "specs/b.yaml": "evals: []\n",
            "specs/c.yaml": VALID,
        },
    )
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert result.exit_code == 1
    assert len(result.stdout.splitlines()) == 2
    assert result.stderr.strip() == "2 problems in 2 files"


def test_missing_path_is_a_usage_error(tmp_path):
    result = run_cli(["validate", "nope.yaml"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "no such file or folder: nope.yaml" in result.stderr


def test_unknown_config_is_a_usage_error_with_a_hint(tmp_path):
    project = PROJECT + "configs:\n  staging:\n    defaults: {timeout: 5}\n"
    make_project(tmp_path, {"specs/a.yaml": VALID}, project=project)
    result = run_cli(["validate", "specs", "--config", "stagin"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "unknown config 'stagin' - did you mean 'staging'?" in result.stderr
    assert run_cli(["validate", "specs", "--config", "staging"], cwd=tmp_path).exit_code == 0


def test_config_defaults_naming_an_unknown_endpoint(tmp_path):
    project = PROJECT + "configs:\n  staging:\n    defaults: {endpoint: demoo}\n"
    make_project(tmp_path, {"specs/a.yaml": VALID}, project=project)
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert result.stdout.strip() == (
        "specengine.yaml:8:26: unknown endpoint 'demoo' - did you mean 'demo'? (endpoints: demo)"
    )


def test_explicit_project_file(tmp_path):
    make_project(tmp_path, {"specs/a.yaml": "endpoint: other\n" + VALID}, project=None)
    other = tmp_path / "elsewhere.yaml"
    other.write_text("endpoints:\n  other:\n    protocol: demo\n", encoding="utf-8")
    assert run_cli(["validate", "specs"], cwd=tmp_path).exit_code == 1
    assert run_cli(["validate", "specs", "--project", "elsewhere.yaml"], cwd=tmp_path).exit_code == 0
    missing = run_cli(["validate", "specs", "--project", "nope.yaml"], cwd=tmp_path)
    assert missing.exit_code == 2
    assert "nope.yaml" in missing.stderr


def test_bad_format_is_a_usage_error(tmp_path):
    make_project(tmp_path, {"specs/a.yaml": VALID})
    assert run_cli(["validate", "specs", "--format", "xml"], cwd=tmp_path).exit_code == 2


# --- output formats --------------------------------------------------------------------------------


def test_github_annotations_are_escaped(tmp_path):
    spec = "evals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n    100%, done: x\n"
    make_project(tmp_path, {"specs/a,b.yaml": spec})
    result = run_cli(["validate", "specs", "--format", "github"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.strip() == (
        "::error file=specs/a%2Cb.yaml,line=5,col=5,title=specengine validate::"
        "unknown key '100%25, done' in this eval"
    )


def test_json_output_is_a_list_of_located_problems(tmp_path):
    make_project(tmp_path, {"specs/a.yaml": "evals:\n  - name: a\n    send: hi\n", "specs/ok.yaml": VALID})
    result = run_cli(["validate", "specs", "--format", "json"], cwd=tmp_path)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data == [
        {
            "path": "specs/a.yaml",
            "line": 2,
            "col": 5,
            "severity": "error",
            "message": "this eval checks nothing: add expect: with at least one check"
            ' (an eval with nothing to check would always pass), or skip: "reason"',
        }
    ]
    valid = run_cli(["validate", "specs/ok.yaml", "--format", "json"], cwd=tmp_path)
    assert (valid.exit_code, json.loads(valid.stdout)) == (0, [])


# --- which files are specs -------------------------------------------------------------------------


def test_dataset_files_and_data_folders_are_not_specs(tmp_path):
    spec = """
        dataset: cities.yaml
        evals:
          - name: a
            send: "{{ input.city }}"
            expect: [succeeded]
    """
    make_project(
        tmp_path,
        {
            "specs/a.yaml": spec,
            "specs/cities.yaml": "- {id: paris, input: {city: Paris}}\n- {id: oslo, input: {city: Oslo}}\n",
            "specs/data/rows.yaml": "- not: a spec\n",
        },
    )
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert (result.exit_code, result.stderr.strip()) == (0, "1 spec valid, project file valid")


def test_pre_commit_batch_with_project_and_dataset_files(tmp_path):
    """pre-commit hands over changed files by name: the project file, specs, and datasets."""
    spec = "dataset: cities.yaml\n" + VALID
    make_project(
        tmp_path,
        {
            "specs/a.yaml": spec,
            "specs/cities.yaml": "- {id: paris, input: {city: Paris}}\n",
            "specs/data/rows.yaml": "- not: a spec\n",
        },
    )
    batch = ["specengine.yaml", "specs/cities.yaml", "specs/data/rows.yaml"]
    result = run_cli(["validate", *batch], cwd=tmp_path)
    assert (result.exit_code, result.stdout) == (0, "")
    # the dataset alone is recognised too: some spec of the project names it
    alone = run_cli(["validate", "specs/cities.yaml"], cwd=tmp_path)
    assert (alone.exit_code, alone.stdout) == (0, "")
    # a changed dataset row is still checked through the spec that uses it
    (tmp_path / "specs/cities.yaml").write_text("- {id: paris, inptu: {city: Paris}}\n", encoding="utf-8")
    broken = run_cli(["validate", "specs/a.yaml", "specs/cities.yaml"], cwd=tmp_path)
    assert broken.exit_code == 1
    assert broken.stdout.startswith(
        "specs/cities.yaml:1:3: unknown key 'inptu' in a row - did you mean 'input'?"
    )


def test_a_data_folder_given_as_the_path_holds_no_specs(tmp_path):
    make_project(tmp_path, {"specs/data/rows.yaml": "- {id: a}\n", "specs/a.yaml": VALID})
    result = run_cli(["validate", "specs/data"], cwd=tmp_path)
    assert (result.exit_code, result.stdout, result.stderr.strip()) == (0, "", "no spec files found")


def test_a_list_file_that_no_spec_names_is_reported(tmp_path):
    make_project(tmp_path, {"specs/a.yaml": VALID, "specs/stray.yaml": "- a\n- b\n"})
    result = run_cli(["validate", "specs/stray.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.startswith("specs/stray.yaml:1:1: a spec must be a mapping with evals:")


def test_paths_are_shown_relative_to_the_working_folder(tmp_path):
    make_project(tmp_path / "proj", {"specs/a.yaml": "evals: []\n"})
    result = run_cli(["validate", "proj/specs"], cwd=tmp_path)
    assert result.stdout.startswith("proj/specs/a.yaml:1:8: evals is empty")


# --- start-up: nothing heavy is imported -----------------------------------------------------------

HEAVY = ("httpx", "autoevals", "openai", "rich", "deepdiff", "jinja2.sandbox", "jsonschema", "jinja2")


def _modules_after(args: list[str], cwd: Path) -> set[str]:
    code = f"from specengine.cli import app\napp({args!r}, prog_name='specengine')\n"
    return loaded_modules(code, cwd, timeout=60)[1]


def test_help_imports_nothing_heavy(tmp_path):
    for args in (["--help"], ["validate", "--help"]):
        loaded = _modules_after(args, tmp_path)
        assert "specengine.cli" in loaded  # the listing is of the command that ran
        assert not loaded & set(HEAVY), (args, sorted(loaded & set(HEAVY)))


@pytest.mark.parametrize(
    ("send", "heavy"),
    [
        ("Hi", set()),  # no template: no Jinja2
        ('"{{ input.city }}"', {"jinja2", "jinja2.sandbox"}),  # Jinja2 reads the template, nothing else
    ],
)
def test_validate_imports_nothing_heavy_it_does_not_need(tmp_path, send, heavy):
    spec = f"evals:\n  - name: a\n    send: {send}\n    expect: [succeeded]\n"
    make_project(tmp_path, {"specs/a.yaml": spec})
    loaded = _modules_after(["validate", "specs"], tmp_path)
    assert loaded & set(HEAVY) == heavy


# --- init ------------------------------------------------------------------------------------------


def test_init_writes_a_project_that_validates_and_runs(tmp_path):
    target = tmp_path / "new"
    result = run_cli(["init", str(target)], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    spec = (target / "specs" / "example.yaml").read_text(encoding="utf-8")
    project = (target / "specengine.yaml").read_text(encoding="utf-8")
    # The schemas are copied beside the project, so editors complete keys offline.
    assert spec.startswith("# yaml-language-server: $schema=../schemas/spec.schema.json\n")
    assert project.startswith("# yaml-language-server: $schema=schemas/project.schema.json\n")
    for name in ("spec", "project"):
        copied = json.loads((target / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8"))
        assert copied == json.loads(
            (REPO_ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")
        )
    assert "protocol: demo" in project and "# judge:" in project
    listed = project[project.index("#   protocol: openai-chat") + 25 : project.index("#   url:")]
    # every protocol a user may write, named in the comment
    assert set(re.findall(r"[a-z0-9-]+", listed)) == set(ADAPTERS) - {"demo"}
    (target / ".git").mkdir()
    checked = run_cli(["validate", "specs", "specengine.yaml"], cwd=target)
    assert (checked.exit_code, checked.stderr.strip()) == (0, "1 spec valid, project file valid")
    ran = run_cli(["run", "specs"], cwd=target)
    assert ran.exit_code == 0, ran.output


def test_init_uses_a_relative_schema_path_when_the_schemas_are_on_disk(tmp_path):
    (tmp_path / "schemas").mkdir()
    for name in ("spec", "project"):
        source = REPO_ROOT / "schemas" / f"{name}.schema.json"
        (tmp_path / "schemas" / f"{name}.schema.json").write_text(source.read_text(encoding="utf-8"))
    assert run_cli(["init", "proj"], cwd=tmp_path).exit_code == 0
    spec = (tmp_path / "proj" / "specs" / "example.yaml").read_text(encoding="utf-8")
    project = (tmp_path / "proj" / "specengine.yaml").read_text(encoding="utf-8")
    assert spec.splitlines()[0] == "# yaml-language-server: $schema=../../schemas/spec.schema.json"
    assert project.splitlines()[0] == "# yaml-language-server: $schema=../schemas/project.schema.json"


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path):
    (tmp_path / "specengine.yaml").write_text("# mine\n", encoding="utf-8")
    result = run_cli(["init"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "refusing to overwrite" in result.stderr and "specengine.yaml" in result.stderr
    assert (tmp_path / "specengine.yaml").read_text(encoding="utf-8") == "# mine\n"
    assert not (tmp_path / "specs").exists()
