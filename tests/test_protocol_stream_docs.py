"""The literal exchanges of docs/spec-format.md's "Event-stream protocols" are what the adapters
send and read: each documented answer, served as written, gives the turn the page says, and the
request each adapter sends has the documented shape. (The live servers of these protocols are
tests/test_protocol_ag_ui.py's and tests/test_protocol_ai_sdk.py's.) So is the `http` stream's tool
call in pieces: the documented endpoint reads the documented chat deltas as one call."""

from __future__ import annotations

import json

import pytest
from support.protocol_servers import sse_reply, talk
from support.servers import ScriptedHTTPServer
from test_format_doc_examples import tagged


def documented(tag: str) -> str:
    (block,) = tagged(tag)
    return block.text


def shape(value):
    """The keys (and the list lengths) of a JSON value, without its values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


@pytest.mark.parametrize("protocol", ["ag-ui", "ai-sdk"])
def test_the_documented_answer_gives_the_documented_turn_from_the_documented_request(protocol):
    with ScriptedHTTPServer() as server:
        server.route("/agent", lambda request: sse_reply(documented(f"{protocol}-answer")))
        (turn,) = talk({"protocol": protocol, "url": server.url_for("/agent")}, "where is order A-17?")
        sent = server.requests_to("/agent")[0].json
    assert turn.reply == "Order A-17 is shipped."
    assert [(call.name, call.args) for call in turn.tool_calls] == [("lookup_order", {"order_id": "A-17"})]
    assert turn.error is None
    request = json.loads(documented(f"{protocol}-request").replace("…", ""))
    assert shape(sent) == shape(request)
    if protocol == "ag-ui":
        assert turn.state == {"order": "A-17", "status": "shipped"}
        assert turn.tool_calls[0].result == '{"order":"A-17","status":"shipped"}'
    else:
        assert turn.tool_calls[0].result == {"order": "A-17", "status": "shipped"}


def test_the_documented_tool_call_in_pieces_is_one_call_from_the_documented_endpoint():
    import yaml

    endpoint = yaml.safe_load(documented("http-pieces-endpoint"))["endpoints"]["chat-stream"]
    with ScriptedHTTPServer() as server:
        server.route("/v1/chat/completions", lambda request: sse_reply(documented("http-pieces-answer")))
        (turn,) = talk({**endpoint, "url": server.url_for("/v1/chat/completions")}, "where is order A-17?")
        sent = server.requests_to("/v1/chat/completions")[0].json
    assert turn.reply == "Order A-17 is shipped."
    assert [(call.name, call.args, call.id) for call in turn.tool_calls] == [
        ("lookup_order", {"order_id": "A-17"}, "call_1")
    ]
    assert sent == {
        "model": "my-model",
        "stream": True,
        "messages": [{"role": "user", "content": "where is order A-17?"}],
    }
