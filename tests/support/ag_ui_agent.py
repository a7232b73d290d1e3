"""A pydantic-ai agent served over AG-UI by pydantic-ai's own adapter, with a scripted model (no key).

The agent helps with orders. Its model is a FunctionModel whose script streams tool calls with
their arguments in two deltas and reads the conversation the client resends:

- "where is order A-17?": calls lookup_order(order_id="A-17"), then says where it is; the tool
  sets the agent's state with a STATE_SNAPSHOT ({"order": "A-17", "status": "shipped"});
- "cancel it": finds the order in the conversation (the tool call the client sent back) and calls
  cancel_order, whose STATE_DELTA sets the status to "cancelled". The planted bug: the order id
  loses its dash (cancel_order(order_id="A17")), while the reply names the right order, so only an
  argument check on the second turn finds it;
- a message with "crash": the model raises, and the adapter answers RUN_ERROR inside a 200 stream.

`serve_ag_ui_agent()` runs it under uvicorn on a free loopback port, in a thread.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

from ag_ui.core import EventType, StateDeltaEvent, StateSnapshotEvent
from pydantic import BaseModel
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui import StateDeps
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ORDER = re.compile(r"\b([A-Z]-\d+)\b")


def _last_user_text(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _order_in_conversation(messages: list[ModelMessage]) -> str | None:
    """The order id of the last lookup_order call the conversation holds (as the client resent it)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_name == "lookup_order":
                    return str(part.args_as_dict().get("order_id"))
    return None


async def _script(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    last = messages[-1]
    returned = [part for part in getattr(last, "parts", ()) if isinstance(part, ToolReturnPart)]
    if returned:  # the tool answered: say so
        result = returned[-1].content
        yield f"Order {_order_in_conversation(messages) or result['order']} is {result['status']}."
        return
    text = _last_user_text(messages)
    if "crash" in text:
        raise RuntimeError("the order database is down")
    found = ORDER.search(text)
    if found:
        order = found.group(1)
        yield {0: DeltaToolCall(name="lookup_order", json_args='{"order_id": ', tool_call_id="call_lookup")}
        yield {0: DeltaToolCall(json_args=f'"{order}"}}')}
        return
    if "cancel" in text:
        order = _order_in_conversation(messages)
        if order is None:
            yield "Which order?"
            return
        buggy = order.replace("-", "")  # the planted bug
        yield {
            0: DeltaToolCall(
                name="cancel_order", json_args=f'{{"order_id": "{buggy}"}}', tool_call_id="call_cancel"
            )
        }
        return
    yield "How can I help with your order?"


class OrderState(BaseModel):
    """The state the client sends back each run (the agent's last snapshot, with its deltas)."""

    order: str | None = None
    status: str | None = None


def build_agent() -> Agent[StateDeps[OrderState], str]:
    agent = Agent(FunctionModel(stream_function=_script), output_type=str, deps_type=StateDeps[OrderState])

    @agent.tool_plain
    def lookup_order(order_id: str) -> ToolReturn:
        """Look an order up."""
        snapshot = StateSnapshotEvent(
            type=EventType.STATE_SNAPSHOT, snapshot={"order": order_id, "status": "shipped"}
        )
        return ToolReturn(return_value={"order": order_id, "status": "shipped"}, metadata=[snapshot])

    @agent.tool_plain
    def cancel_order(order_id: str) -> ToolReturn:
        """Cancel an order."""
        delta = StateDeltaEvent(
            type=EventType.STATE_DELTA, delta=[{"op": "replace", "path": "/status", "value": "cancelled"}]
        )
        return ToolReturn(return_value={"order": order_id, "status": "cancelled"}, metadata=[delta])

    return agent


def build_app() -> Starlette:
    agent = build_agent()

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent, deps=StateDeps(OrderState()))

    return Starlette(routes=[Route("/agent", run, methods=["POST"])])


@contextmanager
def serve_ag_ui_agent(port: int) -> Iterator[str]:
    """The agent's AG-UI URL while uvicorn serves it on 127.0.0.1:`port` in a thread."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(build_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the AG-UI agent did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/agent"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
