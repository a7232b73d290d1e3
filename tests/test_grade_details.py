"""`expected` and `got` of a check: worded when read, shown for every check that did not pass.

Tool matchers hand over how to word their calls instead of the text (match_result.Detail), because a
passing check rarely shows them; a check that passes its matcher can still fail (`not:`, a threshold
it cannot meet), and then the words must be there, the same as if they had been written at once.
"""

from __future__ import annotations

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
