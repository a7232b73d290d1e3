"""Argument matchers inside `called_tool_with.args`: each `$` key passing and failing with the words
of its reason, the rules of a matcher mapping, the registry against the schema and the docs, and
hypothesis tests that no JSON, in the spec or from the agent, makes them raise."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specengine.grade import tool_matchers, trajectory
from specengine.grade.arg_matchers import (
    ARG_MATCHERS,
    ArgValue,
    Place,
    describe,
    is_matcher,
    iter_arg_matchers,
    matcher_problems,
)
from specengine.grade.deep_contains import deep_contains
from specengine.grade.match_result import MatchInput, MatchResult
from specengine.grade.matchers import match
from specengine.grade.pairing import pair_up
from specengine.grade.wanted_call import argument_problems, wanted_call
from specengine.transcript import ToolCall, Turn

ROOT = Path(__file__).resolve().parents[1]
SPEC_SCHEMA = json.loads((ROOT / "schemas" / "spec.schema.json").read_text(encoding="utf-8"))
ARG_MATCHER_SCHEMA = SPEC_SCHEMA["$defs"]["arg_matcher"]

REFUND = {
    "order_id": "ORD-482913",
    "amount": 59.97000000000001,
    "reason": "The box arrived Damaged",
    "items": ["cable", "headphones"],
    "quantity": 3,
    "code": 1042,
}


def call_data(*calls: ToolCall) -> MatchInput:
    turn = Turn(reply="", tool_calls=calls)
    return MatchInput(text="", turn=turn, turns=(turn,))


def refund_with(args: dict[str, Any], exact: bool = False) -> MatchResult:
    argument: dict[str, Any] = {"name": "refund", "args": args}
    if exact:
        argument["exact"] = True
    return match("called_tool_with", argument, call_data(ToolCall("refund", REFUND)))


# ---------------------------------------------------------------------------------------------------
# Each `$` key, passing


@pytest.mark.parametrize(
    "args",
    [
        {"order_id": {"$any": True}},
        {"notify": {"$absent": True}},
        {"order_id": {"$matches": r"^ORD-\d{6}$"}},
        {"order_id": {"$matches": "^ord-", "$ignore_case": True}},
        {"code": {"$matches": r"^\d{4}$"}},  # a number is matched as the text it is written as
        {"reason": {"$includes": "Damaged"}},
        {"reason": {"$includes": "damaged", "$ignore_case": True}},
        {"reason": {"$includes": "box", "$matches": "^The"}},  # several conditions: all hold
        {"quantity": {"$one_of": [1, 3, 5]}},
        {"quantity": {"$one_of": ["3"]}},  # a text equals the number it spells, as everywhere
        {"quantity": {"$gte": 3}},
        {"quantity": {"$gt": 2, "$lt": 4}},
        {"quantity": {"$gte": "1", "$lte": "3"}},  # numbers from a template or a CSV cell
        {"amount": {"$approx": 59.97}},  # 19.99 × 3 in floating point
        {"amount": {"$approx": 60, "$within": 0.03}},  # the bound is included
        {"amount": {"$approx": "59.97", "$within": "0.001"}},
        {"items": {"$contains": ["headphones"]}},
        {"items": {"$contains": ["headphones", "cable"]}},  # any order
        {"items": {"$contains": [{"$matches": "^head"}, {"$includes": "cab"}]}},  # matchers as items
        {"items": ["cable", {"$matches": "phones$"}]},  # a plain list, item by item, with a matcher
        {"order_id": {"$one_of": [{"$matches": "^ORD-"}, "none"]}},
    ],
)
def test_an_argument_matcher_passes(args):
    result = refund_with(args)
    assert result.passed, result.reason


def test_exact_refuses_arguments_not_named():
    named = {key: {"$any": True} for key in REFUND}
    assert refund_with(named, exact=True).passed
    result = refund_with({"order_id": {"$any": True}, "amount": {"$gt": 0}}, exact=True)
    assert not result.passed
    assert result.reason.splitlines()[0] == (
        "args.reason: not expected (exact: true allows only the arguments named),"
        ' got "The box arrived Damaged"'
    )
    assert len(result.reason.splitlines()) == 5  # reason, items, quantity, code, then the calls made


def test_absent_arguments_count_as_named_for_exact():
    named = {**{key: {"$any": True} for key in REFUND}, "notify": {"$absent": True}}
    assert refund_with(named, exact=True).passed


# ---------------------------------------------------------------------------------------------------
# Each `$` key, failing: the path, the matcher in words, and the value got


@pytest.mark.parametrize(
    ("args", "first_line"),
    [
        (
            {"amount": {"$approx": 19.99, "$within": 0.01}},
            "args.amount: expected ≈ 19.99 (± 0.01), got 59.97000000000001",
        ),
        ({"amount": {"$approx": 59.9}}, "args.amount: expected ≈ 59.9, got 59.97000000000001"),
        (
            {"tracking": {"$any": True}},
            "args.tracking: missing (present: amount, code, items, order_id, quantity, reason)",
        ),
        ({"order_id": {"$absent": True}}, 'args.order_id: expected no such argument, got "ORD-482913"'),
        ({"order_id": {"$matches": "^A-"}}, 'args.order_id: expected text matching /^A-/, got "ORD-482913"'),
        (
            {"reason": {"$includes": "late"}},
            'args.reason: expected text including "late", got "The box arrived Damaged"',
        ),
        (
            {"reason": {"$includes": "LATE", "$ignore_case": True}},
            'args.reason: expected text including "LATE" (ignoring case), got "The box arrived Damaged"',
        ),
        (
            {"items": {"$matches": "cable"}},
            'args.items: expected text matching /cable/, got a list ["cable", "headphones"]',
        ),
        ({"quantity": {"$one_of": [1, 2]}}, "args.quantity: expected one of 1, 2, got 3"),
        ({"quantity": {"$gte": 1, "$lte": 2}}, "args.quantity: expected ≥ 1 and ≤ 2, got 3"),
        ({"quantity": {"$gt": 3}}, "args.quantity: expected > 3, got 3"),
        ({"reason": {"$lt": 3}}, 'args.reason: expected < 3, got "The box arrived Damaged"'),
        (
            {"items": {"$contains": ["cable", "charger"]}},
            'args.items: expected a list holding "cable", "charger" in any order,'
            ' got a list ["cable", "headphones"]'
            ' (nothing matches "charger")',
        ),
        (
            {"items": {"$contains": ["cable", "cable"]}},  # each item is matched once
            'args.items: expected a list holding "cable", "cable" in any order,'
            ' got a list ["cable", "headphones"]'
            ' (nothing matches "cable")',
        ),
        (
            {"items": {"$contains": ["charger", "case"]}},
            'args.items: expected a list holding "charger", "case" in any order,'
            ' got a list ["cable", "headphones"]'
            ' (nothing matches "charger", "case")',
        ),
        (
            {"order_id": {"$contains": ["O"]}},
            'args.order_id: expected a list holding "O" in any order, got "ORD-482913"',
        ),
    ],
)
def test_an_argument_matcher_fails_with_path_matcher_and_value(args, first_line):
    result = refund_with(args)
    assert not result.passed and not result.error
    assert result.reason.splitlines()[0] == first_line
    assert result.reason.splitlines()[-1].startswith("calls made: refund(")


@pytest.mark.parametrize(
    ("matcher", "value", "problem"),
    [
        # each bound just inside and just outside
        ({"$gte": 3}, 3, None),
        ({"$gte": 3}, 2.999, "expected ≥ 3, got 2.999"),
        ({"$gte": 3}, "3", None),
        ({"$gte": 3}, True, "expected ≥ 3, got true"),  # a boolean is no number
        ({"$gte": 1}, None, "expected ≥ 1, got null"),
        ({"$gt": 3}, 3, "expected > 3, got 3"),
        ({"$gt": 3}, 3.001, None),
        ({"$lte": 3}, 3, None),
        ({"$lte": 3}, 3.001, "expected ≤ 3, got 3.001"),
        ({"$lt": 3}, 3, "expected < 3, got 3"),
        ({"$lt": 3}, 2.999, None),
        ({"$lt": "x"}, 2, 'expected < "x", got 2'),
        # $approx: its bounds included, outside them refused; without $within, 1e-9 of its size
        ({"$approx": 10, "$within": 0.5}, 10.5, None),
        ({"$approx": 10, "$within": 0.5}, 10.51, "expected ≈ 10 (± 0.5), got 10.51"),
        ({"$approx": 10, "$within": 0.5}, 9.5, None),
        ({"$approx": 10, "$within": 0.5}, 9.49, "expected ≈ 10 (± 0.5), got 9.49"),
        ({"$approx": 0, "$within": 0}, 0, None),
        ({"$approx": 0}, 0, None),
        ({"$approx": 1e9}, 1e9 - 1, None),
        ({"$approx": 1e9}, 1e9 + 2, "expected ≈ 1000000000.0, got 1000000002.0"),
        ({"$approx": 1}, "x", 'expected ≈ 1, got "x"'),
        ({"$approx": 1.0}, 10**400, "expected ≈ 1.0, got 1" + "0" * 78 + "…"),  # too large for a float
        # text conditions are case-sensitive unless told
        ({"$matches": "^ord"}, "ORD-1", 'expected text matching /^ord/, got "ORD-1"'),
        ({"$includes": "ord"}, "ORD-1", 'expected text including "ord", got "ORD-1"'),
        ({"$matches": "^ORD"}, ["ORD"], 'expected text matching /^ORD/, got a list ["ORD"]'),
        ({"$includes": "1"}, 12, None),  # a number is matched as the text it is written as
        ({"$matches": "("}, "(", 'expected text matching /(/, got "("'),  # a broken pattern never matches
        ({"$includes": "true"}, True, 'expected text including "true", got true'),
    ],
)
def test_each_condition_at_its_boundary(matcher, value, problem):
    problems = deep_contains({"v": matcher}, {"v": value})
    assert problems == ([] if problem is None else [f"args.v: {problem}"])


def test_matchers_are_found_at_any_depth_with_their_path():
    args = {
        "a": {"b": {"$gte": 1}},
        "c": [{"$lt": 2}],
        "d": {"$one_of": [{"$gte": 1}, 2], "$contains": 5},
        "e": {"$contains": [{"$matches": "x"}]},
    }
    assert list(iter_arg_matchers(args)) == [
        (("a", "b"), {"$gte": 1}),
        (("c", 0), {"$lt": 2}),
        (("d",), {"$one_of": [{"$gte": 1}, 2], "$contains": 5}),
        (("d", "$one_of", 0), {"$gte": 1}),
        (("e",), {"$contains": [{"$matches": "x"}]}),
        (("e", "$contains", 0), {"$matches": "x"}),
    ]


@pytest.mark.parametrize(
    ("item", "problems"),
    [
        (
            {"name": "f", "args": {"a": {"$gte": "x"}, "b": [{"$lte": "{{ y }}"}]}},  # rendered: no template
            ['args.a: $gte takes a number, not "x"', 'args.b[0]: $lte takes a number, not "{{ y }}"'],
        ),
        (
            {"name": "f", "args": {"two words": {"$any": 1}}},
            ['args["two words"]: write $any: true, or leave $any out'],
        ),
        ({"name": "f", "args": [1]}, ["args must be a mapping of argument names to values, not [1]"]),
        ({"name": "f", "args": {"a": [[{"$lt": "x"}]]}}, ['args.a[0][0]: $lt takes a number, not "x"']),
        ({"name": "f", "args": {"a": {"$gte": 1}}}, []),
    ],
)
def test_the_rendered_arguments_of_a_call_are_checked_at_their_path(item, problems):
    wanted = wanted_call(item)
    assert wanted is not None
    assert argument_problems(wanted) == problems


def test_the_expected_value_shows_the_matchers():
    result = refund_with({"amount": {"$approx": 19.99, "$within": 0.01}})
    assert result.expected == 'refund({"amount": {"$approx": 19.99, "$within": 0.01}})'


@pytest.mark.parametrize(
    ("matcher", "words"),
    [
        ({"$any": True}, "any value"),
        ({"$absent": True}, "no such argument"),
        ({"$gte": 1, "$lt": 10}, "≥ 1 and < 10"),
        ({"$approx": "19.990"}, "≈ 19.99"),
        ({"$one_of": "x"}, 'one of "x"'),
        ({"$ignore_case": True}, '{"$ignore_case": true}'),  # no condition to word: the mapping itself
    ],
)
def test_describe(matcher, words):
    assert describe(matcher) == words


def test_a_matcher_value_that_renders_to_nonsense_is_an_error_not_a_failure():
    result = refund_with({"amount": {"$approx": "about twenty"}})
    assert result.error
    assert result.reason == 'args.amount: $approx takes a number, not "about twenty"'
    bad = refund_with({"items": {"$contains": [{"$matches": "("}]}})
    assert bad.error
    assert bad.reason.startswith("args.items.$contains[0]: $matches: not a valid regular expression")


def test_only_mappings_of_dollar_keys_are_matchers():
    assert is_matcher({"$any": True})
    assert is_matcher({"$whatever": 1})  # unknown keys are validation errors, not objects
    assert not is_matcher({})  # an empty object is still an object
    assert not is_matcher({"$any": True, "name": "x"})  # mixed: an object (validate warns)
    assert not is_matcher({1: True})
    assert not is_matcher("$any")


def test_a_mapping_that_is_not_a_matcher_is_still_deep_contained():
    actual = {"filters": {"$ref": "#/a", "type": "x"}}
    assert deep_contains({"filters": {"$ref": "#/a", "type": "x"}}, actual) == []
    assert deep_contains({"filters": {"type": "y", "$ref": "#/a"}}, actual) == [
        'args.filters.type: expected "y", got "x"'
    ]


def test_the_arguments_mapping_itself_names_arguments_even_when_they_start_with_dollar():
    """`args` lists argument names: a tool whose argument is called `$x` is compared, not matched."""
    call = ToolCall("odd", {"$x": 1})
    argument = {"name": "odd", "args": {"$x": 1}}
    assert tool_matchers.called_tool_with(argument, call_data(call)).passed


# ---------------------------------------------------------------------------------------------------
# The rules of a matcher mapping (validate applies them before the run, grading after rendering)


def problems_of(matcher: dict[str, Any], rendered: bool = False) -> list[tuple[str | None, str, str]]:
    return [(p.key, p.place.value, p.message) for p in matcher_problems(matcher, rendered)]


@pytest.mark.parametrize(
    ("matcher", "problems"),
    [
        ({"$aprox": 1}, [("$aprox", "key", "unknown argument matcher '$aprox' - did you mean '$approx'?")]),
        ({"$any": False}, [("$any", "value", "write $any: true, or leave $any out")]),
        ({"$any": True, "$gte": 1}, [("$any", "key", "$any stands alone: remove $gte (or $any)")]),
        ({"$within": 0.1}, [("$within", "key", "$within goes with $approx")]),
        (
            {"$aproxx": 1, "$within": 0.1},
            [("$aproxx", "key", "unknown argument matcher '$aproxx' - did you mean '$approx'?")],
        ),
        ({"$ignore_case": True}, [("$ignore_case", "key", "$ignore_case goes with $matches or $includes")]),
        ({"$gte": 1, "$gt": 0}, [("$gt", "key", "use $gte or $gt, not both")]),
        ({"$gte": 5, "$lte": 3}, [(None, "mapping", "no number is ≥ 5 and ≤ 3")]),
        ({"$gt": 3, "$lt": 3}, [(None, "mapping", "no number is > 3 and < 3")]),
        ({"$gt": 3, "$lte": 3}, [(None, "mapping", "no number is > 3 and ≤ 3")]),  # either strict
        ({"$gte": 3, "$lt": 3}, [(None, "mapping", "no number is ≥ 3 and < 3")]),
        ({"$gte": 3, "$lte": 3}, []),  # exactly 3
        ({"$approx": 1, "$within": 0}, []),  # exactly 1
        (
            {"$any": True, "$gte": 1, "$lte": 2},
            [("$any", "key", "$any stands alone: remove $gte, $lte (or $any)")],
        ),
        ({"$lte": 1, "$lt": 2}, [("$lt", "key", "use $lte or $lt, not both")]),
        ({"$gte": "{{ low }}", "$lte": 3}, []),  # a bound known only once rendered
        ({"$gte": "many"}, [("$gte", "value", '$gte takes a number, not "many"')]),
        ({"$approx": 1, "$within": -1}, [("$within", "value", "$within must be 0 or more, not -1")]),
        ({"$one_of": []}, [("$one_of", "value", "$one_of is empty: add at least one value")]),
        ({"$contains": "a"}, [("$contains", "value", '$contains takes a list, such as [a, b], not "a"')]),
        ({"$includes": ["a"]}, [("$includes", "value", '$includes takes a text, not ["a"]')]),
        (
            {"$matches": "a", "$ignore_case": "yes"},
            [("$ignore_case", "value", '$ignore_case takes true or false, not "yes"')],
        ),
        (
            {"$matches": "(?<=a+)b"},  # an error the regular expression engine gives no position for
            [
                (
                    "$matches",
                    "value",
                    "$matches: not a valid regular expression: look-behind requires fixed-width pattern",
                )
            ],
        ),
        (
            {"$matches": "(x"},
            [
                (
                    "$matches",
                    "value",
                    "$matches: not a valid regular expression:"
                    " missing ), unterminated subpattern at position 0",
                )
            ],
        ),
        ({"$approx": "{{ expected.amount }}", "$within": 0.01}, []),  # a template is checked once rendered
        ({"$one_of": "{{ expected.methods }}"}, []),
        ({"$matches": "{{ input.prefix }}-\\d+"}, []),
    ],
)
def test_matcher_problems(matcher, problems):
    assert problems_of(matcher) == problems


def test_after_rendering_a_template_must_have_become_what_the_key_takes():
    assert problems_of({"$one_of": "card"}, rendered=True) == [
        ("$one_of", "value", '$one_of takes a list, such as [a, b], not "card"')
    ]
    assert problems_of({"$approx": "19.99"}, rendered=True) == []
    assert matcher_problems({"$approx": "x"}, rendered=True)[0].place is Place.VALUE


# ---------------------------------------------------------------------------------------------------
# The registry against the schema and the docs


KIND_SCHEMAS = {
    ArgValue.TRUE: {"const": True},
    ArgValue.FLAG: {"type": "boolean"},
    ArgValue.TEXT: {"type": ["string", "number"]},
    ArgValue.REGEX: {"type": ["string", "number"]},
    ArgValue.NUMBER: {"type": ["number", "string"]},
    ArgValue.VALUES: {"type": ["array", "string"], "items": {"$ref": "#/$defs/arg_value"}},
}


def test_the_schema_lists_the_registered_argument_matchers_in_order():
    assert ARG_MATCHER_SCHEMA["additionalProperties"] is False
    assert list(ARG_MATCHER_SCHEMA["properties"]) == list(ARG_MATCHERS)


@pytest.mark.parametrize("name", list(ARG_MATCHERS))
def test_the_schema_gives_each_argument_matcher_the_shape_of_its_value(name):
    node = ARG_MATCHER_SCHEMA["properties"][name]
    shape = {key: value for key, value in node.items() if key not in ("description", "examples")}
    assert shape == KIND_SCHEMAS[ARG_MATCHERS[name].value]
    assert node["description"]


def test_the_docs_table_of_argument_matchers_agrees_with_the_registry():
    text = (ROOT / "docs" / "spec-format.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\$[a-z_]+)` \| ([^|]+) \| ([^|]+) \|$", text, re.MULTILINE)
    assert [name for name, _, _ in rows] == list(ARG_MATCHERS)
    for name, takes, passes_when in rows:
        entry = ARG_MATCHERS[name]
        assert takes.strip().replace("`", "") == entry.value.value, name
        assert passes_when.strip() == entry.passes_when, name


# ---------------------------------------------------------------------------------------------------
# Pairing (`$contains`, any_order, subset) finds the largest pairing


def best_pairing(fits: list[list[int]]) -> int:
    """By brute force: the most wanted items that can each take a different actual item."""
    best = 0
    for size in range(len(fits), 0, -1):
        for chosen in itertools.combinations(range(len(fits)), size):
            for taken in itertools.product(*(fits[i] for i in chosen)):
                if len(set(taken)) == size:
                    return size
    return best


@given(st.lists(st.lists(st.integers(0, 5), max_size=4, unique=True), max_size=5))
def test_pairing_is_as_large_as_possible(fits):
    paired = pair_up(fits)
    assert len(set(paired.values())) == len(paired)  # each actual item used once
    assert all(paired[wanted] in fits[wanted] for wanted in paired)
    assert len(paired) == best_pairing(fits)


@pytest.mark.parametrize(
    ("fits", "paired"),
    [
        ([[0], [0, 1, 2], [0, 2, 1, 3], [0]], {0: 0, 1: 1, 2: 2}),
        ([[2, 0, 1], [], [2, 1], [0]], {0: 2, 2: 1, 3: 0}),  # 2 takes its next choice: 0 keeps 2
    ],
)
def test_each_item_takes_its_first_choice_that_keeps_the_pairing_largest(fits, paired):
    """The order of `fits` is a preference: which items pair shows in "nothing matches" reasons."""
    assert pair_up(fits) == paired


def test_contains_is_not_fooled_by_a_greedy_first_choice():
    assert deep_contains({"n": {"$contains": [{"$gte": 1}, 5]}}, {"n": [5, 1]}) == []


# ---------------------------------------------------------------------------------------------------
# No JSON makes them raise: the spec's (any `$` key, any value) or the agent's


KEYS = st.one_of(st.sampled_from([*ARG_MATCHERS, "$bogus", "name"]), st.text(max_size=4))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),  # too large for a float
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["(", "[a-", "19.99", "3", "{{ x }}", "*"]),
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)),
    max_leaves=20,
)
ARGS = st.dictionaries(KEYS, JSON, max_size=4)


@settings(max_examples=300, deadline=None)
@given(expected=ARGS, actual=JSON, exact=st.booleans())
def test_called_tool_with_never_raises(expected, actual, exact):
    argument = {"name": "t", "args": expected, "exact": exact}
    result = tool_matchers.called_tool_with(argument, call_data(ToolCall("t", actual), ToolCall("u", actual)))
    assert isinstance(result, MatchResult)
    assert isinstance(result.reason, str)
    assert all(isinstance(problem, str) for problem in deep_contains(expected, actual))


@settings(max_examples=200, deadline=None)
@given(matcher=st.dictionaries(KEYS, JSON, min_size=1, max_size=4), rendered=st.booleans())
def test_matcher_problems_never_raise(matcher, rendered):
    assert all(isinstance(problem.message, str) for problem in matcher_problems(matcher, rendered))
    assert isinstance(describe(matcher), str)


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(
        st.one_of(
            st.sampled_from(["t", "u"]),
            st.fixed_dictionaries({"name": st.sampled_from(["t", "u"]), "args": ARGS}),
        ),
        min_size=1,
        max_size=3,
    ),
    actual=st.lists(st.tuples(st.sampled_from(["t", "u", "v"]), JSON), max_size=4),
    mode=st.sampled_from(trajectory.MODES),
)
def test_tool_calls_in_order_never_raises(entries, actual, mode):
    data = call_data(*(ToolCall(name, args) for name, args in actual))
    result = trajectory.tool_calls_in_order(entries, data, mode)
    assert isinstance(result, MatchResult)


@pytest.mark.parametrize(
    ("matcher", "shown"),
    [
        ({"$gte": 10**400, "$lte": 1}, "no number is ≥ 1.00000e+400 and ≤ 1"),
        ({"$gt": 3, "$lt": 3}, "no number is > 3 and < 3"),
        ({"$gte": 2.5, "$lte": 1.5}, "no number is ≥ 2.5 and ≤ 1.5"),
    ],
)
def test_an_empty_range_is_named_whatever_the_size_of_its_bounds(matcher: dict, shown: str) -> None:
    assert [problem.message for problem in matcher_problems(matcher, rendered=True)] == [shown]
