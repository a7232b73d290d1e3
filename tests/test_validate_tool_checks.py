"""`specengine validate` on tool checks: argument matchers, `exact`, `times`, `mode`, `max_tool_calls`
and `tokens_below`. Each mistake gives one located message in plain words, with the fix or a
"did you mean"; what is valid stays valid (every spec that validated before still does)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_validate_errors import one_problem, problems

VALID = """
    evals:
      - name: refund
        input: {amount: 19.99, prefix: ORD}
        send: Refund my order
        expect:
          - called_tool_with:
              name: refund
              exact: true
              args:
                order_id: {$matches: '^{{ input.prefix }}-\\d{6}$'}
                amount: {$approx: "{{ input.amount }}", $within: 0.01}
                reason: {$includes: damaged, $ignore_case: true}
                method: {$one_of: [card, paypal]}
                quantity: {$gte: 1, $lte: 3}
                items: {$contains: [headphones, {$matches: '^cab'}]}
                request_id: {$any: true}
                notify: {$absent: true}
                address: {city: Paris, zip: {$matches: '^75'}}
                lines: [{sku: A1}, {sku: {$any: true}}]
          - called_tool: find_order
            times: 1
          - called_tool: find_order
            times: {gte: 1, lte: 3}
          - tool_calls_in_order: [find_order, {name: refund, args: {amount: {$gt: 0}}, exact: false}]
            mode: exact
          - tool_calls_in_order: [find_order, refund]
            mode: subset
            scope: conversation
          - max_tool_calls: 2
          - tokens_below: 2000
          - tokens_below: 5000
            scope: conversation
"""


def test_every_new_form_validates(tmp_path):
    assert problems(tmp_path, VALID) == []


def test_what_validated_before_still_validates(tmp_path):
    """Mappings that are not all `$` keys stay objects to contain, as before."""
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - called_tool: get_weather
              - tool_calls_in_order: [a, b]
              - called_tool_with:
                  name: search
                  args:
                    filter: {$ref: "#/defs/x", type: object}
                    empty: {}
                    $literal_argument: 1
    """
    assert problems(tmp_path, spec) == []


