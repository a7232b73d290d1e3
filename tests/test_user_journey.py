"""The mistakes a newcomer makes first, and what specengine tells them.

Each test writes the spec a beginner would write, runs the real CLI in-process, and asserts that the
message names the place and says what to do, in words rather than parser or library jargon.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec


def validate_one(folder: Path, spec: str) -> str:
    """Validate one spec against a demo project; the single problem printed."""
    (folder / ".git").mkdir(exist_ok=True)  # stop the project-file search here
    write_project(folder, endpoints={"demo": {"protocol": "demo"}})
    write_spec(folder, "specs/s.yaml", spec)
    result = run_cli(["validate", "specs"], cwd=folder)
    lines = [line for line in result.stdout.splitlines() if line]
    assert result.exit_code == 1, result.output
    assert len(lines) == 1, lines
    return lines[0]


@dataclass(frozen=True)
class Says:
    """What the one message must be: exactly `text` (`whole`), or start with it; and texts it lacks."""

    text: str
    whole: bool = False
    lacks: tuple[str, ...] = ()

    def check(self, message: str) -> None:
        if self.whole:
            assert message == self.text
        else:
            assert message.startswith(self.text), message
        for jargon in self.lacks:
            assert jargon not in message


# (the spec a beginner writes, what validate says): YAML slips explained in words.
FIRST_MISTAKES = [
    pytest.param(
        """
        evals:
          - name: a
            send: hello
          expect: [succeeded]
        """,
        Says("specs/s.yaml:4:3: this line is indented differently from the lines", lacks=("block end",)),
        id="a key indented less than its neighbours",
    ),
    pytest.param(
        """
        evals:
          - name: a
            send: hello
            expect:
            - succeeded
           - includes: x
        """,
        Says("specs/s.yaml:6:4: this line is indented differently"),
        id="a list item out of line",
    ),
    pytest.param(
        """
        evals:
          - name: a
            send: "hi" there
        """,
        Says(
            "specs/s.yaml:3:16: more text after a value that has already ended:"
            " put the whole value in quotes",
            whole=True,
        ),
        id="text after a quoted value",
    ),
    pytest.param(
        """
        evals:
          - name: a
            input: {city: Paris}
            send: {{ input.city }} weather
        """,
        Says("specs/s.yaml:4:28: more text after a value that has already ended"),
        id="a template after the opening braces",
    ),
    pytest.param(
        """
        evals:
          - name: a
            input: {city: Paris}
            send: {{ input.city }}
            expect: [succeeded]
        """,
        Says(
            'specs/s.yaml:4:12: a value that starts with {{ must be in quotes: write "{{ input.city }}"', True
        ),
        id="an unquoted template value",
    ),
    pytest.param(
        """
        evals:
          - name: a
            send: "hello
            expect: [succeeded]
        """,
        Says("specs/s.yaml:3:11: this quoted text is never closed: add the closing quote", whole=True),
        id="an unclosed quote, where it opens",
    ),
]


@pytest.mark.parametrize(("spec", "says"), FIRST_MISTAKES)
def test_a_yaml_slip_is_explained_in_words_at_its_place(tmp_path, spec, says):
    says.check(validate_one(tmp_path, spec))


def test_a_mapping_key_that_is_a_mapping_keeps_its_general_message(tmp_path):
    spec = """
        evals:
          - name: a
            send: hello
            input: {[a, b]: 1}
    """
    message = validate_one(tmp_path, spec)
    assert "a mapping key must be text" in message
    assert "{{" not in message


def test_an_agent_that_is_not_running_names_the_url_and_what_to_check(tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    (tmp_path / ".git").mkdir()
    write_project(tmp_path, endpoints={"agent": {"protocol": "openai-chat", "url": url, "retries": 0}})
    write_spec(tmp_path, "specs/s.yaml", "evals:\n  - name: a\n    send: hello\n    expect: [succeeded]\n")
    result = run_cli(["run", "specs"], cwd=tmp_path)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())  # the console wraps long lines
    assert f"ConnectError: could not connect to {url}: is the agent running" in output


def test_help_names_option_values_in_words_and_run_says_its_exit_codes():
    for command in ("run", "plan", "regrade", "validate", "init", "demo-agent"):
        text = run_cli([command, "--help"]).stdout
        for jargon in ("<int range>", "<float range>", "<str>", "<list[str]> ", "{paths}"):
            assert jargon not in text.replace("PATH <list[str]>", ""), (command, jargon)
    run_help = run_cli(["run", "--help"]).stdout
    assert "--label LABEL" in run_help and "--timeout SECONDS" in run_help
    assert "Exit 0 when every case passed or was skipped" in run_help
    assert 'specengine run "specs/a.yaml::sunny in paris"' in run_help


def test_init_into_a_new_folder_says_to_cd_there_first(tmp_path):
    result = run_cli(["init", "my evals"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "next: cd 'my evals' && specengine validate specs/ && specengine run specs/" in result.stderr
    (tmp_path / "here").mkdir()
    here = run_cli(["init"], cwd=tmp_path / "here")
    assert "next: specengine validate specs/" in here.stderr


def test_the_interrupted_hint_spells_out_how_to_finish():
    from specengine.engine.interrupt import interrupted_hint

    hint = interrupted_hint(1, Path("out/r.json"))
    assert hint == (
        "results of the 1 finished case are in out/r.json; to run the rest, run the same command again"
        " with --output out/r.json --resume added"
    )
    assert "…" not in interrupted_hint(2, Path("r.json"))


def test_a_missing_spec_folder_says_where_paths_are_read_from_and_how_to_start(tmp_path):
    result = run_cli(["run", "specs/"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "error: no such file or folder: specs" in result.stderr
    assert f"(paths are read from {tmp_path.resolve()}; `specengine init` writes" in result.stderr


def test_a_skipped_judge_check_says_where_to_name_the_judge(tmp_path):
    (tmp_path / ".git").mkdir()
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    spec = """
        evals:
          - name: a
            send: What's the weather in Paris?
            expect:
              - judge: closed_qa
                criteria: Does the reply state the weather?
    """
    write_spec(tmp_path, "specs/s.yaml", spec)
    result = run_cli(["run", "specs"], cwd=tmp_path)
    output = " ".join(result.output.split())
    assert "1 gate skipped (judge checks need a judge model: judge.model in specengine.yaml" in output


def test_init_example_stays_with_the_demo_when_the_default_endpoint_changes(tmp_path):
    from support.support_bot import SupportBot

    assert run_cli(["init"], cwd=tmp_path).exit_code == 0
    with SupportBot() as bot:
        project = (tmp_path / "specengine.yaml").read_text(encoding="utf-8")
        import yaml

        data = yaml.safe_load(project)
        data["endpoints"]["bot"] = bot.endpoint()
        data["defaults"]["endpoint"] = "bot"
        (tmp_path / "specengine.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
        result = run_cli(["run", "specs/"], cwd=tmp_path)
        assert result.exit_code == 0, result.output  # the example still runs against the demo agent
        assert bot.hits() == 0  # and sends nothing to the real one
