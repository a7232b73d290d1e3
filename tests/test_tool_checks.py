"""Call counts (`called_tool` with `times`, `max_tool_calls`), trajectories (`tool_calls_in_order`
with `mode`) and `tokens_below`: passing, failing with the words of the reason, names, and the
token usage they read."""

from __future__ import annotations

import pytest
from support.shown import whole

from specengine.grade.call_count import CallCount, call_count, count_problem
from specengine.grade.match_result import MatchInput, MatchResult
from specengine.grade.matchers import default_name, match
from specengine.transcript import ToolCall, Turn
from specengine.usage import TokenUsage, read_usage, total_usage

FIND = ToolCall("find_order", {"item": "headphones"})
REFUND = ToolCall("refund", {"order_id": "ORD-1", "amount": 59.97})
NOTIFY = ToolCall("notify", {"channel": "email"})


def calls(*made: ToolCall, earlier: tuple[Turn, ...] = ()) -> MatchInput:
    turn = Turn(reply="", tool_calls=made)
    return MatchInput(text="", turn=turn, turns=(*earlier, turn))


def run(matcher: str, argument, data: MatchInput, **options) -> MatchResult:
    return match(matcher, argument, data, options)


# ---------------------------------------------------------------------------------------------------
# called_tool with times


@pytest.mark.parametrize(
    ("times", "count", "allowed"),
    [
        (2, CallCount(2, 2), [2]),
        ({"gte": 1, "lte": 3}, CallCount(1, 3), [1, 2, 3]),
        ({"gte": 2}, CallCount(2, None), list(range(2, 10))),
        ({"lte": 2}, CallCount(1, 2), [1, 2]),  # called_tool: never fewer than one call
        ({"gt": 1, "lt": 4}, CallCount(2, 3), [2, 3]),
        (0, CallCount(1, 0), []),
        (2.0, CallCount(2, 2), [2]),  # a whole number written as a float
        ({"gte": 2, "gt": 1, "lte": 5, "lt": 4}, CallCount(2, 3), [2, 3]),  # every key at once
        ({"gte": 0, "gt": -1}, CallCount(1, None), list(range(1, 10))),
    ],
)
def test_a_call_count_is_a_number_or_a_range(times, count, allowed):
    assert call_count(times) == count
    assert [n for n in range(10) if count.allows(n)] == allowed


@pytest.mark.parametrize("times", ["two", {"most": 2}, {}, {"gte": 1.5}, True, None])
def test_what_is_not_a_call_count(times):
    assert call_count(times) is None


@pytest.mark.parametrize(
    ("times", "words"),
    [
        (1, "1 time"),
        (2, "2 times"),
        ({"gte": 1, "lte": 3}, "at most 3 times"),
        ({"gte": 2, "lte": 3}, "2 to 3 times"),
        ({"gte": 2}, "at least 2 times"),
    ],
)
def test_a_call_count_in_words(times, words):
    assert str(call_count(times)) == words


def test_a_range_no_count_fits_is_refused_in_words():
    assert (
        count_problem({"gte": 3, "lte": 1})
        == "times: no number of calls fits this range (at least 3, at most 1)"
    )
    assert count_problem(0) == (
        "times: this allows no call at all: to require that the tool is not called, write not_called_tool"
    )
    assert count_problem({"lt": 1}) == count_problem(0)
    assert count_problem({"gte": 1, "lte": 3}) is None


def test_called_tool_times():
    twice = calls(FIND, REFUND, FIND)
    assert run("called_tool", "find_order", twice, times=2).passed
    assert run("called_tool", "find_order", twice, times={"gte": 1, "lte": 3}).passed
    once = run("called_tool", "find_order", twice, times=1)
    assert not once.passed
    assert once.reason == (
        'find_order was called 2 times, expected 1 time: find_order({"item": "headphones"}),'
        ' find_order({"item": "headphones"})'
    )
    assert once.expected == "find_order 1 time"
    assert (
        once.got
        == 'find_order({"item": "headphones"}), refund({"order_id": "ORD-1", "amount": 59.97}),'
        + (' find_order({"item": "headphones"})')
    )
    never = run("called_tool", "notify", twice, times={"lte": 3})
    assert never.reason.startswith("notify was not called; calls made: find_order(")


