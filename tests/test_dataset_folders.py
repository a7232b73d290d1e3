"""A dataset outside the project folder, named directly or reached through a symlink, is refused at
its line unless the project file allows its folder: a spec from elsewhere must not make a run read
a file of the machine and send it to the agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec

SPEC = "dataset: {path}\nevals:\n  - name: a\n    send: '{{{{ input.q }}}}'\n    expect: [succeeded]\n"


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """project/ (specengine.yaml, specs/, data/rows.csv, data/link.csv -> ../../shared/rows.csv)
    beside shared/rows.csv, outside it."""
    project, shared = tmp_path / "project", tmp_path / "shared"
    (project / "data").mkdir(parents=True)
    shared.mkdir()
    (project / "data" / "rows.csv").write_text("q\nhello\n", encoding="utf-8")
    (shared / "rows.csv").write_text("q\nsecret row\n", encoding="utf-8")
    (project / "data" / "link.csv").symlink_to(shared / "rows.csv")
    write_project(project, endpoints={"demo": {"protocol": "demo"}})
    return project


def validate(project: Path, path: str) -> tuple[int, str]:
    write_spec(project / "specs", "spec", SPEC.format(path=path))
    result = run_cli(["validate", "specs"], cwd=project)
    return result.exit_code, result.output


def test_a_dataset_inside_the_project_is_read(layout):
    assert validate(layout, "../data/rows.csv") == (0, "1 spec valid, project file valid\n")


@pytest.mark.parametrize(
    ("path", "through"),
    [("../../shared/rows.csv", False), ("../data/link.csv", True)],
    ids=["relative-path", "symlink"],
)
def test_a_dataset_outside_the_project_is_refused_at_its_line(layout, path, through):
    code, output = validate(layout, path)
    assert code == 1
    real = layout.parent / "shared" / "rows.csv"
    shown = f"data/link.csv is a symlink to {real}," if through else f"{real} is"
    assert output.splitlines()[0] == (
        f"specs/spec.yaml:1:10: the dataset {shown} outside the project folder: move it into "
        "the project, or allow its folder in specengine.yaml with `datasets: {allow: [../shared]}`"
    )
    run = run_cli(["run", "specs"], cwd=layout)
    assert run.exit_code == 2 and "outside the project folder" in run.output


def test_the_project_file_can_allow_a_folder_outside(layout):
    write_project(layout, endpoints={"demo": {"protocol": "demo"}}, datasets={"allow": ["../shared"]})
    assert validate(layout, "../../shared/rows.csv") == (0, "1 spec valid, project file valid\n")
    assert validate(layout, "../data/link.csv") == (0, "1 spec valid, project file valid\n")
