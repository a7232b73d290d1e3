"""Another protocol's answer named by its marks (endpoints/recognise.py), for the answers whose
servers the protocol tests do not start here: AG-UI events, an AI SDK UI message stream, an A2A
JSON-RPC answer, a LangGraph graph error. The answers are written as those servers write them
(see docs/spec-format.md); the servers themselves are tested end to end in test_protocol_*.py."""

from __future__ import annotations

import pytest

from specengine.endpoints.recognise import recognise

AG_UI = 'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\ndata: {"type":"TEXT_MESSAGE_START"}\n\n'
AG_UI_422 = '{"detail":[{"type":"missing","loc":["body","threadId"],"msg":"Field required"}]}'
AG_UI_422_LIST = '[{"type":"missing","loc":["threadId"],"msg":"Field required"}]'  # pydantic-ai's route
JSON_RPC = '{"jsonrpc":"2.0","id":"1","error":{"code":-32600,"message":"Invalid Request"}}'


@pytest.mark.parametrize(
    ("status", "headers", "text", "protocol"),
    [
        (200, {"Content-Type": "text/event-stream"}, AG_UI, "ag-ui"),
        (422, {"content-type": "application/json"}, AG_UI_422, "ag-ui"),
        (422, {"content-type": "application/json"}, AG_UI_422_LIST, "ag-ui"),
        (200, {"X-Vercel-AI-UI-Message-Stream": "v1"}, 'data: {"type":"start"}\n\n', "ai-sdk"),
        (200, {}, JSON_RPC, "a2a"),
        (200, {}, '{"__error__": {"error": "RuntimeError", "message": "boom"}}', "langgraph"),
        (200, {}, '[{"invocationId": "e-1", "author": "orders", "content": {}}]', "adk"),
    ],
)
def test_each_protocol_is_known_by_its_marks(status, headers, text, protocol):
    found = recognise("openai-chat", "http://127.0.0.1:9/x", status, headers, text)
    assert found is not None and found.protocol == protocol
    assert found.sentence().endswith(f"write protocol: {protocol}")


def test_the_protocol_itself_and_plain_answers_are_not_findings():
    assert recognise("a2a", "http://h/x", 200, {}, JSON_RPC) is None
    assert recognise("openai-chat", "http://h/x", 404, {}, '{"detail": "Not Found"}') is None
    assert recognise("http", "http://h/x", 200, {"content-type": "text/html"}, "<html>hello</html>") is None
    assert recognise("http", "http://h/x", 422, {}, '{"detail": [{"loc": ["body", "question"]}]}') is None
    assert recognise("http", "http://h/x", 422, {}, '[{"loc": ["question"]}]') is None
