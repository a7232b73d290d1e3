"""`specengine validate` on judges: named judges and their uses, samples and few-shot examples.

Each test writes a project file and a spec, runs the real CLI in-process and compares the printed
diagnostics (file:line:col: message) line by line.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cli import run_cli

from specengine.judge.kinds import KINDS

ENDPOINTS = """\
endpoints:
  demo:
    protocol: demo
defaults:
  endpoint: demo
"""

JUDGES = """\
judges:
  tone:
    prompt: "Reply: {{ reply }}\\nIs it (A) friendly, (B) neutral or (C) rude?"
    choices: {A: 1.0, B: 0.5, C: 0.0}
    samples: 3
  polite:
    criteria: Is the reply polite?
    model: judge-big
    examples:
      - {input: Hi, output: Go away., choice: N, why: It is rude.}
"""


KIND_LIST = ", ".join(KINDS)


def problems(folder: Path, spec: str, project: str | None = ENDPOINTS + JUDGES) -> list[str]:
    """Validate one spec in a fresh project; the diagnostics printed (exit 1 asserted when any)."""
    (folder / ".git").mkdir(exist_ok=True)
    if project is not None:
        (folder / "specengine.yaml").write_text(project, encoding="utf-8")
    (folder / "s.yaml").write_text(textwrap.dedent(spec).lstrip("\n"), encoding="utf-8")
    result = run_cli(["validate", "s.yaml"], cwd=folder)
    lines = [line for line in result.stdout.splitlines() if line]
    assert "Traceback" not in result.output
    assert result.exit_code == (1 if lines else 0), result.output
    return lines


def one_check(check: str) -> str:
    """A spec with one eval whose one check is `check` (YAML of a mapping, indented as an item)."""
    body = textwrap.indent(textwrap.dedent(check).strip("\n"), " " * 6)
    head = "evals:\n  - name: a\n    send: hi\n    endpoint: {protocol: demo}\n    expect:\n"
    return f"{head}    - {body.lstrip()}\n"


def test_named_judges_with_samples_and_examples_are_valid(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: tone
              - judge: polite
                samples: 5
                at_least: 1
                examples:
                  - {output: Hello!, choice: Y}
              - judge: closed_qa
                criteria: Is it short?
                samples: 3
                examples:
                  - {input: hi, output: "Hello there, how are you today?", choice: N, why: Too long.}
                  - {output: Hi!, score: 1}
              - judge: factuality
                expected: Hello
                examples: [{output: Hey, expected: Hello, score: 0.4}]
    """
    assert problems(tmp_path, spec) == []


def test_an_unknown_judge_name_gets_a_did_you_mean_from_the_project_file(tmp_path):
    assert problems(tmp_path, one_check("judge: tnoe")) == [
        f"s.yaml:6:14: unknown judge 'tnoe' - did you mean 'tone'? (use one of {KIND_LIST}, tone, polite)"
    ]


def test_an_unknown_judge_name_says_where_named_judges_are_defined(tmp_path):
    assert problems(tmp_path, one_check("judge: sentiment")) == [
        f"s.yaml:6:14: unknown judge 'sentiment' (use one of {KIND_LIST}, tone, polite);"
        " define 'sentiment' under judges: in specengine.yaml"
    ]


def test_without_a_project_file_only_kinds_are_judges(tmp_path):
    spec = one_check("judge: tone")
    assert problems(tmp_path, spec, project=None) == [
        f"s.yaml:6:14: unknown judge 'tone' (use one of {KIND_LIST});"
        " a judge named by you is defined under judges: in specengine.yaml"
    ]


def test_a_check_cannot_rewrite_a_named_judges_rubric(tmp_path):
    check = """
        judge: polite
        criteria: Is it rude?
        choices: {A: 1, B: 0}
    """
    assert problems(tmp_path, one_check(check)) == [
        "s.yaml:7:7: 'criteria' comes from the judge 'polite' in specengine.yaml: a check that uses it"
        " cannot change it (change it there, or write judge: closed_qa here)",
        "s.yaml:8:7: 'choices' comes from the judge 'polite' in specengine.yaml: a check that uses it"
        " cannot change it (change it there, or write judge: closed_qa here)",
    ]


@pytest.mark.parametrize(
    ("check", "problem"),
    [
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o, choice: Yes}]}",
            "s.yaml:6:70: choice 'Yes' is not one of this judge's choices (Y, N)",
        ),
        (
            "{judge: tone, examples: [{output: o, choice: D}]}",
            "s.yaml:6:52: choice 'D' is not one of this judge's choices (A, B, C)",
        ),
        (
            "{judge: custom, prompt: p, choices: {G: 1, B: 0}, examples: [{output: o, score: 0.5}]}",
            "s.yaml:6:87: no choice of this judge scores 0.5 (G = 1, B = 0): give one of their scores,"
            " or the choice as choice:",
        ),
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o}]}",
            "s.yaml:6:50: this example needs one of choice, score",
        ),
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o, choice: Y, score: 1}]}",
            "s.yaml:6:50: use only one of choice, score",
        ),
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o, choise: Y}]}",
            "s.yaml:6:62: unknown key 'choise' in this example - did you mean 'choice'?",
        ),
        ("{judge: closed_qa, criteria: c, samples: 0}", "s.yaml:6:48: samples must be at least 1, not 0"),
        ("{includes: hi, samples: 3}", "s.yaml:6:22: 'samples' belongs to a judge check"),
        (
            "{includes: hi, examples: [{output: o, choice: Y}]}",
            "s.yaml:6:22: 'examples' belongs to a judge check",
        ),
    ],
)
def test_samples_and_examples_mistakes_are_located(tmp_path, check, problem):
    assert problems(tmp_path, one_check(check)) == [problem]


