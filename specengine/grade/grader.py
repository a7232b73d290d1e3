"""Grade a trial's turns: render each check's templates, run its matcher or judge, apply modifiers.

Matchers and judges only score; this module owns what the modifiers mean (`value`, `not`,
`threshold`, `soft`, `scope`, `--strict`), so every matcher behaves the same way under them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from specengine.errors import TemplateError
from specengine.grade.match_result import MatchInput
from specengine.grade.matchers import MATCHERS, default_name, match
from specengine.grade.tool_hints import TOOL_CHECKS, in_scope, tool_hint, unseen_reason
from specengine.judge.kinds import CONVERSATION_KINDS, GOAL, NO_JUDGE
from specengine.plan import Case, Check, JudgeConfig, Step
from specengine.results.model import CheckResult, SkipCode, TrialResult, trial_status
from specengine.source.loader import as_text
from specengine.templates import render_native, value_text
from specengine.transcript import SimulationEnd, TrialRun, TurnRecord, transcript
from specengine.usage import total_usage

if TYPE_CHECKING:  # the judge's modules load with the first judge check
    from specengine.judge.judge import Judge, JudgeVerdict
    from specengine.judge.samples import Combined, Sample


def _variables(case: Case, record: TurnRecord) -> dict[str, Any]:
    return {
        **case.variables,
        "reply": record.turn.reply,
        "tool_calls": [call.as_dict() for call in record.turn.tool_calls],
        "session_id": record.turn.session_id,
        "turn": record.number,
    }


def _located(check: Check, exc: TemplateError) -> str:
    return f"{check.source.path}:{check.source.line + exc.line - 1}: {exc.message}"


def _result(
    check: Check, record: TurnRecord, gate: bool, name: str | None = None, **fields: Any
) -> CheckResult:
    return CheckResult(
        name=name or check.name,
        matcher=check.matcher,
        line=check.source.line,
        turn=record.number,
        gate=gate,
        threshold=check.threshold.as_dict(),
        **fields,
    )


def _text(check: Check, record: TurnRecord, variables: Mapping[str, Any]) -> str:
    if check.value is None:
        return record.turn.reply
    return value_text(render_native(check.value, dict(variables)))


def _finish(
    check: Check,
    record: TurnRecord,
    gate: bool,
    score: float,
    reason: str,
    name: str | None = None,
    **extra: Any,
) -> CheckResult:
    """Apply `not:` and the threshold; the reason says what was found either way."""
    if check.negate:
        score = 1.0 - score
        if score < 1.0:
            reason = f"expected the opposite of: {name or check.name}" + (f" ({reason})" if reason else "")
    passed = check.threshold.passes(score)
    if not passed and check.is_judge:
        reason = f"{reason}, needs {check.threshold}"
    elif not passed and not reason:
        reason = f"score {score:.2f} is not {check.threshold}"
    status = "passed" if passed else "failed"
    return _result(check, record, gate, name, status=status, score=score, reason=reason, **extra)


def grade_check(
    case: Case,
    check: Check,
    record: TurnRecord,
    records: Sequence[TurnRecord],
    strict: bool,
    variables: dict[str, Any] | None = None,
    reply_input: MatchInput | None = None,
) -> CheckResult:
    """Grade one deterministic check against its turn (or conversation). `variables` are the turn's
    template variables and `reply_input` what a check of its reply sees, when the caller has them
    already (every check of a turn reads the same)."""
    gate = check.gate or strict
    if variables is None:
        variables = _variables(case, record)
    try:
        argument = render_native(check.argument, variables) if check.argument is not None else None
        text = _text(check, record, variables)
    except TemplateError as exc:
        return _result(check, record, gate, status="error", score=None, reason=_located(check, exc))
    if (
        isinstance(argument, (int, float))
        and not isinstance(argument, bool)
        and not MATCHERS[check.matcher].argument.keeps_numbers
    ):
        argument = as_text(argument)
    if reply_input is not None and check.value is None and check.scope != "conversation":
        data = reply_input
    else:
        data = _match_input(check, record, records, text)
    outcome = match(check.matcher, argument, data, check.options)
    name = check.name if check.named else default_name(check.matcher, argument, check.options)
    if outcome.error:  # could not be evaluated: never inverted by `not:`, never a pass
        return _result(check, record, gate, name, status="error", score=None, reason=outcome.reason)
    result = _finish(check, record, gate, outcome.score, outcome.reason, name=name)
    if result.status != "passed":  # expected/got only where someone will read them
        hint = tool_hint(check, argument, record, records) if check.matcher in TOOL_CHECKS else ""
        reason = f"{result.reason}{hint}" if hint and result.reason else result.reason
        reason = unseen_reason(check, argument, records) or reason
        result = replace(result, expected=outcome.expected, got=outcome.got, reason=reason)
    return result


def _match_input(check: Check, record: TurnRecord, records: Sequence[TurnRecord], text: str) -> MatchInput:
    """What the check's matcher sees: `text` (the reply or the rendered value) and the turns in scope."""
    if check.scope == "conversation":
        turns = tuple(r.turn for r in in_scope(check, record, records))
    else:
        turns = (record.turn,)
    subject = "the value" if check.value is not None else "the reply"
    return MatchInput(text=text, turn=record.turn, turns=turns, subject=subject)


