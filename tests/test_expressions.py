"""expressions.Expression: a plain path read without a template gives exactly what Jinja2's sandbox
gives (the value, the Undefined and its message, the error raised), and steps aside for the rest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Undefined

from specengine.expressions import MISSING, Expression, plain_path
from specengine.templates import environment

ANSWER = {
    "json": {
        "choices": [{"delta": {"content": "Hi", "tool_calls": None}, "index": 0}],
        "items": {"a": 1},
        "text": "abc",
        "n": 7,
        "none": None,
        "list": [1, [2, 3]],
        "keys": "a key that is also a method",
    },
    "headers": {"content-type": "text/event-stream"},
    "status": 200,
    "event": "message",
}

PATHS = [
    "json",
    "status",
    "json.choices[0].delta.content",
    "json.choices[0].delta.tool_calls",
    "json.choices[0].delta.missing",
    "json.choices[0].missing.deeper",
    "json.choices[1].delta",
    "json.choices[-1]",
    "json.choices.0.index",
    "json['choices'][0]['delta']",
    "headers['content-type']",
    "headers.missing",
    "json.items",
    "json['items']",
    "json['items'].a",
    "json.keys",
    "json['keys']",
    "json.text[0]",
    "json.text.upper",
    "json.text['upper']",
    "json.text.missing",
    "json.text[9]",
    "json.n.real",
    "json.n.missing",
    "json.n[0]",
    "json.none.missing",
    "json.none[0]",
    "json.list[1][0]",
    "json.list.count",
    "json.list.missing",
    "json.list['missing']",
    "json.list[5].x",
    "json.__class__",
    "json.missing.__class__",
    "json[true]",
    "range",
    "nothing.at.all",
    "json.text if event == 'message'",
    "json.text if event == 'delta'",
    "json.text if event != 'delta' else json.n",
    "json.text if event == 'delta' else json.n",
    "json.text if json.missing == 'x'",
    "json.text if json.none == none",
    "json.missing if json.n == 7",
    "json.text if json.n",
    "json.text if json.none else json.list",
    "json.text if json.none else json.missing",
    "json.text if json.missing",
    "json.items if json.n == 7",
    "json.text if json.n < 9",
    "json.text if json.n == 7 == 7",
    "json.text if json.n == json.n",
    "json.text if 7 == json.n",
    "[json] if event == 'message'",
]


def outcome(call):
    """What an evaluation comes to, comparable: ("value", v), ("undefined", message), ("raised", ...)."""
    try:
        value = call()
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))
    if isinstance(value, Undefined):
        return ("undefined", value._undefined_message)
    if callable(value):
        return ("callable", getattr(value, "__name__", ""))
    return ("value", value)


@pytest.mark.parametrize("source", PATHS)
def test_an_expression_gives_what_the_sandbox_gives(source):
    sandboxed = environment().compile_expression(source, undefined_to_none=False)
    expression = Expression(source)
    expected = outcome(lambda: sandboxed(**ANSWER))
    assert outcome(lambda: expression(**ANSWER)) == expected
    read = outcome(lambda: expression.read(ANSWER))
    if read == ("value", MISSING):  # only where the sandbox found nothing
        assert expected[0] == "undefined" or expected[:2] == ("raised", "UndefinedError")
    else:
        assert read == expected


def test_plain_paths_are_read_and_anything_else_is_left_to_the_sandbox():
    assert plain_path("json.choices[0].delta.content") == (
        "json",
        ((False, "choices"), (True, 0), (False, "delta"), (False, "content")),
    )
    assert plain_path("headers['content-type']") == ("headers", ((True, "content-type"),))
    for source in ("json.a if b", "json.a | upper", "json[n]", "json[-1]", "json._x", "json[true]", "a b"):
        assert plain_path(source) is None, source
    guarded = Expression("json.delta if json.type == 'delta'")
    assert guarded.read({"json": {"type": "delta", "delta": "Hi"}}) == "Hi"
    assert guarded.read({"json": {"type": "ping"}}) is MISSING  # no `else`: nothing, at once
    assert guarded.read({"json": {"delta": "Hi"}}) is MISSING  # no `type` to test


def test_a_missing_key_is_missing_to_read_and_undefined_to_the_call():
    expression = Expression("json.choices[0].delta.tool_calls")
    answer = {"json": {"choices": [{"delta": {"content": "x"}}]}}
    assert expression.read(answer) is MISSING
    assert isinstance(expression(**answer), Undefined)
    assert expression(**answer)._undefined_message == "'dict object' has no attribute 'tool_calls'"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abxy"), inner, max_size=3),
    max_leaves=8,
)
comparisons = st.sampled_from(["", " == 'a'", " != 'a'", " == 0", " == none", " == true"])
steps = st.lists(
    st.sampled_from([".a", ".b", ".x", "[0]", "[1]", "['a']", "['y']", ".count", ".get", ".upper", ".0"]),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(json_values, steps)
def test_any_json_and_any_path_read_as_the_sandbox_reads_them(value, path):
    source = "json" + "".join(path)
    sandboxed = environment().compile_expression(source, undefined_to_none=False)
    expected = outcome(lambda: sandboxed(json=value))
    assert outcome(lambda: Expression(source)(json=value)) == expected
    read = outcome(lambda: Expression(source).read({"json": value}))
    assert read == expected or (
        read == ("value", MISSING)
        and (expected[0] == "undefined" or expected[:2] == ("raised", "UndefinedError"))
    )


@settings(max_examples=300, deadline=None)
@given(json_values, steps, steps, comparisons, st.one_of(st.none(), steps))
def test_any_json_and_any_guarded_path_read_as_the_sandbox_reads_them(value, then, test, compare, other):
    source = f"json{''.join(then)} if json{''.join(test)}{compare}"
    if other is not None:
        source += f" else json{''.join(other)}"
    sandboxed = environment().compile_expression(source, undefined_to_none=False)
    expected = outcome(lambda: sandboxed(json=value))
    assert outcome(lambda: Expression(source)(json=value)) == expected
    read = outcome(lambda: Expression(source).read({"json": value}))
    assert read == expected or (
        read == ("value", MISSING)
        and (expected[0] == "undefined" or expected[:2] == ("raised", "UndefinedError"))
    )
