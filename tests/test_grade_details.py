"""`expected` and `got` of a check: worded when read, shown for every check that did not pass.

Tool matchers hand over how to word their calls instead of the text (match_result.Detail), because a
passing check rarely shows them; a check that passes its matcher can still fail (`not:`, a threshold
it cannot meet), and then the words must be there, the same as if they had been written at once.
"""

from __future__ import annotations

import datetime

import pytest

from specengine.grade.grader import grade_check
from specengine.grade.match_result import MatchInput
from specengine.grade.matchers import match
from specengine.plan import Case, Check, Source, Step, Threshold
from specengine.transcript import ToolCall, Turn, TurnRecord

CALL = ToolCall("get_weather", {"city": "Paris"})
TURN = Turn(reply="Sunny in Paris", tool_calls=(CALL, ToolCall("log", {})))
WORDED = 'get_weather({"city": "Paris"})'
GOT = 'get_weather({"city": "Paris"}), log()'


def _graded(matcher: str, argument: object, **modifiers: object):
    check = Check(matcher=matcher, argument=argument, name="c", source=Source("s.yaml", 3), **modifiers)
    case = Case(
        id="s.yaml::e",
        index=0,
        suite="s",
        spec="s.yaml",
        eval_name="e",
        line=1,
        endpoint="agent",
        steps=(Step("send", "hi", (check,)),),
        variables={"input": {}, "expected": {}, "metadata": {}},
    )
    record = TurnRecord(1, "hi", TURN, 0)
    return grade_check(case, check, record, [record], strict=False)


def test_an_inverted_tool_check_that_matched_shows_its_calls():
    result = _graded("called_tool_with", {"name": "get_weather", "args": {"city": "Paris"}}, negate=True)
    assert (result.status, result.expected, result.got) == ("failed", WORDED, GOT)


def test_a_threshold_that_a_match_cannot_meet_shows_the_calls():
    result = _graded("called_tool", "get_weather", threshold=Threshold("gt", 1.0))
    assert (result.status, result.expected, result.got) == ("failed", "get_weather", GOT)


def test_a_passing_check_keeps_no_details():
    result = _graded("called_tool_with", {"name": "get_weather", "args": {"city": "Paris"}})
    assert (result.status, result.expected, result.got) == ("passed", None, None)


def test_a_match_result_words_its_details_each_time_they_are_read():
    data = MatchInput(text=TURN.reply, turn=TURN, turns=(TURN,))
    outcome = match("called_tool_with", {"name": "get_weather", "args": {"city": "Paris"}}, data)
    assert callable(outcome.expected_detail) and callable(outcome.got_detail)
    assert (outcome.expected, outcome.got) == (WORDED, GOT)
    assert (outcome.expected, outcome.got) == (WORDED, GOT)


# ---------------------------------------------------------------------------------------------------
# What a graded check records, under each modifier: its name, gate, status, score, reason and details


def _record(**changes: object) -> dict:
    row = {"name": "c", "matcher": "includes", "line": 3, "turn": 1, "gate": True, "status": "passed"}
    return {**row, "score": 1.0, "threshold": {"gte": 1.0}, "reason": "", "rationale": None, **changes}


def _graded_for(matcher: str, argument: object, strict: bool = False, **modifiers: object):
    check = Check(matcher=matcher, argument=argument, name="c", source=Source("s.yaml", 3), **modifiers)
    case = Case(
        id="s.yaml::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=1, endpoint="agent",
        steps=(Step("send", "hi", (check,)),), variables={"input": {"city": "Paris"}, "expected": {}},
    )  # fmt: skip
    record = TurnRecord(1, "hi", TURN, 0)
    return grade_check(case, check, record, [record], strict=strict)


SUNNY = 'the reply includes "Sunny"'
NOT_RAINY = 'the reply does not include "Rainy"'
BAD_PATTERN = "invalid regular expression /(/: missing ), unterminated subpattern at position 0"


