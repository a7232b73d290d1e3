"""Every example in docs/spec-format.md is checked, so the reference cannot drift from the engine.

The fenced blocks say what they are after the language, as ```` ```yaml spec ````:

- `spec`: a spec that `specengine validate` accepts, next to the page's project file and data files;
- `invalid-spec`: a spec with a mistake; the ```` ```text ```` block right after it is what `validate`
  prints (as `specs/weather.yaml`);
- `project`: a project file that `validate` accepts (the first one is the project of every spec);
- `file=PATH`: a data file the specs use, written at PATH in the project;
- `case-ids` (a text block): the case ids `plan` gives the spec block right before it, saved as
  `specs/cities.yaml`;
- `results`: a results file that follows schemas/results.schema.json.

Blocks with no such word (shell commands, the editor line) are not run. Every other
tests/test_format_*.py module names the sections of the page it tests; those sections must exist.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli import REPO_ROOT, run_cli
from support.runs import validate_results

DOC = REPO_ROOT / "docs" / "spec-format.md"
SECTION_LINK = re.compile(r"docs/spec-format\.md#([\w-]+)")
FENCE = re.compile(r"^```(\w+)[ \t]*([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced block of the page: its language, the words after it, its text and its line."""

    language: str
    tags: tuple[str, ...]
    text: str
    line: int

    @property
    def file(self) -> str | None:
        return next((tag.removeprefix("file=") for tag in self.tags if tag.startswith("file=")), None)

    def __str__(self) -> str:
        return f"docs/spec-format.md:{self.line}"


def doc_blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    return [
        Block(m.group(1), tuple(m.group(2).split()), m.group(3), text.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(text)
    ]


def tagged(tag: str) -> list[Block]:
    return [block for block in doc_blocks() if tag in block.tags]


def followed_by(tag: str, language: str, follower_tag: str | None = None) -> list[tuple[Block, Block]]:
    """Each block tagged `tag` with the block right after it (which must be `language`)."""
    blocks = doc_blocks()
    pairs = []
    for block, after in zip(blocks, blocks[1:], strict=False):
        if tag in block.tags and (follower_tag is None or follower_tag in after.tags):
            assert after.language == language, f"{block}: a {language} block must follow it"
            pairs.append((block, after))
    return pairs


def _project(folder: Path) -> Path:
    """A folder holding the page's first project file and every data file the page shows."""
    (folder / ".git").mkdir()
    (folder / "specengine.yaml").write_text(tagged("project")[0].text, encoding="utf-8")
    for block in doc_blocks():
        if block.file:
            target = folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
    return folder


def page_env() -> dict[str, str]:
    """Every ${VAR} the page's examples use, set, as a reader who follows the page has them
    (an unset one is a warning from `validate`)."""
    return {name: "set" for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", DOC.read_text("utf-8"))}


def _validate_spec(folder: Path, text: str, name: str = "weather.yaml"):
    spec = folder / "specs" / name
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(text, encoding="utf-8")
    return run_cli(["validate", f"specs/{name}"], cwd=folder, env=page_env())


def test_the_page_shows_every_kind_of_example():
    kinds = {tag for block in doc_blocks() for tag in block.tags if not tag.startswith("file=")}
    assert {"spec", "invalid-spec", "project", "case-ids", "results"} <= kinds
    assert {block.language for block in doc_blocks() if block.file} >= {"csv", "jsonl", "json", "yaml"}
    assert len(tagged("spec")) >= 20


@pytest.mark.parametrize("block", tagged("spec"), ids=str)
def test_spec_example_is_valid(tmp_path, block):
    result = _validate_spec(_project(tmp_path), block.text)
    assert result.exit_code == 0, f"{block}:\n{result.output}"
    assert result.stdout == "", f"{block}:\n{result.output}"


@pytest.mark.parametrize(("block", "message"), followed_by("invalid-spec", "text"), ids=lambda v: str(v))
def test_mistake_example_gives_the_message_shown(tmp_path, block, message):
    result = _validate_spec(_project(tmp_path), block.text)
    assert result.exit_code == 1, f"{block}:\n{result.output}"
    assert result.stdout.splitlines() == message.text.splitlines(), f"{block}"


@pytest.mark.parametrize("block", tagged("project"), ids=str)
def test_project_example_is_valid(tmp_path, block):
    _project(tmp_path)  # the page's data files too: a matrix's vars may name one
    (tmp_path / "specengine.yaml").write_text(block.text, encoding="utf-8")
    result = run_cli(["validate", "specengine.yaml"], cwd=tmp_path, env=page_env())
    assert result.exit_code == 0, f"{block}:\n{result.output}"


@pytest.mark.parametrize(("spec", "ids"), followed_by("spec", "text", "case-ids"), ids=lambda v: str(v))
def test_case_ids_shown_are_the_ones_plan_gives(tmp_path, spec, ids):
    folder = _project(tmp_path)
    assert _validate_spec(folder, spec.text, "cities.yaml").exit_code == 0
    result = run_cli(["plan", "specs/cities.yaml", "--json"], cwd=folder, env=page_env())
    assert result.exit_code == 0, result.output
    assert [case["id"] for case in json.loads(result.stdout)["cases"]] == ids.text.splitlines()


@pytest.mark.parametrize("block", tagged("results"), ids=str)
def test_results_example_follows_the_results_schema(block):
    validate_results(json.loads(block.text))


def section_anchors() -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as -."""
    headings = re.findall(r"^#{2,4} (.+)$", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


FORMAT_TESTS = sorted(
    path for path in Path(__file__).parent.glob("test_format_*.py") if path.name != Path(__file__).name
)


@pytest.mark.parametrize("module", FORMAT_TESTS, ids=lambda path: path.name)
def test_format_test_module_points_at_sections_of_the_page(module):
    docstring = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
    linked = SECTION_LINK.findall(docstring)
    assert linked, f"{module.name}: its docstring names no section of docs/spec-format.md"
    assert set(linked) <= section_anchors(), f"{module.name}: {set(linked) - section_anchors()}"


def test_links_inside_the_page_lead_to_its_sections():
    linked = set(re.findall(r"\]\(#([\w-]+)\)", DOC.read_text(encoding="utf-8")))
    assert linked
    assert linked <= section_anchors(), linked - section_anchors()