def _question(check: Check, record: TurnRecord, records: Sequence[TurnRecord]) -> str:
    """What the judge is asked about: the last user message, or the conversation since the last reset
    (for a conversation judge, with tool calls, as judge.conversation shows it)."""
    if check.judge is not None and check.judge.kind in CONVERSATION_KINDS:
        from specengine.judge.conversation import conversation_text

        return conversation_text(in_scope(check, record, records))
    if check.scope != "conversation":
        return record.message
    from specengine.judge.judge import transcript as judge_transcript

    scoped = in_scope(check, record, records)
    return judge_transcript(
        pair for r in scoped for pair in (("user", r.message), ("assistant", r.turn.reply))
    )


def _judge_text(value: Any, variables: Mapping[str, Any]) -> str | None:
    if value is None:
        return None
    rendered = render_native(value, dict(variables))
    return rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False, default=str)


async def grade_judge(
    case: Case,
    check: Check,
    record: TurnRecord,
    records: Sequence[TurnRecord],
    strict: bool,
    judge: Judge | None,
    config: JudgeConfig,
) -> CheckResult:
    """Grade one judge check: its samples asked together, combined into one score (judge.samples).

    Skipped (never passed) when no judge model is configured; `error` when any sample could not be
    scored, with every sample recorded, so a re-run asks only for the ones missing from the cache.
    """
    from specengine.judge.judge import JudgeRequest
    from specengine.judge.samples import Sample, combine, method_for

    gate = check.gate or strict
    spec = check.judge
    if judge is None or not config.model or spec is None:
        return _result(
            check, record, gate, status="skipped", score=None, reason=NO_JUDGE, skip_code="no_judge"
        )
    variables = _variables(case, record)
    try:
        request = JudgeRequest(
            kind=spec.kind,
            question=_question(check, record, records),
            reply=_text(check, record, variables),
            criteria=_judge_text(spec.criteria, variables),
            expected=_judge_text(spec.expected, variables),
            prompt=_judge_text(spec.prompt, variables),
            choices={as_text(k): float(v) for k, v in spec.choices.items()} if spec.choices else None,
            examples=spec.examples,
            model=spec.model,
            goal=(_judge_text(spec.goal, variables) or case.goal) if spec.kind == GOAL else None,
            role=_judge_text(spec.role, variables),
        )
    except TemplateError as exc:
        return _result(check, record, gate, status="error", score=None, reason=_located(check, exc))
    count = max(1, spec.samples or config.samples)
    verdicts = await asyncio.gather(*(judge.verdict(request, sample) for sample in range(1, count + 1)))
    pin = judge.pin(spec).as_dict()
    usage = _usage_sum([verdict.usage for verdict in verdicts])
    sampled: dict[str, Any] = {}
    if count > 1:
        sampled["samples"] = tuple(_sample_record(verdict) for verdict in verdicts)
    failed = next((verdict for verdict in verdicts if verdict.error or verdict.score is None), None)
    if failed is not None:
        reason = failed.error or "the judge gave no score"
        if count > 1:
            reason = f"sample {verdicts.index(failed) + 1} of {count}: {reason}"
        return _result(
            check, record, gate, status="error", score=None, reason=reason, usage=usage, judge=pin, **sampled
        )
    scored = [Sample(float(v.score or 0.0), v.choice, v.rationale) for v in verdicts]
    combined = combine(scored, method_for(request.choice_scores))
    if count > 1:
        sampled.update(spread=combined.spread, uncertain=combined.uncertain)
    return _finish(
        check,
        record,
        gate,
        combined.score,
        _judge_reason(str(check.argument), combined, scored),
        rationale=combined.rationale,
        usage=usage,
        cached=all(verdict.cached for verdict in verdicts),
        judge=pin,
        **sampled,
    )


def _judge_reason(label: str, combined: Combined, samples: Sequence[Sample]) -> str:
    """`closed_qa score 1.00 (choice Y)`; with samples, how they were combined and what each chose."""
    reason = f"{label} score {combined.score:.2f}"
    if len(samples) == 1:
        return reason + (f" (choice {combined.choice})" if combined.choice else "")
    picked = ", ".join(sample.choice or f"{sample.score:g}" for sample in samples)
    if combined.method == "majority":
        agreeing = sum(1 for sample in samples if sample.score == combined.score)
        return f"{reason} (choice {combined.choice} in {agreeing} of {len(samples)} samples: {picked})"
    return f"{reason} (mean of {len(samples)} samples: {picked})"