@pytest.mark.parametrize(
    ("matcher", "argument", "modifiers", "recorded"),
    [
        ("includes", "Sunny", {}, _record(name='includes "Sunny"', reason=SUNNY)),
        (
            "includes",
            "Rainy",
            {},
            _record(
                name='includes "Rainy"',
                status="failed",
                score=0.0,
                reason=NOT_RAINY,
                expected='"Rainy"',
                got=TURN.reply,
            ),
        ),  # fmt: skip
        (
            "includes",
            "Sunny",
            {"negate": True},  # inverted: the reason says what was found
            _record(
                name='includes "Sunny"',
                status="failed",
                score=0.0,
                reason=f'expected the opposite of: includes "Sunny" ({SUNNY})',
                expected='"Sunny"',
                got=TURN.reply,
            ),
        ),  # fmt: skip
        ("includes", "Rainy", {"negate": True}, _record(name='includes "Rainy"', reason=NOT_RAINY)),
        ("includes", "Sunny", {"named": True}, _record(reason=SUNNY)),
        (
            "includes",
            "{{ input.city }}",
            {},
            _record(name='includes "Paris"', reason='the reply includes "Paris"'),
        ),
        (
            "includes",
            "{{ input.city",
            {},
            _record(
                status="error",
                score=None,
                reason="s.yaml:3: template syntax error: unexpected end of template, expected 'end of print"
                " statement'.",
            ),
        ),  # fmt: skip
        (
            "includes",
            21,  # a number is its text, for a matcher that reads text
            {},
            _record(
                name='includes "21"',
                status="failed",
                score=0.0,
                reason='the reply does not include "21"',
                expected='"21"',
                got=TURN.reply,
            ),
        ),  # fmt: skip
        (
            "latency_below",
            5,
            {},
            _record(
                name="latency_below 5", matcher="latency_below", reason="the turn took 0.00 s, under 5 s"
            ),
        ),
        ("includes", "Sunny", {"gate": False}, _record(name='includes "Sunny"', gate=False, reason=SUNNY)),
        (
            "called_tool",
            "get_weather",
            {"options": {"times": 1}},  # its options are part of its name
            _record(name="called_tool get_weather 1 time", reason="get_weather was called 1 time"),
        ),
        (
            "succeeded",
            None,
            {"value": "x"},  # a value: beside a matcher that reads the turn still reads the turn
            _record(name="succeeded", reason="the turn completed without an error"),
        ),
        (
            "includes",
            "Sunny",
            {"gate": False, "strict": True},
            _record(name='includes "Sunny"', reason=SUNNY),
        ),
        (
            "equals",
            "Paris",
            {"value": "{{ input.city }}"},
            _record(name='equals "Paris"', matcher="equals", reason='the value equals "Paris"'),
        ),
        (
            "matches",
            "(",
            {"negate": True},  # a check that cannot run is an error, never inverted into a pass
            _record(name="matches /(/", matcher="matches", status="error", score=None, reason=BAD_PATTERN),
        ),
        (
            "called_tool",
            "get_weather",
            {"threshold": Threshold("gt", 1.0)},
            _record(
                name="called_tool get_weather",
                matcher="called_tool",
                status="failed",
                threshold={"gt": 1.0},
                reason="get_weather was called 1 time",
                expected="get_weather",
                got=GOT,
            ),
        ),  # fmt: skip
        (
            "called_tool",
            "get_weather",
            {"threshold": Threshold("lt", 0.5), "negate": True},
            _record(
                name="called_tool get_weather",
                matcher="called_tool",
                score=0.0,
                threshold={"lt": 0.5},
                reason="expected the opposite of: called_tool get_weather (get_weather was called 1 time)",
            ),
        ),  # fmt: skip
    ],
)
def test_what_a_graded_check_records(matcher, argument, modifiers, recorded):
    given = {key: value for key, value in modifiers.items() if key != "strict"}
    graded = _graded_for(matcher, argument, bool(modifiers.get("strict")), **given)
    assert graded.as_dict() == {**recorded, "matcher": matcher}


def test_an_undefined_variable_is_an_error_located_in_the_spec():
    result = _graded_for("includes", "{{ input.nope.deeper }}")
    assert (result.status, result.score, result.name) == ("error", None, "c")
    assert result.reason.startswith("s.yaml:")
    assert result.reason.endswith(": undefined variable input.nope: input has no key 'nope'")


