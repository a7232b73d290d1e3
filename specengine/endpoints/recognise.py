"""What answered, when an endpoint's answer belongs to another protocol: AG-UI events, an AI SDK UI
message stream, an A2A answer or agent card, a Google ADK server, a LangGraph server.

A newcomer points an endpoint at an agent as it is served and picks the protocol they know; the
answer then fails to read ("not JSON", HTTP 405, "no choices"). `recognise` looks at the answer's
status, headers and first bytes for the marks each protocol leaves, and names what it found and
the protocol to write; the run's error says it and `ask` prints the endpoint block to paste. Only
marks that no other protocol's answer carries are read, so a guess is never offered as a finding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from specengine.errors import EndpointError
from specengine.untrusted_json import read_json

SNIFF_CHARS = 4000  # how much of a body is looked at
_AG_UI = re.compile(
    r'"type"\s*:\s*"(RUN_STARTED|RUN_FINISHED|RUN_ERROR|TEXT_MESSAGE_(START|CONTENT)|TOOL_CALL_START)"'
)
_ADK_EVENT = re.compile(r'"invocationId"\s*:.*"author"\s*:|"author"\s*:.*"invocationId"\s*:', re.S)
_ADK_FIELDS = frozenset({"appName", "app_name", "userId", "user_id", "sessionId", "session_id", "newMessage"})
_AG_UI_FIELDS = frozenset({"threadId", "runId", "forwardedProps"})
_CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


@dataclass(frozen=True)
class Found:
    """Another protocol's answer: what it is, the protocol to write, and the endpoint block's fields."""

    what: str
    protocol: str
    block: Mapping[str, Any] = field(default_factory=dict)

    def sentence(self) -> str:
        return f"this is {self.what}: write protocol: {self.protocol}"


def recognise(protocol: str, url: str, status: int, headers: Mapping[str, str], text: str) -> Found | None:
    """What answered, when it is recognisably another protocol than `protocol`; else None."""
    found = _found(url, status, {k.lower(): v for k, v in headers.items()}, text)
    return found if found is not None and found.protocol != protocol else None


def with_finding(error: EndpointError, found: Found | None) -> EndpointError:
    """The error with the finding added to its message (unchanged without one)."""
    if found is None:
        return error
    error.message = f"{error.message} ({found.sentence()})"
    error.args = (error.message,)
    return error


def _found(url: str, status: int, headers: Mapping[str, str], text: str) -> Found | None:
    origin = _origin(url)
    path = urlsplit(url).path.rstrip("/")
    start = text[:SNIFF_CHARS]
    if "x-vercel-ai-ui-message-stream" in headers:
        return Found("an AI SDK UI message stream (a useChat route)", "ai-sdk", {"url": url})
    if _AG_UI.search(start) or (status == 422 and _names_fields(text, _AG_UI_FIELDS)):
        return Found("an AG-UI event stream", "ag-ui", {"url": url})
    if any(path.endswith(card) for card in _CARD_PATHS):
        return Found("an A2A agent card, which is read, not posted to", "a2a", {"url": url})
    if "content-location" in headers and "/runs/" in headers["content-location"]:
        return Found("a LangGraph server's run", "langgraph", {"url": origin, "assistant_id": "GRAPH_ID"})
    if _ADK_EVENT.search(start) or (status == 422 and _names_fields(text, _ADK_FIELDS)):
        return Found("a Google ADK server (adk api_server)", "adk", {"url": origin, "app_name": "APP_NAME"})
    data = _json(text)
    if not isinstance(data, Mapping):
        return None
    if data.get("jsonrpc") == "2.0" and ("result" in data or "error" in data):
        return Found("an A2A (JSON-RPC) agent's answer", "a2a", {"url": url})
    if "supportedInterfaces" in data or {"skills", "capabilities"} <= set(data):
        return Found("an A2A agent card", "a2a", {"url": url})
    if "__error__" in data or data.get("detail") == "Thread or assistant not found.":
        return Found("a LangGraph server", "langgraph", {"url": origin, "assistant_id": "GRAPH_ID"})
    return None


def _names_fields(text: str, fields: frozenset[str]) -> bool:
    """A pydantic 422 whose fields in error are among `fields` (another protocol's request): FastAPI's
    `{"detail": [...]}` or the bare list of errors Starlette apps answer (pydantic-ai's AG-UI route)."""
    data = _json(text)
    detail = data.get("detail") if isinstance(data, Mapping) else data
    locations = (
        [item.get("loc") for item in detail if isinstance(item, Mapping)] if isinstance(detail, list) else []
    )
    return any(isinstance(loc, list) and fields & set(map(str, loc)) for loc in locations)


def _json(text: str) -> Any:
    try:
        return read_json(text)
    except ValueError:  # not JSON, or nested too deep to be any protocol's answer
        return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else url