@pytest.mark.parametrize(
    ("argument", "made", "shown"),
    [
        (
            {"name": "f", "args": {"a": {"$gte": "x"}, "b": {"$lte": "y"}}},
            (FIND,),
            (
                0.0,
                True,
                'args.a: $gte takes a number, not "x"; args.b: $lte takes a number, not "y"',
                'f({"a": {"$gte": "x"}, "b": {"$lte": "y"}})',
                None,
            ),
        ),
        (
            {"name": "refund", "args": {"amount": 1}, "exact": True},
            (FIND, REFUND),  # each difference, then the arguments not named, then the calls made
            (
                0.0,
                False,
                "args.amount: expected 1, got 59.97\n"
                'args.order_id: not expected (exact: true allows only the arguments named), got "ORD-1"\n'
                'calls made: find_order({"item": "headphones"}),'
                ' refund({"order_id": "ORD-1", "amount": 59.97})',
                'refund({"amount": 1})',
                'find_order({"item": "headphones"}), refund({"order_id": "ORD-1", "amount": 59.97})',
            ),
        ),
    ],
)
def test_what_a_call_check_shows(argument, made, shown):
    assert whole(run("called_tool_with", argument, calls(*made))) == shown


def test_called_tool_times_counts_the_conversation_in_scope():
    earlier = Turn(reply="", tool_calls=(REFUND,))
    assert run("called_tool", "refund", calls(REFUND, earlier=(earlier,)), times=2).passed
    assert not run("called_tool", "refund", calls(REFUND), times=2).passed


def test_called_tool_without_times_is_unchanged():
    assert run("called_tool", "refund", calls(REFUND, REFUND)).reason == "refund was called 2 times"


def test_a_times_value_that_is_no_count_is_an_error():
    result = run("called_tool", "refund", calls(REFUND), times="often")
    assert result.error
    assert result.reason == 'times needs a number of calls or a range such as {gte: 1, lte: 3}, not "often"'


# ---------------------------------------------------------------------------------------------------
# max_tool_calls


def test_max_tool_calls():
    assert run("max_tool_calls", 2, calls(FIND, REFUND)).passed
    assert run("max_tool_calls", 0, calls()).passed
    over = run("max_tool_calls", 1, calls(FIND, REFUND))
    assert over.reason == (
        'the turn made 2 tool calls, the limit is 1: find_order({"item": "headphones"}),'
        ' refund({"order_id": "ORD-1", "amount": 59.97})'
    )
    assert (over.expected, over.got) == ("at most 1 tool call", "2 tool calls")
    earlier = Turn(reply="", tool_calls=(NOTIFY,))
    widened = run("max_tool_calls", 2, calls(FIND, REFUND, earlier=(earlier,)))
    assert widened.reason.startswith("the 2 turns made 3 tool calls, the limit is 2")
    assert run("max_tool_calls", "lots", calls()).error


# ---------------------------------------------------------------------------------------------------
# tool_calls_in_order and its modes

IN_ORDER = (FIND, NOTIFY, REFUND)


@pytest.mark.parametrize(
    ("argument", "mode", "made"),
    [
        (["find_order", "refund"], "in_order", IN_ORDER),  # others may come between
        (["find_order", "notify", "refund"], "exact", IN_ORDER),
        (["refund", "notify", "find_order"], "any_order", IN_ORDER),
        (["refund", "find_order", "notify", "notify"], "subset", IN_ORDER),  # not every listed call happens
        (["refund"], "subset", ()),  # no call at all is a subset
        (["find_order", {"name": "refund", "args": {"amount": {"$approx": 59.97}}}], "exact", (FIND, REFUND)),
        (
            [{"name": "refund", "args": {"order_id": {"$matches": "^ORD-"}}, "exact": False}],
            "in_order",
            IN_ORDER,
        ),
    ],
)
def test_a_trajectory_passes(argument, mode, made):
    result = run("tool_calls_in_order", argument, calls(*made), mode=mode)
    assert result.passed, result.reason