@pytest.mark.parametrize(
    ("threshold", "negate", "score", "status", "reason"),
    [
        (Threshold("gte", 1.0), False, 0.5, "failed", "score 0.50 is not >= 1"),  # a matcher without words
        (Threshold("gte", 0.5), False, 0.5, "passed", ""),
        (Threshold("gte", 1.0), True, 0.25, "failed", "expected the opposite of: c"),
        (Threshold("lt", 0.5), True, 0.75, "passed", "expected the opposite of: c"),
    ],
)
def test_a_score_is_inverted_then_held_to_the_threshold(threshold, negate, score, status, reason):
    from specengine.grade.grader import _finish

    check = Check(matcher="includes", argument="x", name="c", source=Source("s.yaml", 3), threshold=threshold,
                  negate=negate)  # fmt: skip
    result = _finish(check, TurnRecord(1, "hi", TURN, 0), True, score, "")
    assert (result.status, result.score, result.reason) == (status, 1.0 - score if negate else score, reason)


# ---------------------------------------------------------------------------------------------------
# What a judge is asked and what is kept of its samples; the turns a check sees


FIRST = TurnRecord(1, "first", Turn(reply="one", tool_calls=(CALL,)), 0)
SECOND = TurnRecord(2, "second", Turn(reply="two"), 0)
OTHER = TurnRecord(3, "other", Turn(reply="three", tool_calls=(CALL,)), 1)  # another conversation
LATER = TurnRecord(4, "later", Turn(reply="four", tool_calls=(CALL,)), 0)
RECORDS = [FIRST, SECOND, OTHER, LATER]


@pytest.mark.parametrize(
    ("scope", "question"),
    [
        ("turn", "second"),
        ("conversation", "user: first\nassistant: one\nuser: second\nassistant: two"),  # up to this turn
    ],
)
def test_the_judge_is_asked_about_the_turn_or_the_conversation_so_far(scope, question):
    from specengine.grade.grader import _question

    check = Check(matcher="judge", argument="closed_qa", name="c", source=Source("s.yaml", 3), scope=scope)
    assert _question(check, SECOND, RECORDS) == question


QUIET_FIRST = TurnRecord(1, "first", Turn(reply="one"), 0)


@pytest.mark.parametrize(
    ("scope", "records", "status"),
    [
        ("turn", RECORDS, "failed"),
        ("conversation", RECORDS, "passed"),  # the call was in the first turn
        (
            "conversation",
            [QUIET_FIRST, SECOND, OTHER, LATER],
            "failed",
        ),  # never another conversation's, nor later
    ],
)
def test_a_tool_check_sees_the_turns_of_its_scope(scope, records, status):
    check = Check(
        matcher="called_tool", argument="get_weather", name="c", source=Source("s.yaml", 3), scope=scope
    )
    case = Case(
        id="s.yaml::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=1, endpoint="agent",
        steps=(Step("send", "hi", (check,)),), variables={},
    )  # fmt: skip
    assert grade_check(case, check, SECOND, records, strict=False).status == status


UNSEEN = (
    "the endpoint reported no tool call in any turn, so whether {} was called cannot be seen (a tool"
    " call is seen only when the agent's answer carries it: an A2A agent shows its tool calls only if"
    " it sends them)"
)


@pytest.mark.parametrize(
    ("matcher", "argument", "names"),
    [
        ("called_tool", "get_weather", "get_weather"),
        ("called_tool_with", {"name": "get_weather", "args": {"city": "Paris"}}, "get_weather"),
        ("tool_calls_in_order", ["get_weather", "book_table", "get_weather"], "get_weather or book_table"),
    ],
)
def test_a_tool_check_where_no_turn_reported_a_call_says_none_was_reported(matcher, argument, names):
    quiet = [QUIET_FIRST, SECOND]
    check = Check(matcher=matcher, argument=argument, name="c", source=Source("s.yaml", 3))
    case = Case(
        id="s.yaml::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=1, endpoint="agent",
        steps=(Step("send", "hi", (check,)),), variables={},
    )  # fmt: skip
    result = grade_check(case, check, SECOND, quiet, strict=False)
    assert (result.status, result.reason) == ("failed", UNSEEN.format(names))
    text = Check(matcher="includes", argument="sunny", name="t", source=Source("s.yaml", 4))
    assert grade_check(case, text, SECOND, quiet, strict=False).reason == 'the reply does not include "sunny"'
    elsewhere = grade_check(case, check, SECOND, [FIRST, SECOND], strict=False)  # a call in another turn
    assert elsewhere.status == "failed" and "cannot be seen" not in elsewhere.reason


