"""The checks of judges that a JSON Schema cannot express: named judges and their uses, examples.

A spec's `judge:` takes a kind (closed_qa, factuality, custom, or a conversation judge such as
goal_completed) or the name of a judge defined under `judges:` in its project file. Each use is
checked against that project file: an unknown name gets a "did you mean", and a check that uses a
named judge may not rewrite its rubric. A few-shot example's verdict must be one of its judge's
choices, for a check's own judge or a named one. A conversation judge reads the conversation (no
`scope: turn`, no `value:`), and goal_completed needs a goal. The project file's named judges are
checked where they are defined: a name that is a kind, a rubric's templates, its examples.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.judge.kinds import (
    CONVERSATION_KINDS,
    GOAL,
    KINDS,
    RUBRIC_OF,
    blank_rubric,
    choice_scores,
    choices_scoring,
)
from specengine.judge.named import JUDGES_KEY, kind_of_named, named_judges
from specengine.source.loader import PROJECT_FILE, KeyPath, as_text
from specengine.source.project import Project
from specengine.suggest import suggest
from specengine.templates import CHECK_VARIABLES
from specengine.validation.file_report import Report
from specengine.validation.template_checks import check_template

RUBRIC_KEYS = ("criteria", "expected", "prompt", "choices")


def check_judge_use(
    report: Report,
    entry: Mapping[str, Any],
    here: KeyPath,
    project: Project | None,
    project_failed: bool,
    has_goal: bool = False,
) -> None:
    """A judge check: its judge exists, a named judge's rubric is left alone, examples fit it, a
    conversation judge reads the conversation (and has a goal). `has_goal`: the check's eval gives
    a goal_completed judge without `goal:` one (its simulated user's)."""
    value = entry.get("judge")
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        return  # the schema reports it
    name = as_text(value)
    named = named_judges(project.data) if project is not None else {}
    if name in CONVERSATION_KINDS:
        check_conversation_judge(report, entry, here, name, has_goal)
    if name in KINDS:
        rubric = RUBRIC_OF.get(name)
        text = entry.get(rubric) if rubric else None  # None is worded by the schema check, alike
        if rubric and isinstance(text, str) and not text.strip():
            report.at((*here, rubric), blank_rubric(rubric))
        choices = entry.get("choices") if name == "custom" else None
        scores = choice_scores(name, _choices(choices))
    elif name in named:
        where = f"the judge '{name}' in {project.display if project else PROJECT_FILE}"
        for key in RUBRIC_KEYS:
            if key in entry:
                report.at(
                    (*here, key),
                    f"'{key}' comes from {where}: a check that uses it cannot change it"
                    f" (change it there, or write judge: {kind_of_named(named[name]) or 'custom'} here)",
                    at_key=True,
                )
        definition = named[name]
        if not isinstance(definition, Mapping):
            return
        kind = kind_of_named(definition) or "custom"
        scores = choice_scores(kind, _choices(definition.get("choices")))
    else:
        if not project_failed:
            report.at((*here, "judge"), unknown_judge(name, list(named), project))
        return
    check_examples(report, entry.get("examples"), (*here, "examples"), scores)


def check_conversation_judge(
    report: Report, entry: Mapping[str, Any], here: KeyPath, kind: str, has_goal: bool
) -> None:
    """A conversation judge reads the conversation, never one reply: no `scope: turn`, no `value:`;
    goal_completed needs a goal, its own or the eval's simulated user's."""
    if entry.get("scope") == "turn":
        report.at(
            (*here, "scope"),
            f"judge: {kind} reads the whole conversation: remove scope: turn (to judge the conversation"
            " up to an earlier turn, put the check on that turn)",
            at_key=True,
        )
    if "value" in entry:
        report.at(
            (*here, "value"),
            f"value is not read by judge: {kind}, which reads the conversation: remove it",
            at_key=True,
        )
    if kind == GOAL and "goal" not in entry and not has_goal:
        report.at(
            (*here, "judge"),
            f"judge: {GOAL} has no goal to judge: write goal: beside it (what the user wanted), or"
            " simulate a user with a goal in this eval (simulate: {user: ..., goal: ...})",
        )


def unknown_judge(name: str, named: list[str], project: Project | None) -> str:
    """`unknown judge 'tnoe' - did you mean 'tone'? (use one of …)`, saying where names come from."""
    options = [*KINDS, *named]
    hint = suggest(name, options)
    message = f"unknown judge '{name}'{hint} (use one of {', '.join(options)})"
    if hint:
        return message
    if project is None or project.file is None:
        return f"{message}; a judge named by you is defined under {JUDGES_KEY}: in {PROJECT_FILE}"
    return f"{message}; define '{name}' under {JUDGES_KEY}: in {project.display}"


def check_examples(report: Report, examples: Any, here: KeyPath, scores: Mapping[str, float]) -> None:
    """Each example's choice is one of the judge's, and its score is what some choice scores."""
    if not isinstance(examples, list) or not scores:
        return
    for index, example in enumerate(examples):
        if not isinstance(example, Mapping):
            continue
        choice = example.get("choice")
        score = example.get("score")
        if isinstance(choice, (str, int, float)) and not isinstance(choice, bool):
            if as_text(choice) not in scores:
                report.at(
                    (*here, index, "choice"),
                    f"choice '{as_text(choice)}' is not one of this judge's choices ({', '.join(scores)})"
                    f"{suggest(as_text(choice), list(scores))}",
                )
        elif isinstance(score, (int, float)) and _is_score(score) and not choices_scoring(score, scores):
            listed = ", ".join(f"{name} = {value:g}" for name, value in scores.items())
            report.at(
                (*here, index, "score"),
                f"no choice of this judge scores {score:g} ({listed}): give one of their scores,"
                " or the choice as choice:",
            )


def check_named_judges(report: Report, data: Mapping[str, Any]) -> None:
    """The `judges:` of a project file: names that are not kinds, rubric templates, examples."""
    judges = data.get(JUDGES_KEY)
    if not isinstance(judges, Mapping):
        return
    for name, definition in judges.items():
        here: KeyPath = (JUDGES_KEY, name)
        if as_text(name) in KINDS:
            report.at(
                here,
                f"'{name}' is a judge kind: give your judge another name (a spec writes judge: NAME)",
                at_key=True,
            )
        if not isinstance(definition, Mapping):
            continue
        for key in ("criteria", "expected", "prompt"):
            if isinstance(definition.get(key), str):
                check_template(report, definition[key], (*here, key), CHECK_VARIABLES, key)
        kind = kind_of_named(definition)
        if kind is not None:
            scores = choice_scores(kind, _choices(definition.get("choices")))
            check_examples(report, definition.get("examples"), (*here, "examples"), scores)


def _is_score(value: Any) -> bool:
    """A number from 0 to 1 (anything else, the schema reports)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _choices(raw: Any) -> dict[str, float] | None:
    """A custom judge's choices when they have the shape the schema asks for (else the schema says)."""
    if not isinstance(raw, Mapping):
        return None
    valid = {
        as_text(name): float(score)
        for name, score in raw.items()
        if isinstance(score, (int, float)) and not isinstance(score, bool)
    }
    return valid if len(valid) == len(raw) else None