@pytest.mark.parametrize(
    ("judges", "problem"),
    [
        (
            "judges:\n  closed_qa: {criteria: c}\n",
            "specengine.yaml:7:3: 'closed_qa' is a judge kind: give your judge another name"
            " (a spec writes judge: NAME)",
        ),
        (
            "judges:\n  tone: {model: m}\n",
            "specengine.yaml:7:9: 'tone' needs one of criteria, expected, prompt",
        ),
        (
            "judges:\n  tone: {criteria: c, prompt: p, choices: {A: 1, B: 0}}\n",
            "specengine.yaml:7:9: use only one of criteria, prompt",
        ),
        (
            "judges:\n  tone: {prompt: p}\n",
            "specengine.yaml:7:9: 'tone' needs 'choices'",
        ),
        (
            "judges:\n  tone: {criteria: c, choices: {A: 1, B: 0}}\n",
            "specengine.yaml:7:23: 'choices' belongs to a custom judge (with prompt)",
        ),
        (
            "judges:\n  tone: {criteria: 'Polite to {{ inptu.name }}?'}\n",
            "specengine.yaml:7:20: criteria: undefined variable 'inptu' - did you mean 'input'?;"
            " known here: expected, input, metadata, reply, session_id, tool_calls, trace, turn",
        ),
        (
            "judges:\n  tone: {criteria: c, examples: [{output: o, choice: A}]}\n",
            "specengine.yaml:7:54: choice 'A' is not one of this judge's choices (Y, N)",
        ),
        (
            "judge: {model: m, samples: 0}\n",
            "specengine.yaml:6:28: samples must be at least 1, not 0",
        ),
    ],
)
def test_named_judge_mistakes_are_located_in_the_project_file(tmp_path, judges, problem):
    found = problems(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]", ENDPOINTS + judges)
    assert found == [problem]


# ---------------------------------------------------------------------------------------------------
# conversation judges


def test_conversation_judges_are_valid_with_their_rubric_or_the_simulated_users_goal(tmp_path):
    spec = """
        evals:
          - name: scripted
            turns:
              - send: My name is Ana.
              - send: "What is my name?"
                expect:
                  - judge: goal_completed
                    goal: "learn that the assistant remembers the name {{ input.name }}"
                  - judge: role_adherence
                    role: a polite assistant
                    samples: 3
                    examples: [{output: "user: hi / assistant: Go away.", choice: N}]
                  - judge: knowledge_retention
                    scope: conversation
                  - judge: conversation_relevance
            input: {name: Ana}
          - name: simulated
            simulate: {user: Ana, goal: learn her name}
            expect: [{judge: goal_completed}]
    """
    assert problems(tmp_path, spec) == []


@pytest.mark.parametrize(
    "check, problem",
    [
        (
            "judge: role_adherence",
            "s.yaml:6:7: judge: role_adherence needs 'role': the role the agent must keep,"
            " e.g. role: a support agent for Acme who only talks about Acme orders",
        ),
        (
            "judge: goal_completed",
            "s.yaml:6:14: judge: goal_completed has no goal to judge: write goal: beside it (what the user"
            " wanted), or simulate a user with a goal in this eval (simulate: {user: ..., goal: ...})",
        ),
        (
            "{judge: knowledge_retention, scope: turn}",
            "s.yaml:6:36: judge: knowledge_retention reads the whole conversation: remove scope: turn"
            " (to judge the conversation up to an earlier turn, put the check on that turn)",
        ),
        (
            "{judge: conversation_relevance, value: '{{ reply }}'}",
            "s.yaml:6:39: value is not read by judge: conversation_relevance, which reads the"
            " conversation: remove it",
        ),
        (
            "{judge: goal_completed, goal: x, criteria: y}",
            "s.yaml:6:40: 'criteria' is not used by a conversation judge (it belongs to judge: closed_qa)",
        ),
        ("{judge: closed_qa, criteria: y, role: x}", "s.yaml:6:39: 'role' belongs to judge: role_adherence"),
        ("{includes: x, goal: y}", "s.yaml:6:21: 'goal' belongs to judge: goal_completed"),
        (
            "{judge: goal_completed, gaol: x}",
            "s.yaml:6:31: unknown key 'gaol' in this check - did you mean 'goal'?",
        ),
    ],
)
def test_conversation_judge_mistakes_are_located_with_the_fix(tmp_path, check, problem):
    assert problems(tmp_path, one_check(check)) == [problem]