def test_a_judge_option_is_rendered_to_text():
    from specengine.grade.grader import _judge_text

    variables = {"input": {"city": "Zürich", "when": datetime.date(2026, 1, 2)}}
    assert _judge_text(None, variables) is None
    assert _judge_text("{{ input.city }}", variables) == "Zürich"
    assert (
        _judge_text("{{ input }}", variables) == '{"city": "Zürich", "when": "2026-01-02"}'
    )  # JSON, as written


@pytest.mark.parametrize(
    ("verdict", "kept"),
    [
        ({"score": None, "error": "boom"}, {"score": None, "error": "boom"}),
        ({"score": None}, {"score": None, "error": "the judge gave no score"}),
        ({"score": 0.5, "error": "late"}, {"score": None, "error": "late"}),
        (
            {"score": 1.0, "rationale": "why", "choice": "Y", "cached": True},
            {"score": 1.0, "choice": "Y", "rationale": "why", "cached": True},
        ),
    ],
)
def test_what_is_kept_of_each_sample(verdict, kept):
    from specengine.grade.grader import _sample_record
    from specengine.judge.judge import JudgeVerdict

    given = {"rationale": None, "choice": None, "usage": None, **verdict}
    assert _sample_record(JudgeVerdict(**given)) == kept


def test_the_samples_tokens_are_summed_by_name():
    from specengine.grade.grader import _usage_sum

    assert _usage_sum([{"a": 1}, None, {"a": 2, "b": 3}]) == {"a": 3, "b": 3}
    assert _usage_sum([None, {}]) is None


def test_a_check_whose_turn_never_ran_is_skipped_with_the_reason():
    from specengine.grade.grader import grade_skipped

    check = Check(matcher="includes", argument="x", name="c", source=Source("s.yaml", 3), gate=False)
    skipped = grade_skipped(None, check, 2, True, "not run", "trial_error")  # type: ignore[arg-type]
    assert skipped.as_dict() == _record(
        turn=2, status="skipped", score=None, reason="not run", skip_code="trial_error"
    )


@pytest.mark.parametrize(
    ("label", "scores", "method", "reason"),
    [
        ("closed_qa", [(1.0, "Y")], "majority", "closed_qa score 1.00 (choice Y)"),
        ("custom", [(0.5, None)], "mean", "custom score 0.50"),
        (
            "closed_qa",
            [(1.0, "Y"), (1.0, "Y"), (0.0, "N")],
            "majority",
            "closed_qa score 1.00 (choice Y in 2 of 3 samples: Y, Y, N)",
        ),
        (
            "factuality",
            [(0.6, "A"), (0.4, None)],
            "mean",
            "factuality score 0.50 (mean of 2 samples: A, 0.4)",
        ),
    ],
)
def test_a_judge_checks_reason_says_how_its_samples_were_combined(label, scores, method, reason):
    from specengine.grade.grader import _judge_reason
    from specengine.judge.samples import Sample, combine

    samples = [Sample(score, choice, None) for score, choice in scores]
    assert _judge_reason(label, combine(samples, method), samples) == reason


# ---------------------------------------------------------------------------------------------------
# A judge check graded against a judge that answers as scripted (what is asked, recorded, combined)


class _ScriptedJudge:
    """Answers each sample with the next verdict given, and keeps what it was asked."""

    def __init__(self, *verdicts: dict) -> None:
        self.verdicts = list(verdicts)
        self.asked: list = []

    async def verdict(self, request, sample: int = 1):
        from specengine.judge.judge import JudgeVerdict

        self.asked.append((request, sample))
        return JudgeVerdict(**{"rationale": None, "choice": None, "usage": None, **self.verdicts[sample - 1]})

    def pin(self, spec):
        class Pin:
            def as_dict(self) -> dict:
                return {"model": "m"}

        return Pin()


