"""A tool check that fails for a reason the author can fix says it: the tool was called in an
earlier turn (name `scope: conversation`), or under a name that differs only in case or separators
("did you mean lookup_order?")."""

from __future__ import annotations

import pytest
from support.cli import write_project
from support.runs import run_spec
from support.support_bot import SupportBot

SPEC = """
evals:
  - name: asked then thanked
    turns:
      - send: Where is ORD-123?
      - send: Thanks!
        expect:
          - called_tool: lookup_order
          - called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
  - name: whole conversation
    turns:
      - send: Where is ORD-123?
      - send: Thanks!
        expect:
          - called_tool: lookup_order
            scope: conversation
  - name: no call at all
    turns:
      - send: Thanks!
        expect:
          - called_tool: lookup_order
          - called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
          - tool_calls_in_order: [lookup_order, notify]
          - includes: shipped
  - name: other spelling
    send: Where is ORD-123?
    expect:
      - called_tool: LookupOrder
      - called_tool_with: {name: lookup-order, args: {order_id: ORD-123}}
"""


@pytest.fixture(scope="module")
def hinted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hints")
    with SupportBot() as bot:
        write_project(folder, endpoints={"bot": bot.endpoint()})
        return run_spec(folder, SPEC)


@pytest.mark.parametrize("name", ["called_tool lookup_order", "called_tool_with lookup_order"])
def test_a_call_in_an_earlier_turn_names_scope_conversation(hinted, name):
    case = hinted.case("asked then thanked")
    assert case["status"] == "failed"
    found = [c for c in case["trials"][0]["checks"] if c["name"].startswith(name.split()[0])]
    assert found, case["trials"][0]["checks"]
    for entry in found:
        assert "lookup_order was called in turn 1, an earlier turn of this conversation" in entry["reason"]
        assert "add `scope: conversation`" in entry["reason"]
    assert hinted.status("whole conversation") == "passed"


def test_a_name_that_differs_in_case_or_separators_gets_did_you_mean(hinted):
    case = hinted.case("other spelling")
    reasons = [c["reason"] for c in case["trials"][0]["checks"]]
    assert len(reasons) == 2
    for reason in reasons:
        assert reason.startswith(("LookupOrder was not called", "lookup-order was not called"))
        assert "did you mean lookup_order?" in reason


# ---------------------------------------------------------------------------------------------------
# The hint on its own: which calls it reads and what it says


def _records(*turns: tuple[int, int, tuple[str, ...]]) -> list:
    from specengine.transcript import ToolCall, Turn, TurnRecord

    return [
        TurnRecord(
            number,
            f"message {number}",
            Turn(reply="", tool_calls=tuple(ToolCall(name) for name in names)),
            conv,
        )
        for number, conv, names in turns
    ]


NEAR = "; did you mean LookupOrder? (a call of that name was made)"
EARLIER = (
    "; lookup_order was called in turn 1, an earlier turn of this conversation: a check sees its own turn"
    " only; add `scope: conversation` to look at every turn"
)


@pytest.mark.parametrize(
    ("matcher", "argument", "check", "turns", "hint"),
    [
        ("called_tool", "lookup_order", {}, [(1, 0, ("other_tool", "LookupOrder"))], NEAR),
        ("called_tool", "lookup_order", {}, [(1, 0, ("other_tool",))], ""),
        (
            "called_tool",
            "lookup_order",
            {},
            [(1, 0, ("Lookup-Order",))],
            NEAR.replace("LookupOrder", "Lookup-Order"),
        ),
        (
            "called_tool",
            "lookup_order",
            {},
            [(1, 0, ("lookup_order",)), (2, 0, ("LookupOrder",))],
            NEAR + EARLIER,
        ),
        ("called_tool", "lookup_order", {"negate": True}, [(1, 0, ("LookupOrder",))], ""),
        ("includes", "lookup_order", {}, [(1, 0, ("LookupOrder",))], ""),  # not a tool check
        ("called_tool_with", {"args": {}}, {}, [(1, 0, ("LookupOrder",))], ""),  # no name to compare
        ("called_tool_with", ["lookup_order"], {}, [(1, 0, ("LookupOrder",))], ""),
        ("called_tool_with", {"name": "lookup_order"}, {}, [(1, 0, ("LookupOrder",))], NEAR),
        ("tool_calls_in_order", [{"name": "lookup_order", "args": {}}], {}, [(1, 0, ("LookupOrder",))], NEAR),
        (
            "tool_calls_in_order",
            ["lookup_order"],
            {},
            [(1, 0, ("lookup_order", "LookupOrder"))],
            "",
        ),  # called
        # an earlier turn of the same conversation, not another conversation's
        ("called_tool", "lookup_order", {}, [(1, 0, ("lookup_order",)), (2, 0, ())], EARLIER),
        ("called_tool", "lookup_order", {}, [(0, 1, ()), (1, 0, ("lookup_order",)), (2, 0, ())], EARLIER),
        ("called_tool", "lookup_order", {}, [(1, 1, ("lookup_order",)), (2, 0, ())], ""),
        (
            "called_tool_with",
            {"name": "lookup_order"},
            {},
            [(1, 0, ("lookup_order",)), (2, 0, ("lookup_order",))],
            "",
        ),
        # scope: conversation reads every turn of its conversation up to its own
        (
            "called_tool",
            "lookup_order",
            {"scope": "conversation"},
            [(1, 0, ("LookupOrder",)), (2, 0, ())],
            NEAR,
        ),
        (
            "called_tool",
            "lookup_order",
            {"scope": "conversation"},
            [(1, 0, ()), (2, 0, ("LookupOrder",))],
            NEAR,
        ),
        (
            "called_tool",
            "lookup_order",
            {"scope": "conversation"},
            [(1, 1, ("LookupOrder",)), (2, 0, ())],
            "",
        ),
        (
            "called_tool",
            "lookup_order",
            {"scope": "conversation"},
            [(2, 0, ()), (3, 0, ("LookupOrder",))],
            "",
        ),
    ],
)
def test_the_hint_a_failed_tool_check_gets(matcher, argument, check, turns, hint):
    from specengine.grade.tool_hints import tool_hint
    from specengine.plan import Check, Source

    checked = Check(matcher=matcher, argument=argument, name="c", source=Source("s.yaml", 3), **check)
    records = _records(*turns)
    record = next(r for r in records if r.number == 2) if len(records) > 1 else records[0]
    assert tool_hint(checked, argument, record, records) == hint


def test_a_tool_check_in_a_case_without_any_reported_call_says_none_was_reported(hinted):
    case = hinted.case("no call at all")
    reasons = {c["matcher"]: c["reason"] for c in case["trials"][0]["checks"]}
    unseen = (
        "the endpoint reported no tool call in any turn, so whether {} was called cannot be seen (a tool"
        " call is seen only when the agent's answer carries it: an A2A agent shows its tool calls only if"
        " it sends them)"
    )
    assert reasons["called_tool"] == unseen.format("lookup_order")
    assert reasons["called_tool_with"] == unseen.format("lookup_order")
    assert reasons["tool_calls_in_order"] == unseen.format("lookup_order or notify")
    assert reasons["includes"].startswith("the reply does not include")