@pytest.mark.parametrize(
    ("argument", "mode", "made", "reason"),
    [
        (
            ["refund", "find_order"],
            "in_order",
            IN_ORDER,
            "find_order was not called after refund; the actual order was: find_order → notify → refund",
        ),
        (
            ["find_order", "refund"],
            "exact",
            IN_ORDER,
            "call 2 was notify, expected refund; the actual order was: find_order → notify → refund",
        ),
        (
            ["find_order", "notify"],
            "exact",
            IN_ORDER,
            '1 call more than listed: refund({"order_id": "ORD-1", "amount": 59.97});'
            " the actual order was: find_order → notify → refund",
        ),
        (
            ["find_order", "notify", "refund", "notify"],
            "exact",
            IN_ORDER,
            "expected 4 calls, got 3: notify not called; the actual order was: find_order → notify → refund",
        ),
        (
            ["refund", "find_order"],
            "any_order",
            IN_ORDER,
            'not in the list: notify({"channel": "email"});'
            " the actual order was: find_order → notify → refund",
        ),
        (
            ["refund", "refund", "find_order", "notify"],
            "any_order",
            IN_ORDER,
            "no call fits refund; the actual order was: find_order → notify → refund",
        ),
        (
            ["find_order", "refund"],
            "subset",
            IN_ORDER,
            'not in the list: notify({"channel": "email"});'
            " the actual order was: find_order → notify → refund",
        ),
        (
            ["refund"],
            "subset",
            (REFUND, REFUND),
            'more calls than listed, or with other arguments: refund({"order_id": "ORD-1", "amount": 59.97});'
            " the actual order was: refund → refund",
        ),
        (
            [{"name": "refund", "args": {"amount": {"$lt": 50}}}],
            "in_order",
            IN_ORDER,
            "no call of refund has the arguments asked for (args.amount: expected < 50, got 59.97);"
            " the actual order was: find_order → notify → refund",
        ),
        (
            ["find_order", {"name": "refund", "args": {"amount": {"$approx": 19.99, "$within": 0.01}}}],
            "exact",
            IN_ORDER[::2],
            "call 2 (refund): args.amount: expected ≈ 19.99 (± 0.01), got 59.97;"
            " the actual order was: find_order → refund",
        ),
        (
            [{"name": "refund", "args": {"amount": 1}}],
            "any_order",
            (REFUND,),
            'no call fits refund({"amount": 1}) (args.amount: expected 1, got 59.97);'
            " more calls than listed, or with other arguments:"
            ' refund({"order_id": "ORD-1", "amount": 59.97});'
            " the actual order was: refund",
        ),
    ],
)
def test_a_trajectory_fails_and_says_where(argument, mode, made, reason):
    result = run("tool_calls_in_order", argument, calls(*made), mode=mode)
    assert not result.passed and not result.error
    assert result.reason == reason


def test_a_trajectory_shows_expected_and_the_actual_order():
    result = run("tool_calls_in_order", ["refund", "find_order"], calls(*IN_ORDER), mode="any_order")
    assert (result.expected, result.got) == (
        "refund, find_order (any order)",
        "find_order → notify → refund",
    )
    assert run("tool_calls_in_order", ["a", "b"], calls(), mode="exact").expected == "a → b (exact)"


@pytest.mark.parametrize(
    ("argument", "mode", "words"),
    [
        (["a"], "sometimes", "tool_calls_in_order: unknown mode 'sometimes'"),
        ([{"args": {}}], "in_order", "tool_calls_in_order needs a list of tool names or {name, args} calls"),
        ([{"name": "a", "args": {"n": {"$gte": "x"}}}], "in_order", 'args.n: $gte takes a number, not "x"'),
        (
            [["find_order"]],
            "in_order",
            "tool_calls_in_order needs a list of tool names or {name, args} calls",
        ),
        ([True], "in_order", "tool_calls_in_order needs a list of tool names or {name, args} calls"),
    ],
)
def test_a_trajectory_that_cannot_be_checked_is_an_error(argument, mode, words):
    result = run("tool_calls_in_order", argument, calls(FIND), mode=mode)
    assert result.error
    assert result.reason.startswith(words)