def _judged(judge, model: str | None = "m", samples: int = 1, criteria: str = "Polite?", spec: bool = True):
    import asyncio

    from specengine.grade.grader import grade_judge
    from specengine.plan import JudgeConfig, JudgeSpec

    rubric = JudgeSpec("closed_qa", criteria=criteria, samples=samples) if spec else None
    check = Check(matcher="judge", argument="closed_qa", name="c", source=Source("s.yaml", 3), is_judge=True,
                  judge=rubric, threshold=Threshold("gte", 0.5))  # fmt: skip
    case = Case(
        id="s.yaml::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=1, endpoint="agent",
        steps=(Step("send", "hi", (check,)),), variables={"input": {}}, goal="a refund",
    )  # fmt: skip
    record = TurnRecord(1, "hi", TURN, 0)
    return asyncio.run(grade_judge(case, check, record, [record], False, judge, JudgeConfig(model=model)))


YES = {"score": 1.0, "choice": "Y", "rationale": "fine", "usage": {"total_tokens": 3}}


@pytest.mark.parametrize(
    ("judge", "model", "spec"),
    [
        (None, "m", True),
        (_ScriptedJudge(YES), None, True),
        (_ScriptedJudge(YES), "", True),
        (_ScriptedJudge(YES), "m", False),
    ],
)
def test_a_judge_check_without_a_judge_is_skipped(judge, model, spec):
    result = _judged(judge, model=model, spec=spec)
    assert (result.status, result.score, result.skip_code) == ("skipped", None, "no_judge")


def test_a_judge_check_asks_once_per_sample_and_sums_their_tokens():
    judge = _ScriptedJudge(YES, {**YES, "score": 0.0, "choice": "N"}, YES)
    result = _judged(judge, samples=3)
    assert [sample for _, sample in judge.asked] == [1, 2, 3]
    request = judge.asked[0][0]
    assert (request.question, request.reply, request.criteria, request.goal) == (
        "hi",
        TURN.reply,
        "Polite?",
        None,
    )
    assert (result.status, result.score, result.usage, result.uncertain, result.spread) == (
        "passed", 1.0, {"total_tokens": 9}, True, 1.0,
    )  # fmt: skip
    assert result.reason == "closed_qa score 1.00 (choice Y in 2 of 3 samples: Y, N, Y)"


@pytest.mark.parametrize(
    ("verdicts", "samples", "reason"),
    [
        ([{"score": None, "error": "boom"}], 1, "boom"),
        ([{"score": None}], 1, "the judge gave no score"),
        ([YES, {"score": 1.0, "error": "late"}], 2, "sample 2 of 2: late"),  # an error, even with a score
    ],
)
def test_a_judge_check_with_a_sample_it_could_not_score_is_an_error(verdicts, samples, reason):
    result = _judged(_ScriptedJudge(*verdicts), samples=samples)
    assert (result.status, result.score, result.reason, result.judge) == (
        "error",
        None,
        reason,
        {"model": "m"},
    )
    assert result.usage == ({"total_tokens": 3} if samples > 1 else None)  # the tokens spent are kept


def test_a_judge_rubric_that_cannot_render_is_an_error_located_in_the_spec():
    result = _judged(_ScriptedJudge(YES), criteria="{{ input.city")
    assert result.as_dict() == _record(
        matcher="judge", status="error", score=None, threshold={"gte": 0.5},
        reason="s.yaml:3: template syntax error: unexpected end of template,"
        " expected 'end of print statement'.",
    )  # fmt: skip


@pytest.mark.parametrize(("samples", "spread"), [(1, None), (2, 0.0)])
def test_only_a_check_with_several_samples_records_their_spread(samples, spread):
    result = _judged(_ScriptedJudge(YES, YES), samples=samples)
    assert (result.spread, result.uncertain) == (spread, None if spread is None else False)


# ---------------------------------------------------------------------------------------------------
# A trial's checks, step by step


def _case_of_steps(*steps: Step) -> Case:
    return Case(id="s.yaml::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=1, endpoint="agent",
                steps=steps, variables={})  # fmt: skip


def _check_of(argument: str) -> Check:
    return Check(matcher="includes", argument=argument, name=argument, source=Source("s.yaml", 3), named=True)


