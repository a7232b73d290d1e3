"""The deterministic matchers: every matcher passing and failing, the words of its reasons, and the
deep-contain rules that `called_tool_with` relies on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.shown import whole

from specengine.grade.deep_contains import deep_contains, scalars_equal
from specengine.grade.match_result import MatchInput, MatchResult, number_text, quote
from specengine.grade.matchers import _scalar_name, default_name, match
from specengine.transcript import ToolCall, Turn


def data(reply: str = "", *turns: Turn, calls: tuple[ToolCall, ...] = (), **turn_fields) -> MatchInput:
    """A MatchInput for one turn; extra turns widen the scope (scope: conversation)."""
    turn = Turn(reply=reply, tool_calls=calls, **turn_fields)
    return MatchInput(text=reply, turn=turn, turns=(*turns, turn))


def run(matcher: str, argument, reply: str = "", **kwargs) -> MatchResult:
    return match(matcher, argument, data(reply, **kwargs))


WEATHER = ToolCall("get_weather", {"city": "paris", "units": "metric"})
BOOKING = ToolCall("book_table", {"people": 2})


# ---------------------------------------------------------------------------------------------------
# match(): faults become error results


def test_unknown_matcher_is_an_error_result_not_an_exception():
    result = run("smells_nice", None, "x")
    assert result.score == 0.0
    assert result.error
    assert "unknown matcher 'smells_nice'" in result.reason


def test_the_judge_is_not_a_deterministic_matcher():
    result = run("judge", "closed_qa", "x")
    assert result.error
    assert "unknown matcher 'judge'" in result.reason


def test_a_matcher_fault_becomes_an_error_result():
    broken = MatchInput(text=None, turn=Turn(reply=""), turns=())  # type: ignore[arg-type]
    result = match("includes", "x", broken)
    assert result.score == 0.0
    assert result.error
    assert result.reason.startswith("includes could not run: TypeError")


def test_module_import_stays_light():
    heavy = ("jsonschema", "jinja2", "httpx", "deepdiff")
    code = f"import sys, specengine.grade.matchers; print([m for m in {heavy!r} if m in sys.modules])"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------------
# Every matcher: passing, failing, and the words of its reasons


SCHEMA = {
    "type": "object",
    "required": ["temp", "city"],
    "properties": {"temp": {"type": "number"}, "city": {"type": "string"}},
}
PARIS = {"name": "get_weather", "args": {"city": "Paris"}}
IN_ORDER = (ToolCall("search"), ToolCall("get_weather"), ToolCall("log"), ToolCall("book_table"))
BOOK_THEN_WEATHER = (ToolCall("book_table"), ToolCall("get_weather"))
INVALID_JSON_NOTE = "arguments were not valid JSON (Expecting value): '{city: Paris'"


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "turn"),
    [
        ("succeeded", None, "hello", {}),
        ("includes", "Sunny", "It is Sunny today", {}),
        ("includes", ["Paris", "Sunny"], "Paris is Sunny", {}),
        ("includes", 21, "It is 21 degrees", {}),  # numbers as text
        ("not_includes", ["sorry", "error"], "All good", {}),
        ("not_includes", "sorry", "Sorry", {}),  # case-sensitive
        ("equals", "Paris", "  Paris\n", {}),  # surrounding whitespace ignored
        ("equals", " Paris ", "Paris", {}),
        ("starts_with", "Hello", "Hello there", {}),
        ("starts_with", "Hello", "\n  Hello there", {}),  # leading whitespace ignored
        ("is_json", None, ' {"a": 1} ', {}),
        ("is_json", True, "[1, 2]", {}),
        ("is_json", SCHEMA, '{"temp": 21.5, "city": "Paris"}', {}),
        ("not_called_tool", "delete_account", "", {"calls": (WEATHER,)}),
        ("called_tool_with", {"name": "book_table"}, "", {"calls": (BOOKING,)}),  # no args: only the call
        ("called_tool_with", {"name": "book_table", "args": {"people": "2"}}, "", {"calls": (BOOKING,)}),
        ("tool_calls_in_order", ["get_weather", "book_table"], "", {"calls": IN_ORDER}),
        ("latency_below", 2, "", {"latency_s": 1.5}),
    ],
)
def test_passes(matcher, argument, reply, turn):
    result = run(matcher, argument, reply, **turn)
    assert result.score == 1.0
    assert result.passed
    assert not result.error


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "turn", "reason"),
    [
        # a passing check says what matched (shown when not: inverts it)
        ("includes", "Sunny", "Sunny", {}, 'the reply includes "Sunny"'),
        ("includes_any", ["rain", "Sunny"], "Sunny day", {}, 'the reply includes "Sunny"'),
        ("matches", "Sun+y", "It is Sunnny", {}, 'the reply matches /Sun+y/ at "Sunnny"'),
        ("called_tool", "get_weather", "", {"calls": (WEATHER, WEATHER)}, "get_weather was called 2 times"),
        (
            "called_tool_with",
            {"name": "get_weather", "args": {"city": "paris"}},
            "",
            {"calls": (BOOKING, WEATHER)},  # a subset of the call's arguments
            'get_weather was called with {"city": "paris", "units": "metric"}',
        ),
    ],
)
def test_passing_reasons(matcher, argument, reply, turn, reason):
    result = run(matcher, argument, reply, **turn)
    assert result.score == 1.0
    assert result.reason == reason


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "turn", "reason"),
    [
        (
            "succeeded",
            None,
            "",
            {"error": "response.failed: rate limited"},
            "the endpoint reported an error: response.failed: rate limited",
        ),
        ("includes", "Sunny", "It is raining", {}, 'the reply does not include "Sunny"'),
        (
            "includes",
            ["Paris", "Sunny", "warm"],
            "Paris is cloudy",
            {},  # only the missing texts are named
            'the reply does not include "Sunny", "warm" (2 of 3 texts missing)',
        ),
        ("includes_any", ["rain", "snow"], "Sunny day", {}, 'the reply includes none of "rain", "snow"'),
        (
            "not_includes",
            ["sorry", "error", "oops"],
            "sorry, an error",
            {},
            'the reply includes "sorry", "error"',
        ),
        ("equals", "Paris", "Paris, France", {}, 'the reply is not equal to "Paris"'),
        (
            "starts_with",
            "Hello",
            "Well, Hello",
            {},
            'the reply does not start with "Hello"; the text appears later in it',
        ),
        ("starts_with", " Hello", "Hello", {}, 'the reply does not start with " Hello"'),  # unless asked for
        ("matches", r"^\d+ degrees$", "warm", {}, r"the reply does not match /^\d+ degrees$/"),
        ("is_json", None, "", {}, "the reply is empty, so it is not JSON"),
        (
            "is_json",
            SCHEMA,
            '{"temp": "x", "city": "Paris"}',
            {},
            "the reply does not match the JSON Schema: $.temp: 'x' is not of type 'number'",
        ),
        (
            "called_tool",
            "get_weather",
            "",
            {"calls": (BOOKING,)},
            'get_weather was not called; calls made: book_table({"people": 2})',
        ),
        ("called_tool", "get_weather", "", {}, "get_weather was not called; no tools were called"),
        (
            "not_called_tool",
            "get_weather",
            "",
            {"calls": (WEATHER, BOOKING, ToolCall("get_weather"))},  # the calls, with their count
            "get_weather was called 2 times: "
            'get_weather({"city": "paris", "units": "metric"}), get_weather()',
        ),
        (
            "called_tool_with",
            PARIS,
            "",
            {"calls": (WEATHER, BOOKING)},  # where it differs, then the calls made
            'args.city: expected "Paris", got "paris"\n'
            'calls made: get_weather({"city": "paris", "units": "metric"}), book_table({"people": 2})',
        ),
        (
            "called_tool_with",
            PARIS,
            "",
            {"calls": (BOOKING,)},
            'get_weather was not called; calls made: book_table({"people": 2})',
        ),
        ("called_tool_with", PARIS, "", {}, "get_weather was not called; no tools were called"),
        (
            "tool_calls_in_order",
            ["get_weather", "book_table"],
            "",
            {"calls": BOOK_THEN_WEATHER},  # the actual order is shown
            "book_table was not called after get_weather; the actual order was: book_table → get_weather",
        ),
        ("latency_below", "2", "", {"latency_s": 2.5}, "the turn took 2.50 s, the limit is 2 s"),
    ],
)
def test_failing_reasons(matcher, argument, reply, turn, reason):
    result = run(matcher, argument, reply, **turn)
    assert result.score == 0.0
    assert not result.error
    assert result.reason == reason


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "turn", "words"),
    [
        ("includes", "Sunny", "it is sunny", {}, "different upper/lower case"),  # case-sensitive, and says so
        ("equals", "Paris", "paris", {}, "only in upper/lower case"),
        ("equals", "a b", "a\n b", {}, "only in spaces or line breaks"),
        ("equals", "Paris", "   ", {}, "the reply is empty"),
        ("starts_with", "Hello", "hello", {}, "different upper/lower case"),
        ("is_json", None, '```json\n{"a": 1}\n```', {}, "wrapped in a ``` code block"),
        ("is_json", None, "{'a': 1}", {}, "line 1 column 2"),
        ("is_json", SCHEMA, '{"temp": 1}', {}, "$: 'city' is a required property"),
        (
            "called_tool_with",
            PARIS,
            "",
            {"calls": (ToolCall("get_weather", {}, note=INVALID_JSON_NOTE),)},
            "args.city: missing (present: none)",
        ),
        (
            "called_tool_with",
            PARIS,
            "",
            {"calls": (ToolCall("get_weather", {}, note=INVALID_JSON_NOTE),)},
            INVALID_JSON_NOTE,
        ),
    ],
)
def test_failing_reasons_give_hints(matcher, argument, reply, turn, words):
    result = run(matcher, argument, reply, **turn)
    assert result.score == 0.0
    assert words in result.reason


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "turn"),
    [
        ("tool_calls_in_order", ["search", "search"], "", {"calls": IN_ORDER}),
        ("latency_below", 2, "", {"latency_s": 2.0}),  # strictly less
    ],
)
def test_fails(matcher, argument, reply, turn):
    result = run(matcher, argument, reply, **turn)
    assert result.score == 0.0
    assert not result.passed


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "words"),
    [
        ("matches", "Sun(ny", "Sunny", "invalid regular expression /Sun(ny/: missing )"),
        ("is_json", {"type": "nonsense"}, "{}", "the JSON Schema is not valid"),
        ("is_json", "yes please", "{}", "is_json takes no argument or a JSON Schema"),
        ("called_tool_with", "get_weather", "", "called_tool_with needs a mapping with name and args"),
        ("latency_below", "soon", "", "latency_below needs a number of seconds"),
    ],
)
def test_an_argument_that_cannot_be_evaluated_is_an_error(matcher, argument, reply, words):
    result = run(matcher, argument, reply)
    assert result.score == 0.0
    assert result.error
    assert result.reason.startswith(words)


# ---------------------------------------------------------------------------------------------------
# What is shown as expected and got


def test_expected_and_got():
    failed = run("includes", "Sunny", "It is raining")
    assert (failed.expected, failed.got) == ('"Sunny"', "It is raining")
    assert run("includes_any", ["rain", "snow"], "Sunny day").expected == 'any of "rain", "snow"'
    equals = run("equals", "Paris", "Paris, France")
    assert (equals.expected, equals.got) == ('"Paris"', '"Paris, France"')
    errored = run("succeeded", None, "", error="response.failed: rate limited")
    assert errored.got == "response.failed: rate limited"
    called = run("called_tool_with", PARIS, calls=(WEATHER, BOOKING))
    assert called.expected == 'get_weather({"city": "Paris"})'
    assert run("tool_calls_in_order", ["a"]).got == "no tool calls"


CASE_HINT = "; it does appear with different upper/lower case (the check is case-sensitive)"
NUMBERS = {"type": "array", "items": {"type": "string"}}
NOT_STRINGS = (
    "$[0]: 1 is not of type 'string'; $[1]: 2 is not of type 'string'; $[2]: 3 is not of type 'string'"
)


@pytest.mark.parametrize(
    ("matcher", "argument", "reply", "shown"),
    [
        (
            "includes",
            "Sunny",
            "It is Sunny",
            (1.0, False, 'the reply includes "Sunny"', '"Sunny"', "It is Sunny"),
        ),
        (
            "includes",
            ["Paris", "sunny"],
            "paris is Sunny",  # every missing text is there in another case: the hint
            (
                0.0,
                False,
                'the reply does not include "Paris", "sunny" (2 of 2 texts missing)' + CASE_HINT,
                '"Paris", "sunny"',
                "paris is Sunny",
            ),
        ),
        (
            "includes",
            ["Paris", "Sunny"],
            "Paris is cloudy",
            (
                0.0,
                False,
                'the reply does not include "Sunny" (1 of 2 texts missing)',
                '"Paris", "Sunny"',
                "Paris is cloudy",
            ),
        ),
        (
            "includes",
            ["Paris", "Rome"],
            "paris is sunny",  # one of them is not there in any case: no hint
            (
                0.0,
                False,
                'the reply does not include "Paris", "Rome" (2 of 2 texts missing)',
                '"Paris", "Rome"',
                "paris is sunny",
            ),
        ),
        (
            "includes_any",
            ["rain", "Sunny", "day"],
            "Sunny day",  # a passing check names what it found
            (1.0, False, 'the reply includes "Sunny", "day"', 'any of "rain", "Sunny", "day"', "Sunny day"),
        ),
        (
            "includes_any",
            "Sunny",
            "it is sunny",
            (0.0, False, 'the reply includes none of "Sunny"' + CASE_HINT, 'any of "Sunny"', "it is sunny"),
        ),
        (
            "includes_any",
            ["Sunny", "Day"],
            "sunny day",  # the case hint is for one text only
            (0.0, False, 'the reply includes none of "Sunny", "Day"', 'any of "Sunny", "Day"', "sunny day"),
        ),
        (
            "not_includes",
            ["sorry", "error"],
            "All good",
            (
                1.0,
                False,
                'the reply includes none of "sorry", "error"',
                'none of "sorry", "error"',
                "All good",
            ),
        ),
        (
            "not_includes",
            ["sorry", "error", "oops"],
            "sorry, an error",
            (
                0.0,
                False,
                'the reply includes "sorry", "error"',
                'none of "sorry", "error", "oops"',
                "sorry, an error",
            ),
        ),
        ("equals", "Paris", " Paris\n", (1.0, False, 'the reply equals "Paris"', '"Paris"', '"Paris"')),
        (
            "equals",
            "Paris",
            "paris",
            (
                0.0,
                False,
                'the reply is not equal to "Paris"; they differ only in upper/lower case',
                '"Paris"',
                '"paris"',
            ),
        ),
        (
            "equals",
            "a b",
            "a\n b",
            (
                0.0,
                False,
                'the reply is not equal to "a b"; they differ only in spaces or line breaks inside the text',
                '"a b"',
                '"a\\n b"',
            ),
        ),
        (
            "equals",
            "Paris",
            "  ",
            (0.0, False, 'the reply is not equal to "Paris"; the reply is empty', '"Paris"', '""'),
        ),
        (
            "equals",
            "P" * 90,
            "P" * 91,  # the reason shortens a long text; expected and got show up to 200 characters
            (
                0.0,
                False,
                'the reply is not equal to "' + "P" * 78 + "…",
                '"' + "P" * 90 + '"',
                '"' + "P" * 91 + '"',
            ),
        ),
        (
            "matches",
            "Sun+y",
            "It is Sunnny",
            (1.0, False, 'the reply matches /Sun+y/ at "Sunnny"', "/Sun+y/", "It is Sunnny"),
        ),
        ("matches", "rain", "Sunny", (0.0, False, "the reply does not match /rain/", "/rain/", "Sunny")),
        (
            "matches",
            "Sun(ny",
            "Sunny",
            (
                0.0,
                True,
                "invalid regular expression /Sun(ny/: missing ), unterminated subpattern at position 3",
                "/Sun(ny/",
                None,
            ),
        ),
        (
            "matches",
            "a" * 90,
            "b",
            (0.0, False, "the reply does not match /" + "a" * 78 + "…", "/" + "a" * 78 + "…", "b"),
        ),
        (
            "starts_with",
            "Hello",
            "\n Hello there",
            (1.0, False, 'the reply starts with "Hello"', '"Hello"', '"Hello there"'),
        ),
        (
            "starts_with",
            " Hello",
            " Hello there",  # a text that starts with a space keeps the reply's
            (1.0, False, 'the reply starts with " Hello"', '" Hello"', '" Hello there"'),
        ),
        (
            "starts_with",
            " Hello",
            "  Hello",
            (
                0.0,
                False,
                'the reply does not start with " Hello"; the text appears later in it',
                '" Hello"',
                '"  Hello"',
            ),
        ),
        (
            "starts_with",
            "Hello",
            "hello there",
            (
                0.0,
                False,
                'the reply does not start with "Hello"; it does with different upper/lower case',
                '"Hello"',
                '"hello there"',
            ),
        ),
        # got shows the reply's start: the text's length and 20 more characters, at least 40
        (
            "starts_with",
            "Bye",
            "H" * 41,
            (0.0, False, 'the reply does not start with "Bye"', '"Bye"', '"' + "H" * 39 + '…"'),
        ),
        (
            "starts_with",
            "Bye",
            "H" * 40,
            (0.0, False, 'the reply does not start with "Bye"', '"Bye"', '"' + "H" * 40 + '"'),
        ),
        (
            "starts_with",
            "B" * 30,
            "A" * 51,
            (
                0.0,
                False,
                'the reply does not start with "' + "B" * 30 + '"',
                '"' + "B" * 30 + '"',
                '"' + "A" * 49 + '…"',
            ),
        ),
        (
            "starts_with",
            "B" * 30,
            "A" * 50,
            (
                0.0,
                False,
                'the reply does not start with "' + "B" * 30 + '"',
                '"' + "B" * 30 + '"',
                '"' + "A" * 50 + '"',
            ),
        ),
        ("is_json", None, ' {"a": 1} ', (1.0, False, "the reply is valid JSON", "JSON", ' {"a": 1} ')),
        ("is_json", True, "[1, 2]", (1.0, False, "the reply is valid JSON", "JSON", "[1, 2]")),
        (
            "is_json",
            None,
            "{'a': 1}",
            (
                0.0,
                False,
                "the reply is not valid JSON: Expecting property name enclosed in double quotes"
                " at line 1 column 2",
                "JSON",
                "{'a': 1}",
            ),
        ),
        (
            "is_json",
            None,
            '  ```json\n{"a": 1}\n```',
            (
                0.0,
                False,
                "the reply is not valid JSON: Expecting value at line 1 column 3;"
                " it is wrapped in a ``` code block",
                "JSON",
                '  ```json\n{"a": 1}\n```',
            ),
        ),
        ("is_json", None, " \n", (0.0, False, "the reply is empty, so it is not JSON", "JSON", " \n")),
        (
            "is_json",
            "yes",
            "{}",
            (0.0, True, 'is_json takes no argument or a JSON Schema (a mapping), not "yes"', None, None),
        ),
        (
            "is_json",
            SCHEMA,
            '{"temp": 21.5, "city": "Paris"}',
            (
                1.0,
                False,
                "the reply is JSON that matches the schema",
                "JSON matching the schema",
                '{"temp": 21.5, "city": "Paris"}',
            ),
        ),
        (
            "is_json",
            {"type": "nonsense"},
            "{}",
            (
                0.0,
                True,
                "the JSON Schema is not valid: $.type: 'nonsense' is not valid under any of the given"
                " schemas",
                "a valid JSON Schema",
                None,
            ),
        ),
        (
            "is_json",
            {"type": "string", "format": "email"},
            '"nobody"',  # formats are checked
            (
                0.0,
                False,
                "the reply does not match the JSON Schema: $: 'nobody' is not a 'email'",
                "JSON matching the schema",
                '"nobody"',
            ),
        ),
        (
            "is_json",
            NUMBERS,
            "[1, 2, 3]",  # three errors are all shown
            (
                0.0,
                False,
                f"the reply does not match the JSON Schema: {NOT_STRINGS}",
                "JSON matching the schema",
                "[1, 2, 3]",
            ),
        ),
        (
            "is_json",
            NUMBERS,
            "[1, 2, 3, 4, 5]",
            (
                0.0,
                False,
                f"the reply does not match the JSON Schema: {NOT_STRINGS}; and 2 more",
                "JSON matching the schema",
                "[1, 2, 3, 4, 5]",
            ),
        ),
    ],
)
def test_what_a_text_check_shows(matcher, argument, reply, shown):
    assert whole(run(matcher, argument, reply)) == shown


SEARCH = ToolCall("search", {"query": "x" * 100})
PING = ToolCall("ping", {})
BOTH = 'get_weather({"city": "paris", "units": "metric"}), book_table({"people": 2})'


@pytest.mark.parametrize(
    ("matcher", "argument", "turn", "shown"),
    [
        (
            "called_tool",
            "get_weather",
            {"calls": (WEATHER, BOOKING)},
            (1.0, False, "get_weather was called 1 time", "get_weather", BOTH),
        ),
        (
            "called_tool",
            "get_weather",
            {},
            (0.0, False, "get_weather was not called; no tools were called", "get_weather", "none"),
        ),
        (
            "called_tool",
            "get_weather",
            {"calls": (BOOKING, PING)},  # a call without arguments shows empty brackets
            (
                0.0,
                False,
                'get_weather was not called; calls made: book_table({"people": 2}), ping()',
                "get_weather",
                'book_table({"people": 2}), ping()',
            ),
        ),
        (
            "called_tool",
            "search",
            {"calls": (SEARCH,)},  # a call's arguments are shortened
            (1.0, False, "search was called 1 time", "search", 'search({"query": "' + "x" * 68 + "…)"),
        ),
        (
            "not_called_tool",
            "get_weather",
            {"calls": (BOOKING,)},
            (1.0, False, "get_weather was not called", "no call of get_weather", 'book_table({"people": 2})'),
        ),
        (
            "not_called_tool",
            "get_weather",
            {"calls": (WEATHER, BOOKING)},
            (
                0.0,
                False,
                'get_weather was called 1 time: get_weather({"city": "paris", "units": "metric"})',
                "no call of get_weather",
                BOTH,
            ),
        ),
        (
            "called_tool_with",
            {"name": "get_weather"},
            {"calls": (WEATHER,)},
            (
                1.0,
                False,
                'get_weather was called with {"city": "paris", "units": "metric"}',
                "get_weather(...)",
                'get_weather({"city": "paris", "units": "metric"})',
            ),
        ),
        (
            "called_tool_with",
            PARIS,
            {"calls": (BOOKING,)},
            (
                0.0,
                False,
                'get_weather was not called; calls made: book_table({"people": 2})',
                'get_weather({"city": "Paris"})',
                'book_table({"people": 2})',
            ),
        ),
        (
            "called_tool_with",
            PARIS,
            {},
            (
                0.0,
                False,
                "get_weather was not called; no tools were called",
                'get_weather({"city": "Paris"})',
                "none",
            ),
        ),
        (
            "called_tool_with",
            {"name": "get_weather", "args": {"city": {"$bogus": 1}}},
            {"calls": (WEATHER,)},
            (
                0.0,
                True,
                "args.city: unknown argument matcher '$bogus'",
                'get_weather({"city": {"$bogus": 1}})',
                None,
            ),
        ),
        (
            "called_tool_with",
            ["get_weather"],
            {"calls": (WEATHER,)},
            (0.0, True, "called_tool_with needs a mapping with name and args", None, None),
        ),
        (
            "max_tool_calls",
            2,
            {"calls": (WEATHER, BOOKING)},
            (
                1.0,
                False,
                "the turn made 2 tool calls, at most 2 allowed",
                "at most 2 tool calls",
                "2 tool calls",
            ),
        ),
        (
            "max_tool_calls",
            1,
            {"calls": (WEATHER, BOOKING)},
            (
                0.0,
                False,
                f"the turn made 2 tool calls, the limit is 1: {BOTH}",
                "at most 1 tool call",
                "2 tool calls",
            ),
        ),
        (
            "max_tool_calls",
            0,
            {},
            (
                1.0,
                False,
                "the turn made 0 tool calls, at most 0 allowed",
                "at most 0 tool calls",
                "0 tool calls",
            ),
        ),
        (
            "max_tool_calls",
            "2",
            {"calls": (WEATHER,)},
            (
                1.0,
                False,
                "the turn made 1 tool call, at most 2 allowed",
                "at most 2 tool calls",
                "1 tool call",
            ),
        ),
        (
            "max_tool_calls",
            -1,
            {},
            (0.0, True, "max_tool_calls needs a whole number of calls, not -1", None, None),
        ),
        (
            "max_tool_calls",
            1.5,
            {},
            (0.0, True, "max_tool_calls needs a whole number of calls, not 1.5", None, None),
        ),
    ],
)
def test_what_a_tool_check_shows(matcher, argument, turn, shown):
    assert whole(run(matcher, argument, "", **turn)) == shown


def test_max_tool_calls_names_the_turns_it_counted():
    result = match("max_tool_calls", 1, data("", Turn(reply="", tool_calls=(WEATHER,)), calls=(BOOKING,)))
    assert whole(result) == (
        0.0,
        False,
        f"the 2 turns made 2 tool calls, the limit is 1: {BOTH}",
        "at most 1 tool call",
        "2 tool calls",
    )


def test_is_json_words_a_number_too_long_to_read():
    result = run("is_json", None, "1" * 5000)  # a ValueError that is not a JSONDecodeError
    assert result.reason.startswith("the reply is not valid JSON: Exceeds the limit (4300 digits)")
    assert (result.score, result.error, result.expected, result.got) == (0.0, False, "JSON", "1" * 199 + "…")


def test_includes_reports_the_value_subject_and_truncates_got():
    long = "x" * 500
    result = match("includes", "y", MatchInput(text=long, turn=Turn(reply=""), turns=(), subject="the value"))
    assert result.reason == 'the value does not include "y"'
    assert result.got is not None and len(result.got) == 200 and result.got.endswith("…")


def test_is_json_parse_errors_say_what_and_where():
    result = run("is_json", None, "{'a': 1}")
    assert result.reason.startswith("the reply is not valid JSON: Expecting property name")


def test_is_json_lists_at_most_three_schema_errors():
    schema = {"type": "array", "items": {"type": "integer"}}
    result = run("is_json", schema, '["a", "b", "c", "d", "e"]')
    assert "$[0]: 'a' is not of type 'integer'" in result.reason
    assert "$[3]" not in result.reason
    assert result.reason.endswith("and 2 more")


def test_called_tool_with_numbers_each_call_of_the_tool():
    calls = (WEATHER, ToolCall("get_weather", {"town": "Paris"}))
    result = run("called_tool_with", PARIS, calls=calls)
    lines = result.reason.splitlines()
    assert lines[0] == 'call 1 of 2: args.city: expected "Paris", got "paris"'
    assert lines[1] == "call 2 of 2: args.city: missing (present: town)"
    assert lines[2].startswith("calls made: get_weather(")


def test_tool_calls_in_order_names_a_tool_never_called():
    result = run("tool_calls_in_order", ["get_weather", "pay"], calls=BOOK_THEN_WEATHER)
    assert result.reason.startswith("pay was not called;")


# ---------------------------------------------------------------------------------------------------
# scope: conversation widens the turns a matcher sees


def test_called_tool_with_conversation_scope_sees_earlier_turns():
    earlier = Turn(reply="", tool_calls=(WEATHER,))
    assert match("called_tool", "get_weather", data("", earlier)).score == 1.0
    assert match("called_tool", "get_weather", data("")).score == 0.0


def test_latency_below_sums_the_turns_it_is_given():
    earlier = Turn(reply="", latency_s=1.5)
    result = match("latency_below", 2, data("", earlier, latency_s=1.0))
    assert result.score == 0.0
    assert result.reason == "the 2 turns took 2.50 s, the limit is 2 s"


# ---------------------------------------------------------------------------------------------------
# default_name


@pytest.mark.parametrize(
    ("matcher", "argument", "name"),
    [
        ("succeeded", None, "succeeded"),
        ("includes", "Sunny", 'includes "Sunny"'),
        ("includes", ["Sunny", "Paris"], 'includes "Sunny", "Paris"'),
        ("matches", "Sun+y", "matches /Sun+y/"),
        ("called_tool", "get_weather", "called_tool get_weather"),
        (
            "called_tool_with",
            {"name": "get_weather", "args": {"city": "Paris"}},
            'called_tool_with get_weather {"city": "Paris"}',
        ),
        ("called_tool_with", {"name": "get_weather"}, "called_tool_with get_weather"),
        ("tool_calls_in_order", ["a", "b"], "tool_calls_in_order a → b"),
        ("judge", "closed_qa", "judge closed_qa"),
        ("latency_below", 2.5, "latency_below 2.5"),
        ("state", {"status": "cancelled"}, 'state {"status": "cancelled"}'),
        ("is_json", None, "is_json"),
        ("is_json", {"type": "object"}, "is_json (schema)"),
        ("equals", "{{ expected.city }}", 'equals "{{ expected.city }}"'),
        ("is_json", True, "is_json"),
        ("includes", None, "includes"),
        ("equals", {"a": 1}, 'equals "{\\"a\\": 1}"'),
        ("smells_nice", "x", 'smells_nice "x"'),  # an unknown matcher is named as one of text
        ("called_tool_with", {"args": {"a": 1}}, 'called_tool_with {"a": 1}'),  # no name: none shown
        ("tool_calls_in_order", [{"args": {}}, "b"], "tool_calls_in_order → b"),
    ],
)
def test_default_name(matcher, argument, name):
    _scalar_name.cache_clear()  # worded here, not remembered from an earlier test
    assert default_name(matcher, argument) == name


@pytest.mark.parametrize(
    ("matcher", "argument", "options", "name"),
    [
        ("called_tool", "get_weather", {"times": "x"}, "called_tool get_weather"),  # no count to show
        ("includes", "x", {"times": 2}, 'includes "x"'),  # an option only called_tool takes
    ],
)
def test_default_name_with_options(matcher, argument, options, name):
    assert default_name(matcher, argument, options) == name


def test_a_value_json_cannot_write_is_quoted_as_python_shows_it():
    circular: list = []
    circular.append(circular)
    assert quote(circular) == "[[...]]"


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (10**20, "100000000000000000000"),  # 21 digits: as written
        (10**21, "1.00000e+21"),
        (-(10**20), "-100000000000000000000"),
        (-123456789 * 10**20, "-1.23456e+28"),
        (2.5, "2.5"),
        (1e21, "1e+21"),
    ],
)
def test_a_number_as_people_write_it(number, text):
    assert number_text(number) == text


def test_default_name_is_short_and_single_line():
    _scalar_name.cache_clear()
    name = default_name("includes", "a very long text\nthat goes on " * 10)
    assert len(name) == 60
    assert name.endswith("…")
    assert "\n" not in name


# ---------------------------------------------------------------------------------------------------
# deep_contains


ACTUAL = {
    "city": "Oslo",
    "units": "metric",
    "days": 3,
    "filters": {"wind": True, "rain": {"min": 1.0, "max": 5}, "extra": "x"},
    "stops": [{"id": 1, "note": "x"}, {"id": 2}],
}


@pytest.mark.parametrize(
    ("expected", "problems"),
    [
        ({"city": "Oslo"}, []),
        ({}, []),
        ({"city": "Oslo", "filters": {"rain": {"min": 1}}, "stops": [{"id": 1}, {"id": 2}]}, []),
        ({"city": "oslo"}, ['args.city: expected "oslo", got "Oslo"']),
        ({"days": True}, ["args.days: expected true, got 3"]),
        ({"filters": {"rain": {"max": 6}}}, ["args.filters.rain.max: expected 6, got 5"]),
        ({"filters": {"snow": 1}}, ["args.filters.snow: missing (present: extra, rain, wind)"]),
        ({"stops": [{"id": 1}]}, ["args.stops: expected 1 item, got 2"]),
        ({"stops": [{"id": 1}, {"id": 2}, {"id": 3}]}, ["args.stops: expected 3 items, got 2"]),
        ({"stops": [{"id": 1}, {"id": 3}]}, ["args.stops[1].id: expected 3, got 2"]),
        ({"city": {"name": "Oslo"}}, ['args.city: expected an object, got "Oslo"']),
        (
            {"filters": ["wind"]},
            [
                "args.filters: expected a list, got an object "
                '{"wind": true, "rain": {"min": 1.0, "max": 5}, "extra": "x"}'
            ],
        ),
        (
            {"units": "metric", "days": 4, "nope": 1},
            [
                "args.days: expected 4, got 3",
                "args.nope: missing (present: city, days, filters, stops, units)",
            ],
        ),
        # text spelling a number or boolean (values from CSV rows)
        ({"days": "3"}, []),
        ({"days": "3.0"}, []),
        ({"days": " 3 "}, []),
        ({"days": "03"}, []),
        ({"days": "3.5"}, ['args.days: expected "3.5", got 3']),
        ({"days": "three"}, ['args.days: expected "three", got 3']),
        ({"filters": {"wind": "true"}}, []),
        ({"filters": {"wind": "TRUE"}}, []),
        ({"filters": {"wind": "false"}}, ['args.filters.wind: expected "false", got true']),
        ({"filters": {"wind": "yes"}}, ['args.filters.wind: expected "yes", got true']),
        # booleans never equal numbers; ints equal floats
        ({"filters": {"wind": 1}}, ["args.filters.wind: expected 1, got true"]),
        ({"filters": {"rain": {"min": 1}}}, []),
        ({"filters": {"rain": {"min": True}}}, ["args.filters.rain.min: expected true, got 1.0"]),
        # None only equals None
        ({"city": None}, ['args.city: expected null, got "Oslo"']),
        # every difference is reported, in lists and beside argument matchers
        (
            {"stops": [{"id": 3}, {"id": 4}]},
            ["args.stops[0].id: expected 3, got 1", "args.stops[1].id: expected 4, got 2"],
        ),
        (
            {"days": {"$gte": 5}, "city": {"$matches": "^P"}},
            ["args.days: expected ≥ 5, got 3", 'args.city: expected text matching /^P/, got "Oslo"'],
        ),
        (
            {"stops": [{"$any": True}, {"$one_of": [1]}]},
            ['args.stops[1]: expected one of 1, got an object {"id": 2}'],
        ),
        ({"days": [3]}, ["args.days: expected a list, got 3"]),
        ({"units": 1}, ['args.units: expected 1, got "metric"']),
        ({"stops": 2}, ['args.stops: expected 2, got a list [{"id": 1, "note": "x"}, {"id": 2}]']),
    ],
)
def test_deep_contains_table(expected, problems):
    assert deep_contains(expected, ACTUAL) == problems


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        ("4", 4, True),
        (4, "4", True),  # the reverse direction: the agent sent text
        ("4.0", 4, True),
        ("4e0", 4, True),
        ("-2.5", -2.5, True),
        ("0.1", 0.1, True),
        ("12345678901234567891", 12345678901234567891, True),
        ("12345678901234567891", 12345678901234567890, False),
        ("nan", float("nan"), False),
        ("inf", float("inf"), False),
        ("1_000", 1000, False),
        ("0x10", 16, False),
        ("", 0, False),
        ("true", True, True),
        (True, "True", True),
        ("false", False, True),
        ("1", True, False),
        (1, True, False),
        (0, False, False),
        (True, 1.0, False),
        (1, 1.0, True),
        ("4", "4.0", False),  # two texts compare as texts
        ("Paris", "Paris", True),
        (None, None, True),
        (None, "", False),
        ("null", None, False),
    ],
)
def test_scalars_equal(expected, actual, equal):
    assert scalars_equal(expected, actual) is equal


def test_deep_contains_paths_quote_unusual_keys():
    assert deep_contains({"two words": 1}, {"two words": 2}) == ['args["two words"]: expected 1, got 2']
    assert deep_contains({"a": 1}, {"a": 2}, path="$") == ["$.a: expected 1, got 2"]


def test_deep_contains_finds_text_keys_for_number_keys():
    assert deep_contains({1: "x"}, {"1": "x"}) == []
    assert deep_contains({1: "x"}, {"2": "x"}) == ["args[1]: missing (present: 2)"]


def test_deep_contains_top_level_mismatch_and_empty_actual():
    assert deep_contains({"city": "Paris"}, {}) == ["args.city: missing (present: none)"]
    assert deep_contains({"city": "Paris"}, "Paris") == ['args: expected an object, got "Paris"']
    assert deep_contains(["a"], ["a"]) == []


def test_deep_contains_shortens_long_values():
    [message] = deep_contains({"text": "short"}, {"text": "y" * 300})
    assert len(message) < 140
    assert message.endswith("…")


# Property tests over JSON-like data

# an object whose keys all start with `$` is an argument matcher, not a value (its own tests hold it)
KEYS = st.text(max_size=5).filter(lambda key: not key.startswith("$"))
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_everything_contains_itself(value):
    assert deep_contains(value, value) == []


@st.composite
def value_and_subset(draw):
    """A JSON-like value and a subset of it: mappings drop some keys, recursively."""
    value = draw(json_values)

    def subset(node):
        if isinstance(node, dict):
            keep = draw(st.lists(st.sampled_from(sorted(node)), unique=True)) if node else []
            return {key: subset(node[key]) for key in keep}
        if isinstance(node, list):
            return [subset(item) for item in node]
        return node

    return subset(value), value


@given(value_and_subset())
def test_a_subset_is_contained(pair):
    expected, actual = pair
    assert deep_contains(expected, actual) == []


@given(
    st.dictionaries(st.text(min_size=1, max_size=5), json_scalars, min_size=1),
    st.text(min_size=1, max_size=5),
)
def test_a_missing_key_is_reported_at_its_path(actual, key):
    actual.pop(key, None)
    problems = deep_contains({key: 1}, actual)
    assert len(problems) == 1
    assert "missing (present: " in problems[0]


@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_an_integer_equals_its_spelling_and_never_a_boolean(number):
    assert deep_contains({"n": str(number)}, {"n": number}) == []
    assert deep_contains({"n": number}, {"n": str(number)}) == []
    assert deep_contains({"n": number}, {"n": number != 0}) != []


# ---------------------------------------------------------------------------------------------------
# state: the agent's state after the turn (ag-ui)

SHIPPED = {"order": "A-17", "status": "shipped", "items": [{"sku": "X", "qty": 2}]}


@pytest.mark.parametrize(
    ("argument", "state", "expected"),
    [
        (
            {"status": "shipped"},
            SHIPPED,
            (1.0, False, 'the state holds {"status": "shipped"}', '{"status": "shipped"}', quote(SHIPPED)),
        ),
        (
            {"items": [{"qty": {"$gte": 2}}]},
            SHIPPED,
            (
                1.0,
                False,
                'the state holds {"items": [{"qty": {"$gte": 2}}]}',
                '{"items": [{"qty": {"$gte": 2}}]}',
                quote(SHIPPED),
            ),
        ),
        (
            {"status": "cancelled", "order": "B-2"},
            SHIPPED,
            (
                0.0,
                False,
                'state.status: expected "cancelled", got "shipped"\nstate.order: expected "B-2", got "A-17"',
                '{"status": "cancelled", "order": "B-2"}',
                quote(SHIPPED),
            ),
        ),
        (
            {"refund": 1, "status": "x"},
            {"status": "x"},
            (
                0.0,
                False,
                "state.refund: missing (present: status)",
                '{"refund": 1, "status": "x"}',
                '{"status": "x"}',
            ),
        ),
        (
            {"status": "shipped"},
            None,
            (
                0.0,
                False,
                "the endpoint reported no state for this turn (an ag-ui agent reports it with "
                "STATE_SNAPSHOT)",
                '{"status": "shipped"}',
                "no state",
            ),
        ),
        (
            "shipped",
            SHIPPED,
            (0.0, True, 'state needs a mapping of what the state holds, not "shipped"', None, None),
        ),
    ],
)
def test_state_reads_the_agents_state_after_the_turn(argument, state, expected):
    assert whole(match("state", argument, data("", state=state))) == expected


def test_state_reads_only_this_turns_state():
    earlier = Turn(reply="", state={"status": "shipped"})
    assert match("state", {"status": "shipped"}, data("", earlier, state={"status": "gone"})).score == 0.0