def check(expect: str) -> str:
    return (
        "evals:\n  - name: a\n    send: hi\n    expect:\n"
        + "\n".join("      " + line for line in expect.strip("\n").splitlines())
        + "\n"
    )


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        (
            "- called_tool_with: {name: refund, args: {amount: {$aprox: 19.99}}}",
            "specs/s.yaml:5:58: unknown key '$aprox' in 'amount' - did you mean '$approx'?",
        ),
        (
            "- called_tool_with: {name: refund, args: {amount: {$within: 0.01}}}",
            "specs/s.yaml:5:58: $within goes with $approx",
        ),
        (
            "- called_tool_with: {name: refund, args: {amount: {$approx: 19.99, within: 0.01}}}",
            "specs/s.yaml:5:74: 'within' is not an argument matcher: beside $approx every key must start"
            " with $ (as written, this mapping is an object the argument must contain)"
            " - did you mean '$within'?",
        ),
        (
            "- called_tool_with: {name: refund, args: {amount: {$gte: 5, $lte: 1}}}",
            "specs/s.yaml:5:57: no number is ≥ 5 and ≤ 1",
        ),
        (
            "- called_tool_with: {name: refund, args: {amount: {$gte: many}}}",
            'specs/s.yaml:5:64: $gte takes a number, not "many"',
        ),
        (
            "- called_tool_with: {name: refund, args: {id: {$matches: '(ORD'}}}",
            "specs/s.yaml:5:64: $matches: not a valid regular expression:"
            " missing ), unterminated subpattern at position 0",
        ),
        (
            "- called_tool_with: {name: refund, args: {id: {$any: true, $absent: true}}}",
            "specs/s.yaml:5:54: $any stands alone: remove $absent (or $any)",
        ),
        (
            "- called_tool_with: {name: refund, args: {$any: true}}",
            "specs/s.yaml:5:49: args lists the arguments by name: $any is an argument matcher,"
            " so write it under the argument it checks, e.g. order_id: {$any: …}",
        ),
        (
            "- called_tool_with: {name: refund, args: {id: {$any: false}}}",
            "specs/s.yaml:5:60: $any must be true",
        ),
        (
            "- called_tool_with: {name: refund, args: {x: 1}, exactly: true}",
            "specs/s.yaml:5:56: unknown key 'exactly' in 'called_tool_with' - did you mean 'exact'?",
        ),
        (
            "- called_tool: refund\n  times: {gte: 3, lte: 1}",
            "specs/s.yaml:6:16: times: no number of calls fits this range (at least 3, at most 1)",
        ),
        (
            "- called_tool: refund\n  times: 0",
            "specs/s.yaml:6:16: times: this allows no call at all:"
            " to require that the tool is not called, write not_called_tool",
        ),
        (
            "- called_tool: refund\n  times: {at_least: 2}",
            "specs/s.yaml:6:17: unknown key 'at_least' in 'times'",
        ),
        (
            "- called_tool: refund\n  times: {gte: 1, gt: 2}",
            "specs/s.yaml:6:16: use gte or gt, not both",
        ),
        (
            "- called_tool_with: {name: refund, args: {}}\n  times: 2",
            "specs/s.yaml:6:9: 'times' belongs to called_tool (called_tool: NAME with times: 2 beside it)",
        ),
        (
            "- called_tool: refund\n  mode: exact",
            "specs/s.yaml:6:9: 'mode' belongs to tool_calls_in_order",
        ),
        (
            "- tool_calls_in_order: [a, b]\n  mode: strict",
            "specs/s.yaml:6:15: unknown mode 'strict' (use one of in_order, exact, any_order, subset)",
        ),
        (
            "- tool_calls_in_order: [a, {nam: b}]",
            "specs/s.yaml:5:35: unknown key 'nam' in 'tool_calls_in_order[1]' - did you mean 'name'?",
        ),
        (
            "- tool_calls_in_order: [a, {name: b, args: {n: {$lt: 1, $lte: 2}}}]",
            "specs/s.yaml:5:55: use $lte or $lt, not both",
        ),
        (
            "- max_tool_calls: -1",
            "specs/s.yaml:5:25: max_tool_calls must be at least 0, not -1",
        ),
        (
            "- max_tool_calls: 2\n  not: true",
            "specs/s.yaml:6:9: not: true cannot invert max_tool_calls:"
            " remove not and set the most calls allowed",
        ),
        (
            "- tokens_below: 0",
            "specs/s.yaml:5:23: tokens_below must be at least 1, not 0",
        ),
        (
            '- tokens_below: 100\n  value: "{{ reply }}"',
            "specs/s.yaml:6:9: value works with text matchers and judges, not with tokens_below",
        ),
        (
            "- tokens_beloww: 100",
            "specs/s.yaml:5:9: unknown matcher 'tokens_beloww' - did you mean 'tokens_below'?",
        ),
    ],
)
def test_a_tool_check_mistake_is_located_with_its_fix(tmp_path, expect, message):
    assert one_problem(tmp_path, check(expect)) == message


def test_a_template_inside_a_matcher_is_checked_for_unknown_variables(tmp_path):
    spec = check("- called_tool_with: {name: refund, args: {amount: {$approx: '{{ inptu.amount }}'}}}")
    [message] = problems(tmp_path, spec)
    assert "undefined variable 'inptu' - did you mean 'input'?" in message
    assert message.startswith("specs/s.yaml:5:")


KEYS = st.one_of(
    st.sampled_from(["$any", "$approx", "$within", "$gte", "$contains", "$bogus", "within", "x"]),
    st.text(max_size=3),
)
VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 5),
        st.floats(allow_nan=False),
        st.text(max_size=4),
        st.just("("),
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(KEYS, children, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.dictionaries(KEYS, VALUES, max_size=3), times=VALUES, mode=VALUES)
def test_validate_never_fails_on_arbitrary_tool_arguments(args, times, mode):
    """Whatever a spec holds in args, times or mode, validate answers with located messages."""
    spec = {
        "evals": [
            {
                "name": "a",
                "send": "hi",
                "expect": [
                    {"called_tool_with": {"name": "t", "args": args}},
                    {"called_tool": "t", "times": times},
                    {"tool_calls_in_order": [{"name": "t", "args": args}], "mode": mode},
                ],
            }
        ]
    }
    with tempfile.TemporaryDirectory() as folder:
        found = problems(Path(folder), json.dumps(spec))
    assert all(re.match(r"specs/s\.yaml:\d+:\d+: ", line) for line in found), found
    assert not any("internal error" in line for line in found), found
