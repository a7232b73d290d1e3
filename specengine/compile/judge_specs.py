"""The judge of a judge check: its own rubric, or a named judge of the project file that it uses.

A team keeps one rubric under `judges:` in specengine.yaml and specs say `judge: NAME`; the check
then takes the named judge's rubric, model, samples and examples (judge.named), and may add examples
of its own and its own `samples`. Validation has checked every name and shape before this runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.judge.kinds import CONVERSATION_KINDS, KINDS
from specengine.judge.named import kind_of_named
from specengine.plan import JudgeExample, JudgeSpec, Scope
from specengine.source.loader import as_text


def judge_examples(raw: Any) -> tuple[JudgeExample, ...]:
    """`examples:` as plain data; every text as text (YAML may have read `42` as a number)."""
    examples = []
    for item in raw or ():
        score = item.get("score")
        examples.append(
            JudgeExample(
                output=as_text(item["output"]),
                choice=as_text(item["choice"]) if item.get("choice") is not None else None,
                score=float(score) if score is not None else None,
                input=_text(item.get("input")),
                expected=_text(item.get("expected")),
                why=_text(item.get("why")),
            )
        )
    return tuple(examples)


def judge_spec(entry: Mapping[str, Any], named: Mapping[str, Any]) -> JudgeSpec:
    """The JudgeSpec of a check mapping with `judge:`; `named` is the project's `judges:`."""
    value = as_text(entry["judge"])
    own_samples = entry.get("samples")
    own_examples = judge_examples(entry.get("examples"))
    definition = named.get(value) if value not in KINDS else None
    if isinstance(definition, Mapping):
        samples = own_samples if own_samples is not None else definition.get("samples")
        return JudgeSpec(
            kind=kind_of_named(definition) or "custom",
            criteria=definition.get("criteria"),
            expected=definition.get("expected"),
            prompt=definition.get("prompt"),
            choices=_choices(definition.get("choices")),
            examples=judge_examples(definition.get("examples")) + own_examples,
            samples=int(samples) if samples is not None else None,
            model=_text(definition.get("model")),
            name=value,
        )
    return JudgeSpec(
        kind=value,
        criteria=entry.get("criteria"),
        expected=entry.get("expected"),
        prompt=entry.get("prompt"),
        choices=_choices(entry.get("choices")),
        examples=own_examples,
        samples=int(own_samples) if own_samples is not None else None,
        goal=entry.get("goal"),
        role=entry.get("role"),
    )


def default_scope(entry: Mapping[str, Any]) -> Scope:
    """What a judge check reads when it says no `scope:`: a conversation judge the conversation (since
    the last reset, up to its turn), any other judge its own turn."""
    return "conversation" if as_text(entry["judge"]) in CONVERSATION_KINDS else "turn"


def _choices(raw: Any) -> dict[str, float] | None:
    return {as_text(name): float(score) for name, score in raw.items()} if raw else None


def _text(value: Any) -> str | None:
    return as_text(value) if value is not None else None
