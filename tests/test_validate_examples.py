"""The examples people copy must be valid: every spec in specs/ and every YAML block in README.md.

README blocks marked `# not a spec` are skipped; a block with `endpoints:` at the top level is a
project file and is checked as one (and the README's spec blocks are checked against it).
"""

from __future__ import annotations

import re
import shutil

import pytest
import yaml
from support.cli import REPO_ROOT, run_cli

YAML_BLOCK = re.compile(r"^```ya?ml[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[tuple[int, str]]:
    """(line number, text) of every ```yaml block in README.md that is not marked `# not a spec`."""
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    blocks = []
    for match in YAML_BLOCK.finditer(text):
        body = match.group(1)
        if "# not a spec" in body:
            continue
        blocks.append((text.count("\n", 0, match.start()) + 2, body))
    return blocks


def is_project_file(text: str) -> bool:
    """A project file example has top-level `endpoints:` or opens with a `# specengine.yaml` comment."""
    return text.startswith("# specengine.yaml") or bool(re.search(r"^endpoints:", text, re.MULTILINE))


def test_every_example_spec_is_valid():
    specs = sorted((REPO_ROOT / "specs").glob("*.yaml"))
    assert specs, "specs/ holds the example specs"
    result = run_cli(["validate", "specs", "specengine.yaml"], cwd=REPO_ROOT)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_readme_has_yaml_examples():
    blocks = readme_blocks()
    assert any(is_project_file(body) for _, body in blocks)
    assert any(not is_project_file(body) for _, body in blocks)


@pytest.mark.parametrize(("line", "body"), readme_blocks(), ids=lambda value: str(value)[:20])
def test_readme_yaml_block_is_valid(tmp_path, line, body):
    (tmp_path / ".git").mkdir()
    projects = [text for _, text in readme_blocks() if is_project_file(text)]
    if is_project_file(body):
        (tmp_path / "specengine.yaml").write_text(body, encoding="utf-8")
        args = ["validate", "specengine.yaml"]
    else:
        if projects:
            (tmp_path / "specengine.yaml").write_text(projects[0], encoding="utf-8")
        else:
            shutil.copy(REPO_ROOT / "specengine.yaml", tmp_path / "specengine.yaml")
        spec = tmp_path / "specs" / "readme.yaml"
        spec.parent.mkdir()
        spec.write_text(body, encoding="utf-8")
        for name in _datasets(body):  # datasets the example names are copied from specs/
            target = spec.parent / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO_ROOT / "specs" / name, target)
        args = ["validate", "specs"]
    result = run_cli(args, cwd=tmp_path)
    assert result.exit_code == 0, f"README.md block at line {line}:\n{result.output}"


def _datasets(body: str) -> list[str]:
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError:
        return []
    if not isinstance(data, dict):
        return []
    values = [data.get("dataset")] + [
        e.get("dataset") for e in data.get("evals") or [] if isinstance(e, dict)
    ]
    return [v for v in values if isinstance(v, str) and v != "none" and (REPO_ROOT / "specs" / v).is_file()]