def test_a_trial_that_errored_grades_none_of_its_checks():
    import asyncio

    from specengine.grade.grader import grade_run
    from specengine.plan import JudgeConfig
    from specengine.transcript import TrialRun

    soft = Check(
        matcher="includes", argument="Sunny", name="c", source=Source("s.yaml", 3), named=True, gate=False
    )
    case = _case_of_steps(Step("send", "hi", (soft,)))
    run = TrialRun((TurnRecord(1, "hi", TURN, 0),), {"type": "ConnectError", "message": "refused"}, 1, ())
    trial = asyncio.run(grade_run(case, run, False, None, JudgeConfig()))
    assert trial.status == "error"
    assert [check.as_dict() for check in trial.checks] == [
        _record(gate=False, status="skipped", score=None, reason="not run: the trial ended in an error",
                skip_code="trial_error")
    ]  # fmt: skip


def test_a_simulated_part_that_sent_nothing_leaves_its_checks_unrun():
    import asyncio

    from specengine.grade.grader import grade_trial
    from specengine.plan import JudgeConfig

    case = _case_of_steps(
        Step("simulate", "", (_check_of("Sunny"),)), Step("send", "bye", (_check_of("Paris"),))
    )
    check, _ = asyncio.run(grade_trial(case, [], None, False, None, JudgeConfig()))
    assert (check.status, check.reason, check.skip_code) == (
        "skipped", "not run: the simulated user sent no message", "turn_missing",
    )  # fmt: skip
    simulated = [TurnRecord(1, "hi", TURN, 0, step=0), TurnRecord(2, "hi", TURN, 0, step=0)]
    graded = asyncio.run(
        grade_trial(case, [*simulated, TurnRecord(3, "bye", TURN, 0)], None, False, None, JudgeConfig())
    )
    assert [(check.turn, check.status) for check in graded] == [(2, "passed"), (3, "passed")]  # its last turn


def test_each_check_reads_its_steps_turn_by_number():
    import asyncio

    from specengine.grade.grader import grade_trial
    from specengine.plan import JudgeConfig

    later = Check(matcher="includes", argument="Paris", name="Paris", source=Source("s.yaml", 3), named=True,
                  gate=False)  # fmt: skip
    case = _case_of_steps(Step("send", "hi", (_check_of("Sunny"),)), Step("send", "bye", (later,)))
    given = asyncio.run(grade_trial(case, [TurnRecord(3, "hi", TURN, 0)], None, False, None, JudgeConfig()))
    assert [(check.turn, check.status) for check in given] == [(3, "passed"), (4, "skipped")]
    assert (given[1].gate, given[1].skip_code) == (False, "turn_missing")
    assert given[1].reason == "not run: the transcript has no turn 4 (run the case again to send it)"
    none = asyncio.run(grade_trial(case, [], None, False, None, JudgeConfig()))
    assert [check.turn for check in none] == [1, 2]


def test_a_trial_adds_up_its_turns():
    from specengine.grade.grader import trial_result
    from specengine.transcript import SimulationEnd

    first = TurnRecord(
        1, "hi", Turn(reply="a", latency_s=0.5, usage={"prompt_tokens": 1, "completion_tokens": 2}), 0
    )
    usage = {"prompt_tokens": 3, "completion_tokens": 4}
    second = TurnRecord(2, "bye", Turn(reply="b", latency_s=0.25, ttft_s=0.125, usage=usage), 0)
    end = SimulationEnd(0, "goal_reached", 1, "u", "g", None)
    failed = _graded("includes", "Rainy")
    written = trial_result([first, second], None, [failed], 3, [end]).as_dict()
    assert {key: value for key, value in written.items() if key not in ("transcript", "checks")} == {
        "status": "failed",  # from its checks
        "latency_s": 0.75,  # the turns' together
        "error": None,
        "ttft_s": 0.125,  # the first turn that reported one
        "attempts": 3,
        "usage": {"input_tokens": 4, "output_tokens": 6, "total_tokens": 10},
        "simulations": [end.as_dict()],
    }
    assert [message["content"] for message in written["transcript"]] == ["hi", "a", "bye", "b"]
    assert written["checks"] == [failed.as_dict()]