def _sample_record(verdict: JudgeVerdict) -> dict[str, Any]:
    """One sample as the results keep it: its score, choice and rationale, or its error."""
    if verdict.error is not None or verdict.score is None:
        return {"score": None, "error": verdict.error or "the judge gave no score"}
    return {
        "score": verdict.score,
        "choice": verdict.choice,
        "rationale": verdict.rationale,
        "cached": verdict.cached,
    }


def _usage_sum(usages: Sequence[Mapping[str, int] | None]) -> dict[str, int] | None:
    """The tokens of every sample together (a cached sample counts what its call spent)."""
    total: dict[str, int] = {}
    for usage in usages:
        for name, count in (usage or {}).items():
            total[name] = total.get(name, 0) + count
    return total or None


def grade_skipped(
    case: Case, check: Check, number: int, strict: bool, reason: str, skip_code: SkipCode
) -> CheckResult:
    """A check whose turn never ran (the trial errored before it)."""
    return CheckResult(
        name=check.name,
        matcher=check.matcher,
        line=check.source.line,
        turn=number,
        gate=check.gate or strict,
        status="skipped",
        score=None,
        threshold=check.threshold.as_dict(),
        reason=reason,
        skip_code=skip_code,
    )


async def grade_trial(
    case: Case,
    records: Sequence[TurnRecord],
    error: Mapping[str, str] | None,
    strict: bool,
    judge: Judge | None,
    config: JudgeConfig,
) -> list[CheckResult]:
    """Every check of a trial, in spec order; judge checks run concurrently (the judge limits them)."""

    def judged(check: Check, record: TurnRecord) -> asyncio.Future[CheckResult]:
        return asyncio.ensure_future(grade_judge(case, check, record, records, strict, judge, config))

    pending = _trial_checks(case, records, error, strict, judged)
    futures = [item for item in pending if isinstance(item, asyncio.Future)]
    if futures:
        await asyncio.gather(*futures)
    return [item.result() if isinstance(item, asyncio.Future) else item for item in pending]


async def grade_run(
    case: Case, run: TrialRun, strict: bool, judge: Judge | None, config: JudgeConfig
) -> TrialResult:
    """A trial as it ran, graded."""
    checks = await grade_trial(case, run.records, run.error, strict, judge, config)
    return trial_result(run.records, run.error, checks, run.attempts, run.simulations)


def _trial_checks(
    case: Case,
    records: Sequence[TurnRecord],
    error: Mapping[str, str] | None,
    strict: bool,
    judged: Callable[[Check, TurnRecord], Any],
) -> list[Any]:
    """Each check of a trial graded, in spec order; a judge check is what `judged` makes of it.

    A `send` step reads the next turn; a `simulate` step the turns its simulated user sent, its
    checks applying to the last of them (`scope: conversation` widens them to all).
    """
    pending: list[Any] = []
    number = 0
    for step, record in _step_records(case, records):
        number = record.number if record is not None else number + 1
        variables = _variables(case, record) if record is not None and error is None else None
        reply_input = MatchInput(record.turn.reply, record.turn, (record.turn,)) if record else None
        for check in step.checks:
            if error is not None:
                pending.append(
                    grade_skipped(
                        case, check, number, strict, "not run: the trial ended in an error", "trial_error"
                    )
                )
            elif record is None:
                missing = (
                    "the simulated user sent no message"
                    if step.kind == "simulate"
                    else f"the transcript has no turn {number} (run the case again to send it)"
                )
                pending.append(
                    grade_skipped(case, check, number, strict, f"not run: {missing}", "turn_missing")
                )
            elif check.is_judge:
                pending.append(judged(check, record))
            else:
                pending.append(grade_check(case, check, record, records, strict, variables, reply_input))
    return pending


def _step_records(case: Case, records: Sequence[TurnRecord]) -> Iterator[tuple[Step, TurnRecord | None]]:
    """Each step that sends, with the turn its checks read (None when the transcript has none)."""
    cursor = 0
    for index, step in enumerate(case.steps):
        if step.kind == "reset":
            continue
        if step.kind == "simulate":
            last = None
            while cursor < len(records) and records[cursor].step == index:
                last = records[cursor]
                cursor += 1
            yield step, last
            continue
        record = records[cursor] if cursor < len(records) else None
        cursor += 1
        yield step, record


def trial_result(
    records: Sequence[TurnRecord],
    error: Mapping[str, str] | None,
    checks: Sequence[CheckResult],
    attempts: int = 1,
    simulations: Sequence[SimulationEnd] = (),
) -> TrialResult:
    """A trial's outcome from what was sent and received and how its checks went."""
    first = next((record.turn.ttft_s for record in records if record.turn.ttft_s is not None), None)
    return TrialResult(
        status=trial_status(error, checks),
        latency_s=sum(record.turn.latency_s for record in records),
        error=error,
        transcript=transcript(records),
        checks=tuple(checks),
        ttft_s=first,
        attempts=attempts,
        usage=total_usage(record.turn.tokens for record in records),
        simulations=tuple(simulations),
    )
