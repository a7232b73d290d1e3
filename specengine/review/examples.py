"""Human reviews as few-shot examples: the verdicts people gave, in the shape a judge's `examples:` takes.

A reviewed judge verdict is a graded example the judge should have matched: the message and reply it
read (for a conversation judge, the conversation as it read it), the outcome the person gave, and
the person's note as the reason. Fed back as `examples:` of the judge check (or of its named judge),
the judge learns from its overrides ("human overrides as few-shot"). The outcome is written as a
score: the one end of the scale (1 or 0) that the check's threshold passes for a reply that should
pass and fails for one that should fail, so it names the judge's choices that score it (Y or N for
closed_qa).

The file written is YAML: one list per judge check, keyed by the named judge's name or by the
check's `spec:line name`, ready to be copied under `examples:`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specengine.judge.conversation import conversation_text
from specengine.judge.kinds import CONVERSATION_KINDS
from specengine.plan import JudgeExample, Threshold
from specengine.results.decode import judge_pin, messages, turn_records
from specengine.results.loaded import Case, JudgePin
from specengine.review.agreement import JudgeVerdict
from specengine.review.store import Review

HEADER = """\
# Few-shot examples from human reviews of judge verdicts (specengine agreement --export-examples).
# One list per judge check, keyed by its named judge or by its spec line and name: copy a list under
# that check's examples:, or under judges: NAME: examples: in specengine.yaml for a named judge.
# score 1 is a reply that should pass, score 0 one that should fail (for a judge whose threshold is
# inverted, the other way round); why is the reviewer's note.
"""


@dataclass(frozen=True)
class ReviewedExample:
    """One reviewed verdict as an example, and the judge check it belongs to."""

    judge: str  # the named judge, or `spec:line check name`
    example: JudgeExample
    overrides: bool  # the person turned the judge's verdict around


def reviewed_example(verdict: JudgeVerdict, review: Review, case: Case) -> ReviewedExample | None:
    """The example a review of a judge check gives, or None when the case lacks that check's turn."""
    for trial in case.trials:
        check = next(
            (c for c in trial.checks if c.name == verdict.check and (c.line or None) == verdict.line), None
        )
        records = turn_records(messages(trial))
        if check is None or not 1 <= check.turn <= len(records):
            continue
        record = records[check.turn - 1]
        pin = judge_pin(check) or JudgePin()
        score = _score(review.human_passed, check.threshold)
        if pin.kind in CONVERSATION_KINDS:  # it read the conversation
            shown = [r for r in records[: check.turn] if r.conversation == record.conversation]
            example = JudgeExample(output=conversation_text(shown), score=score, why=review.note or None)
        else:
            example = JudgeExample(
                output=record.turn.reply, score=score, input=record.message, why=review.note or None
            )
        where = f"{verdict.spec}:{verdict.line}" if verdict.line else verdict.spec
        judge = pin.name or f"{where} {verdict.check}"
        return ReviewedExample(judge, example, (verdict.status == "passed") != review.human_passed)
    return None


def _score(should_pass: bool, threshold: Any) -> float:
    """The end of the scale the check's threshold puts on the reviewer's side: 1 passes, unless the
    threshold is inverted (such as {lt: 0.5})."""
    bound = _threshold(threshold)
    inverted = bound is not None and bound.passes(0.0) and not bound.passes(1.0)
    return 1.0 if should_pass != inverted else 0.0


def _threshold(raw: Any) -> Threshold | None:
    if not isinstance(raw, Mapping) or len(raw) != 1:
        return None
    ((op, value),) = raw.items()
    if op not in ("gte", "gt", "lte", "lt") or not isinstance(value, (int, float)):
        return None
    return Threshold(str(op), float(value))


def examples_yaml(examples: Iterable[ReviewedExample]) -> str:
    """The export file: the header, then each judge's examples as a YAML list."""
    import yaml

    grouped: dict[str, list[dict[str, Any]]] = {}
    for item in examples:
        entry = item.example.as_dict()
        if isinstance(entry.get("score"), float) and entry["score"].is_integer():
            entry["score"] = int(entry["score"])
        grouped.setdefault(item.judge, []).append(entry)
    body = yaml.safe_dump(grouped, sort_keys=False, allow_unicode=True, width=100) if grouped else "{}\n"
    return HEADER + body
