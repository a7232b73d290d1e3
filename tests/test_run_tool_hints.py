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