# ---------------------------------------------------------------------------------------------------
# tokens_below and the usage it reads


def test_usage_is_read_from_every_protocol_s_field_names():
    chat = read_usage({"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42})
    responses = read_usage({"input_tokens": 12, "output_tokens": 30, "total_tokens": 42})
    assert chat == responses == TokenUsage(12, 30, 42)
    assert read_usage({"prompt_tokens": 5, "completion_tokens": 7}) == TokenUsage(5, 7, 12)  # no total
    assert read_usage({"total_tokens": 9}) == TokenUsage(None, None, 9)
    assert read_usage({"input_tokens_details": {"cached_tokens": 3}}) is None  # no count: nothing
    assert read_usage({"prompt_tokens": -1, "completion_tokens": True}) is None
    assert read_usage(None) is None
    assert read_usage("12") is None


def test_usage_adds_up_and_prints_for_people():
    assert total_usage([TokenUsage(1, 2, 3), None, TokenUsage(None, 5, 5)]) == TokenUsage(1, 7, 8)
    assert total_usage([None, None]) is None
    assert str(TokenUsage(1000, 234, 1234)) == "1,234 tokens (1,000 in, 234 out)"
    assert str(TokenUsage(None, None, 9)) == "9 tokens"
    assert TokenUsage(None, 5, 5).as_dict() == {"output_tokens": 5, "total_tokens": 5}


def spent(prompt: int, completion: int) -> Turn:
    return Turn(reply="", usage={"prompt_tokens": prompt, "completion_tokens": completion})


def test_tokens_below():
    turn = spent(40, 50)
    data = MatchInput(text="", turn=turn, turns=(turn,))
    assert run("tokens_below", 100, data).passed
    over = run("tokens_below", 90, data)
    assert over.reason == "the turn used 90 tokens (40 in, 50 out), the limit is 90"
    assert (over.expected, over.got) == ("< 90 tokens", "90 tokens (40 in, 50 out)")


def test_tokens_below_over_a_conversation_sums_its_turns():
    first, last = spent(10, 20), spent(30, 40)
    result = run("tokens_below", 50, MatchInput(text="", turn=last, turns=(first, last)))
    assert result.reason == "the 2 turns used 100 tokens (40 in, 60 out), the limit is 50"


def test_tokens_below_without_reported_usage_is_an_error_never_a_guess():
    silent = Turn(reply="a long reply " * 50)
    result = run("tokens_below", 10, MatchInput(text="", turn=silent, turns=(silent,)))
    assert result.error
    assert result.reason == (
        "the endpoint reported no token usage for this turn, so tokens_below cannot be checked"
        " (usage is recorded only when the server reports it)"
    )
    partly = run("tokens_below", 10, MatchInput(text="", turn=silent, turns=(spent(1, 1), silent)))
    assert partly.error and "for 1 of the 2 turns" in partly.reason


def turns(*made: Turn) -> MatchInput:
    return MatchInput(text="", turn=made[-1], turns=made)


@pytest.mark.parametrize(
    ("matcher", "argument", "data", "shown"),
    [
        (
            "succeeded",
            None,
            turns(Turn(reply="hi")),
            (1.0, False, "the turn completed without an error", "no error", "no error"),
        ),
        (
            "succeeded",
            None,
            turns(Turn(reply="", error="response.failed: " + "x" * 300)),
            (
                0.0,
                False,
                "the endpoint reported an error: response.failed: " + "x" * 300,
                "no error",
                "response.failed: " + "x" * 182 + "…",
            ),
        ),
        (
            "latency_below",
            2,
            turns(Turn(reply="", latency_s=1.5)),
            (1.0, False, "the turn took 1.50 s, under 2 s", "< 2 s", "1.5 s"),
        ),
        (
            "latency_below",
            "2.5",
            turns(Turn(reply="", latency_s=2.5)),
            (0.0, False, "the turn took 2.50 s, the limit is 2.5 s", "< 2.5 s", "2.5 s"),
        ),
        (
            "latency_below",
            2,
            turns(Turn(reply="", latency_s=0.5), Turn(reply="", latency_s=1.25)),
            (1.0, False, "the 2 turns took 1.75 s, under 2 s", "< 2 s", "1.75 s"),
        ),
        (
            "latency_below",
            "soon",
            turns(Turn(reply="")),
            (0.0, True, 'latency_below needs a number of seconds, not "soon"', None, None),
        ),
        (
            "tokens_below",
            100,
            turns(spent(40, 50)),
            (
                1.0,
                False,
                "the turn used 90 tokens (40 in, 50 out), under 100",
                "< 100 tokens",
                "90 tokens (40 in, 50 out)",
            ),
        ),
        (
            "tokens_below",
            90,
            turns(spent(40, 50)),
            (
                0.0,
                False,
                "the turn used 90 tokens (40 in, 50 out), the limit is 90",
                "< 90 tokens",
                "90 tokens (40 in, 50 out)",
            ),
        ),
        (
            "tokens_below",
            0,
            turns(spent(40, 50)),
            (0.0, True, "tokens_below needs a number of tokens, not 0", None, None),
        ),
        (
            "tokens_below",
            "many",
            turns(spent(40, 50)),
            (0.0, True, 'tokens_below needs a number of tokens, not "many"', None, None),
        ),
        (
            "tokens_below",
            10,
            turns(Turn(reply="")),
            (
                0.0,
                True,
                "the endpoint reported no token usage for this turn, so tokens_below cannot be checked"
                " (usage is recorded only when the server reports it)",
                "< 10 tokens",
                None,
            ),
        ),
        (
            "tokens_below",
            10,
            turns(spent(1, 1), Turn(reply=""), Turn(reply="")),
            (
                0.0,
                True,
                "the endpoint reported no token usage for 2 of the 3 turns, so tokens_below cannot be"
                " checked (usage is recorded only when the server reports it)",
                "< 10 tokens",
                None,
            ),
        ),
        (
            "tokens_below",
            200,
            turns(spent(10, 20), spent(30, 40)),
            (
                1.0,
                False,
                "the 2 turns used 100 tokens (40 in, 60 out), under 200",
                "< 200 tokens",
                "100 tokens (40 in, 60 out)",
            ),
        ),
        (
            "tokens_below",
            1e21,
            turns(Turn(reply="", usage={"total_tokens": 7})),
            (1.0, False, "the turn used 7 tokens, under 1e+21", "< 1e+21 tokens", "7 tokens"),
        ),
        (
            "tokens_below",
            1,
            MatchInput(text="", turn=Turn(reply=""), turns=()),  # no turn in scope: nothing used
            (1.0, False, "the turn used 0 tokens, under 1", "< 1 tokens", "0 tokens"),
        ),
    ],
)
def test_what_a_turn_check_shows(matcher, argument, data, shown):
    assert whole(run(matcher, argument, data)) == shown


@pytest.mark.parametrize(
    ("argument", "mode", "made", "shown"),
    [
        (
            ["find_order", "refund"],
            "in_order",
            IN_ORDER,
            (
                1.0,
                False,
                "the tools were called in the order find_order → refund",
                "find_order → refund",
                "find_order → notify → refund",
            ),
        ),
        (
            ["find_order", "notify", "refund"],
            "exact",
            IN_ORDER,
            (
                1.0,
                False,
                "the calls were exactly find_order → notify → refund (exact)",
                "find_order → notify → refund (exact)",
                "find_order → notify → refund",
            ),
        ),
        (
            ["refund", "notify", "find_order"],
            "any_order",
            IN_ORDER,
            (
                1.0,
                False,
                "the calls were exactly refund, notify, find_order (any order)",
                "refund, notify, find_order (any order)",
                "find_order → notify → refund",
            ),
        ),
        (
            ["refund", "find_order", "notify", "notify"],
            "subset",
            IN_ORDER,
            (
                1.0,
                False,
                "every call was one of refund, find_order, notify, notify (subset)",
                "refund, find_order, notify, notify (subset)",
                "find_order → notify → refund",
            ),
        ),
        (
            ["refund"],
            "subset",
            (),
            (1.0, False, "every call was one of refund (subset)", "refund (subset)", "no tool calls"),
        ),
        (
            ["refund", "find_order"],
            "in_order",
            IN_ORDER,
            (
                0.0,
                False,
                "find_order was not called after refund; the actual order was: find_order → notify → refund",
                "refund → find_order",
                "find_order → notify → refund",
            ),
        ),
        (
            ["refund", "pay"],
            "in_order",
            IN_ORDER,
            (
                0.0,
                False,
                "pay was not called; the actual order was: find_order → notify → refund",
                "refund → pay",
                "find_order → notify → refund",
            ),
        ),
        (
            ["notify", "find_order"],
            "in_order",
            (FIND, NOTIFY),
            (
                0.0,
                False,
                "find_order was not called after notify; the actual order was: find_order → notify",
                "notify → find_order",
                "find_order → notify",
            ),
        ),
        (
            [{"name": "refund", "args": {"amount": {"$lt": 50}}}],
            "in_order",
            IN_ORDER,
            (
                0.0,
                False,
                "no call of refund has the arguments asked for (args.amount: expected < 50, got 59.97);"
                " the actual order was: find_order → notify → refund",
                'refund({"amount": {"$lt": 50}})',
                "find_order → notify → refund",
            ),
        ),
        (
            [{"name": "find_order", "args": {"item": "cable"}}, "refund"],
            "in_order",
            IN_ORDER,
            (
                0.0,
                False,
                'no call of find_order has the arguments asked for (args.item: expected "cable", got'
                ' "headphones"); the actual order was: find_order → notify → refund',
                'find_order({"item": "cable"}) → refund',
                "find_order → notify → refund",
            ),
        ),
        (
            ["find_order", {"name": "notify", "args": {"channel": "sms"}}],
            "in_order",
            (NOTIFY, FIND, NOTIFY),
            (
                0.0,
                False,
                "no call of notify after find_order has the arguments asked for (args.channel: expected"
                ' "sms", got "email"); the actual order was: notify → find_order → notify',
                'find_order → notify({"channel": "sms"})',
                "notify → find_order → notify",
            ),
        ),
        (
            ["refund"],
            "any_order",
            (REFUND, REFUND),
            (
                0.0,
                False,
                'more calls than listed, or with other arguments: refund({"order_id": "ORD-1", "amount":'
                " 59.97}); the actual order was: refund → refund",
                "refund (any order)",
                "refund → refund",
            ),
        ),
        (
            [{"name": "refund", "args": {"amount": 1}}, "find_order"],
            "any_order",
            (FIND,),
            (
                0.0,
                False,
                'no call fits refund({"amount": 1}); the actual order was: find_order',
                'refund({"amount": 1}), find_order (any order)',
                "find_order",
            ),
        ),
        (
            ["notify", "refund"],
            "exact",
            (NOTIFY, REFUND, FIND, FIND),
            (
                0.0,
                False,
                '2 calls more than listed: find_order({"item": "headphones"}), find_order({"item":'
                ' "headphones"}); the actual order was: notify → refund → find_order → find_order',
                "notify → refund (exact)",
                "notify → refund → find_order → find_order",
            ),
        ),
        (
            ["a"],
            "sometimes",
            IN_ORDER,
            (
                0.0,
                True,
                "tool_calls_in_order: unknown mode 'sometimes' (use one of in_order, exact, any_order,"
                " subset)",
                None,
                None,
            ),
        ),
        (
            [],
            "in_order",
            IN_ORDER,
            (0.0, True, "tool_calls_in_order needs a list of tool names or {name, args} calls", None, None),
        ),
        (
            None,
            "in_order",
            IN_ORDER,
            (0.0, True, "tool_calls_in_order needs a list of tool names or {name, args} calls", None, None),
        ),
        (
            "find_order",
            "in_order",
            IN_ORDER,
            (
                1.0,
                False,
                "the tools were called in the order find_order",
                "find_order",
                "find_order → notify → refund",
            ),
        ),
        (
            [{"name": "a", "args": {"n": {"$gte": "x"}}}, {"name": "b", "args": {"n": {"$lte": "y"}}}],
            "in_order",
            IN_ORDER,
            (
                0.0,
                True,
                'args.n: $gte takes a number, not "x"; args.n: $lte takes a number, not "y"',
                None,
                None,
            ),
        ),
        (
            [{"name": "find_order", "exact": True}],
            "in_order",
            (FIND,),
            (
                0.0,
                False,
                "no call of find_order has the arguments asked for (args.item: not expected (exact: true"
                ' allows only the arguments named), got "headphones"); the actual order was: find_order',
                "find_order(exactly no arguments)",
                "find_order",
            ),
        ),
        (
            [{"name": "refund", "args": {"amount": 1, "order_id": "X"}}],
            "exact",
            (REFUND,),  # every difference of the call, one after the other
            (
                0.0,
                False,
                "call 1 (refund): args.amount: expected 1, got 59.97;"
                ' args.order_id: expected "X", got "ORD-1"; the actual order was: refund',
                'refund({"amount": 1, "order_id": "X"}) (exact)',
                "refund",
            ),
        ),
        (
            [{"name": "refund", "args": {"amount": 1, "order_id": "X"}}],
            "in_order",
            (REFUND,),
            (
                0.0,
                False,
                "no call of refund has the arguments asked for (args.amount: expected 1, got 59.97;"
                ' args.order_id: expected "X", got "ORD-1"); the actual order was: refund',
                'refund({"amount": 1, "order_id": "X"})',
                "refund",
            ),
        ),
        (
            ["find_order", "notify", "refund"],
            "exact",
            (FIND,),
            (
                0.0,
                False,
                "expected 3 calls, got 1: notify, refund not called; the actual order was: find_order",
                "find_order → notify → refund (exact)",
                "find_order",
            ),
        ),
        (
            ["refund"],
            "subset",
            (REFUND, REFUND, NOTIFY),
            (
                0.0,
                False,
                'not in the list: notify({"channel": "email"});'
                " more calls than listed, or with other arguments:"
                ' refund({"order_id": "ORD-1", "amount": 59.97});'
                " the actual order was: refund → refund → notify",
                "refund (subset)",
                "refund → refund → notify",
            ),
        ),
    ],
)
def test_what_a_trajectory_check_shows(argument, mode, made, shown):
    assert whole(run("tool_calls_in_order", argument, calls(*made), mode=mode)) == shown


# ---------------------------------------------------------------------------------------------------
# Names


@pytest.mark.parametrize(
    ("matcher", "argument", "options", "name"),
    [
        ("called_tool", "refund", {"times": 2}, "called_tool refund 2 times"),
        ("called_tool", "refund", {"times": {"gte": 1, "lte": 3}}, "called_tool refund at most 3 times"),
        (
            "tool_calls_in_order",
            ["a", {"name": "b", "args": {}}],
            {"mode": "exact"},
            "tool_calls_in_order a → b (exact)",
        ),
        ("tool_calls_in_order", ["a", "b"], {"mode": "any_order"}, "tool_calls_in_order a, b (any order)"),
        ("tool_calls_in_order", ["a", "b"], {}, "tool_calls_in_order a → b"),
        ("max_tool_calls", 3, {}, "max_tool_calls 3"),
        ("tokens_below", 2000, {}, "tokens_below 2000"),
    ],
)
def test_default_names(matcher, argument, options, name):
    assert default_name(matcher, argument, options) == name
