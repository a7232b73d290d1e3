"""The spec both order agents are run with (tests/support/ag_ui_agent.py, pydantic-ai over AG-UI;
tests/support/ai_sdk_agent/, Vercel's AI SDK over the UI message stream): the same scripted
behaviour and the same planted bug (the second turn's cancel_order drops the order id's dash), so
one spec says what each protocol must read and resend."""

from __future__ import annotations

ORDER_SPEC = """
suite: orders
evals:
  - name: lookup
    send: where is order A-17?
    expect:
      - succeeded
      - equals: Order A-17 is shipped.
      - called_tool_with: {name: lookup_order, args: {order_id: A-17}}
  - name: cancel follow-up
    turns:
      - send: where is order A-17?
      - send: cancel it
        expect:
          - equals: Order A-17 is cancelled.
          - called_tool: cancel_order
          - name: cancels the order it looked up
            called_tool_with: {name: cancel_order, args: {order_id: A-17}}
  - name: reset forgets
    turns:
      - send: where is order A-17?
      - reset
      - send: cancel it
        expect: [{equals: Which order?}, {not_called_tool: cancel_order}]
  - name: crash
    send: crash please
    expect: [succeeded]
"""

# what the spec's cases end as, on either protocol: the planted bug and the agent's error
FAILED = ["spec.yaml::cancel follow-up", "spec.yaml::crash"]
BUG_REASON = 'args.order_id: expected "A-17", got "A17"'
CRASH = "the order database is down"
