"""The one interface every agent protocol implements, and the HTTP and reading they all share.

An adapter turns "send this user message in this conversation" into HTTP for its protocol and returns
a `Turn`. The runner never knows which protocol it talks to. Transport faults raise `EndpointError`
(the trial becomes `error`); an error reported inside a well-formed response is a `Turn` with
`error` set (the reply is what was received, `succeeded` fails, other checks still run).

Every adapter sends through `request_json` (one JSON answer) or `post_events` (an event stream:
server-sent events read with httpx-sse, or newline-delimited JSON), each with `request_headers`,
so a status, a dropped connection or a body that is not JSON means the same thing, in the same
words, whatever the protocol. Both mask the endpoint's secrets in what they read before anything is
parsed or cut from it (an excerpt cut first would keep the part of a key before the cut, where
redaction no longer sees it). Both read at most the endpoint's `max_reply_bytes`. The client is a
run's EndpointClient (specengine/transport/endpoint_client.py: the endpoint's aiohttp session, with httpx
over it for streams) or an httpx.AsyncClient (`ask` records the exchanges of one over the same
transport); the two send the same bytes and name faults alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from specengine.endpoints.recognise import recognise, with_finding
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig
from specengine.redact import redact
from specengine.retry import is_retryable_status, retry_after_seconds
from specengine.transcript import ToolCall, Turn
from specengine.transport.endpoint_client import EndpointClient
from specengine.transport.http_basics import RawAnswer, fault
from specengine.untrusted_json import JSONTooDeep, read_json

if TYPE_CHECKING:
    import httpx

BODY_EXCERPT = 200
DRAIN_S = 0.5  # how long a stream is read past its last event, so its connection can be reused


class Conversation:
    """One conversation with the agent: keeps history or session ids between turns."""

    async def send(self, message: str) -> Turn:
        raise NotImplementedError

    def override_tools(self, overrides: Mapping[str, Any]) -> None:
        """An eval's `tools: {NAME: {returns: …}}`: results replaced for this conversation. Only
        protocols that run declared tools (a model's endpoint) have any to replace."""


class Adapter:
    """A protocol bound to one endpoint and one shared client: a run's EndpointClient, or any
    httpx.AsyncClient."""

    protocol: ClassVar[str] = ""

    def __init__(self, config: EndpointConfig, client: EndpointClient | httpx.AsyncClient):
        self.config = config
        self.client = client

    def conversation(self, variables: Mapping[str, Any] | None = None) -> Conversation:
        """A new conversation; `variables` are the case's template variables (input, expected, metadata),
        for protocols whose requests are templates (`http`)."""
        raise NotImplementedError

    def notes(self) -> list[str]:
        """What the adapter learned about the endpoint that its author should know (`ask` prints
        them): an A2A agent card it read, for one."""
        return []

    def problem(self, text: str) -> EndpointError:
        """A mistake in the endpoint's own settings: not retryable, names the endpoint."""
        return EndpointError("EndpointConfigError", f"endpoint '{self.config.name}': {text}")


# --- sending -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsonAnswer:
    """A 2xx answer whose body is JSON: the parsed body, its text, and what came with it."""

    data: Any
    text: str
    status: int
    headers: Mapping[str, str]
    latency_s: float


class StreamFold:
    """What every reader of a streamed answer keeps besides what the events add up to: `started`, when
    the request left (`time.perf_counter()`), and `ttft`, the seconds to the first token (`Turn.ttft_s`)."""

    def __init__(self, started: float):
        self.started = started
        self.ttft: float | None = None

    def first_token(self) -> None:
        """The answer's text or a tool call arrived: the first one is the time to the first token."""
        if self.ttft is None:
            self.ttft = time.perf_counter() - self.started


def request_headers(config: EndpointConfig) -> Mapping[str, str]:
    """The endpoint's headers for one request, with fresh credentials when it signs its requests
    (`auth: databricks`: OAuth tokens expire, so they are asked for each time)."""
    if config.auth is None:
        return config.headers
    return {**config.headers, **config.auth.headers()}


async def request_json(
    adapter: Adapter,
    body: Any,
    method: str = "POST",
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JsonAnswer:
    """Send a JSON body to `url` (default: the endpoint's URL), with the protocol's own `headers`
    beside the endpoint's; the answer must be 2xx JSON (else EndpointError).

    A run's EndpointClient sends it straight through its aiohttp session; an httpx client sends it
    as usual. Either way at most `max_reply_bytes` of the answer are read.
    """
    config = adapter.config
    client = adapter.client
    target = url or config.url or ""
    sent = {**request_headers(config), **(headers or {})}
    started = time.perf_counter()
    if isinstance(client, EndpointClient):
        answer = await client.send_json(method, target, body, sent, config.timeout, config.max_reply_bytes)
    else:
        answer = await _request_with_httpx(client, method, target, config, body, sent)
    latency = time.perf_counter() - started
    text = redact(answer.text, config.secrets)  # before any excerpt is cut from it
    if answer.status >= 300:
        error = status_error(answer.status, str(answer.url), answer.headers, text)
        raise found_in(adapter, error, target, answer.status, answer.headers, text)
    try:
        data = parse_json(text, "the response body")
    except EndpointError as error:
        raise found_in(adapter, error, target, answer.status, answer.headers, text) from None
    return JsonAnswer(data, text, answer.status, answer.headers, latency)


async def _request_with_httpx(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    config: EndpointConfig,
    body: Any,
    sent: Mapping[str, str],
) -> RawAnswer:
    import httpx

    from specengine.transport.httpx_transport import bound_body

    headers = dict(sent)
    try:
        async with client.stream(method, url, json=body, headers=headers, timeout=config.timeout) as response:
            bound_body(response, config.max_reply_bytes)
            await response.aread()
            return RawAnswer(response.status_code, response.request.url, response.headers, response.text)
    except httpx.HTTPError as exc:
        raise transport_error(exc) from None


NDJSON_TYPES = ("ndjson", "jsonl", "jsonlines", "json-seq", "stream+json")  # newline-delimited JSON


def stream_kind(content_type: str) -> str | None:
    """ "sse" or "ndjson" for a content type that is an event stream, "json" for one JSON body,
    None for anything else. Newline-delimited JSON types also contain "json": they are named first."""
    lowered = content_type.lower()
    if "text/event-stream" in lowered:
        return "sse"
    if any(kind in lowered for kind in NDJSON_TYPES):
        return "ndjson"
    if "json" in lowered:
        return "json"
    return None


async def post_events(
    adapter: Adapter,
    body: Any,
    feed: Callable[[str, str], bool],
    started: float,
    url: str | None = None,
    *,
    method: str = "POST",
    opened: Callable[[int, Mapping[str, str]], None] | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[Any, float]:
    """Send a JSON body asking for an event stream and feed each `(event, data)` to `feed`.

    The one reader of every streamed protocol. The answer may be server-sent events (read with
    httpx-sse: `event` is the event's name, "message" when it has none) or newline-delimited JSON
    (each non-blank line is one event named "message"); its Content-Type says which. Reading stops
    when `feed` returns True or the stream ends. A server that ignores the request for a stream
    and answers one JSON body is accepted: its parsed body is returned instead of None, for the
    caller to read as a non-streamed answer. `opened`, when given, is called with the status and
    the answer's headers (lower-case names) before the first event.

    Bounds: at most the endpoint's `max_reply_bytes` are read, a stream's included; each read
    waits at most the endpoint's `timeout`, and the whole turn is bounded by the case's timeout
    (the scheduler's deadline), so a stream that trickles forever ends the trial.

    Returns (JSON body or None, latency): the latency runs from `started` (the clock the caller's
    time to first token also reads) to the last event read. `url` defaults to the endpoint's URL;
    `headers` are the protocol's own, sent beside the endpoint's.
    """
    import httpx

    from specengine.transport.httpx_transport import bound_body

    config = adapter.config
    client = adapter.client
    http = client.httpx_client() if isinstance(client, EndpointClient) else client
    sent = {"Accept": "text/event-stream, application/x-ndjson", **request_headers(config), **(headers or {})}
    try:
        async with http.stream(
            method, url or config.url or "", json=body, headers=sent, timeout=config.timeout
        ) as response:
            bound_body(response, config.max_reply_bytes)
            target = str(response.request.url)
            if response.status_code >= 300:
                text = redact(await _read_text(response), config.secrets)
                error = status_error(response.status_code, target, response.headers, text)
                raise found_in(adapter, error, target, response.status_code, response.headers, text)
            content_type = response.headers.get("content-type", "")
            kind = stream_kind(content_type)
            if opened is not None:
                opened(response.status_code, {key.lower(): value for key, value in response.headers.items()})
            if kind == "json":
                text = redact(await _read_text(response), config.secrets)
                return parse_json(text, "the response body"), time.perf_counter() - started
            if kind is None:
                text = redact(await _read_text(response), config.secrets)
                excerpt = body_excerpt(text)
                error = EndpointError(
                    "InvalidResponse",
                    "expected an event stream (text/event-stream or application/x-ndjson), got "
                    + (content_type or "no content type")
                    + (f": {excerpt!r}" if excerpt else ""),
                )
                raise found_in(adapter, error, target, response.status_code, response.headers, text)
            found = recognise(adapter.protocol, target, 200, response.headers, "")
            if found is not None and adapter.protocol != "http":  # `http` may read any stream it declares
                raise with_finding(
                    EndpointError("InvalidResponse", "the answer is another protocol's stream"), found
                )
            events = _sse_events(response) if kind == "sse" else _ndjson_events(response)
            async for event, data in events:
                if feed(event, redact(data, config.secrets) if config.secrets else data):
                    latency = time.perf_counter() - started
                    await _drain(events)
                    return None, latency
    except httpx.HTTPError as exc:
        raise transport_error(exc) from None
    return None, time.perf_counter() - started


async def _sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event name, data) of each server-sent event that carries data; "message" when it is not
    named (an id or retry field alone, or an empty event, carries nothing to read)."""
    from httpx_sse import EventSource

    async for sse in EventSource(response).aiter_sse():
        if sse.data:
            yield sse.event or "message", sse.data


async def _ndjson_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """("message", line) of each non-blank line of a newline-delimited JSON stream."""
    async for line in response.aiter_lines():
        if line.strip():
            yield "message", line


async def _read_text(response: httpx.Response) -> str:
    return (await response.aread()).decode("utf-8", "replace")


async def _drain(events: AsyncIterator[Any]) -> None:
    """Read what follows a terminal event for a moment, so the connection can be reused.

    A server that keeps the stream open after it must not hold the turn: after DRAIN_S the rest
    is dropped with the connection.
    """

    async def exhaust() -> None:
        async for _ in events:
            pass

    with contextlib.suppress(Exception):  # timeout or a broken tail: the turn is complete either way
        await asyncio.wait_for(exhaust(), timeout=DRAIN_S)


# --- faults --------------------------------------------------------------------------------------


def body_excerpt(text: str) -> str:
    """The first BODY_EXCERPT characters of a body, white space folded: enough to recognise it by."""
    return " ".join(text.split())[:BODY_EXCERPT]


def not_json(what: str, text: str) -> EndpointError:
    """The error for a body, stream chunk or event that should be JSON and is not; `what` names it."""
    return EndpointError("InvalidJSON", f"{what} is not JSON: {body_excerpt(text)!r}")


def parse_json(text: str, what: str) -> Any:
    """JSON text parsed; anything else is not_json(what, text)."""
    try:
        return read_json(text)
    except JSONTooDeep as exc:
        raise EndpointError("InvalidJSON", f"{what} is {exc.msg}") from None
    except ValueError:
        raise not_json(what, text) from None


def event_json(event: str, data: str) -> tuple[Any, str | None]:
    """(the JSON of an SSE event's data, None), or (None, the text) for an `error` event whose data
    is plain text; any other event that is not JSON is not_json."""
    try:
        return read_json(data), None
    except JSONTooDeep as exc:
        raise EndpointError("InvalidJSON", f"a stream event is {exc.msg}") from None
    except ValueError:
        if event == "error":
            return None, data.strip() or "error event"
        raise not_json("a stream event", data) from None


def found_in(
    adapter: Adapter, error: EndpointError, url: str, status: int, headers: Mapping[str, str], text: str
) -> EndpointError:
    """The error, saying which other protocol answered when the answer shows it (recognise.py)."""
    return with_finding(error, recognise(adapter.protocol, url, status, headers, text))


def invalid(problem: str, data: Any) -> EndpointError:
    """A well-formed JSON answer without what the protocol needs: the problem and the body's start."""
    excerpt = json.dumps(data, ensure_ascii=False, default=str)[:BODY_EXCERPT]
    return EndpointError("InvalidResponse", f"{problem}: {excerpt}")


def status_error(status: int, url: str, headers: Mapping[str, str], text: str) -> EndpointError:
    """The error for a non-2xx answer: status and the first 200 characters of the body."""
    excerpt = body_excerpt(text)
    retryable = is_retryable_status(status)
    return EndpointError(
        "HTTPStatusError",
        f"HTTP {status} from {url}: {excerpt}".rstrip(": "),
        retryable=retryable,
        retry_after=retry_after_seconds(headers) if retryable else None,
        status=status,
        body=text,
    )


def transport_error(exc: httpx.HTTPError) -> EndpointError:
    """An httpx exception as the fault it names (transport.fault words it)."""
    import httpx

    kind = type(exc).__name__
    return fault(kind, str(exc) or kind, _request_url(exc), isinstance(exc, httpx.TransportError))


def _request_url(exc: httpx.HTTPError) -> str | None:
    """The URL of the request an httpx error belongs to, when it has one."""
    try:
        return str(exc.request.url)
    except RuntimeError:  # httpx raises it when no request is attached
        return None


# --- reading what every protocol carries ---------------------------------------------------------


def error_text(error: Any) -> str | None:
    """The text of an error value (a string, or an object with a message); None when there is none."""
    if error is None or error is False or error == "":
        return None
    if isinstance(error, str):
        return error
    if isinstance(error, Mapping):
        inner = error.get("error")
        if inner is not None and inner is not error and not error.get("message"):
            return error_text(inner)
        message = error.get("message")
        kind = error.get("code") or error.get("type")
        if message:
            return f"{kind}: {message}" if kind and kind != "error" else str(message)
    return json.dumps(error, ensure_ascii=False, default=str)[:BODY_EXCERPT]


def content_text(content: Any) -> str:
    """A chat message's content as text: None is empty, a list of parts is joined from its texts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """Tool-call arguments arrive as a JSON string in every protocol; parse them, note when bad.

    Control characters inside strings are allowed: a model's raw line break in an argument is what it
    meant, not a reason to lose the call (`strict=False`)."""
    if raw is None or raw == "":
        return {}, None
    if not isinstance(raw, str):
        return raw, None
    try:
        return read_json(raw, strict=False), None
    except json.JSONDecodeError as exc:
        return {}, f"arguments were not valid JSON ({exc.msg}): {raw[:BODY_EXCERPT]!r}"


def chat_tool_call(call: Mapping[str, Any]) -> ToolCall:
    """A tool call as chat messages carry it (`{id, function: {name, arguments}}`), or flat
    (`{name, arguments}`); `args` is accepted for `arguments`, `call_id` for `id`."""
    function = call.get("function")
    fields = function if isinstance(function, Mapping) else call
    args, note = parse_arguments(fields.get("arguments", fields.get("args")))
    call_id = call.get("id") or call.get("call_id")
    return ToolCall(
        name=str(fields.get("name") or ""), args=args, id=str(call_id) if call_id else None, note=note
    )


def usage_of(data: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The token usage an answer reports, when it reports one."""
    usage = data.get("usage")
    return usage if isinstance(usage, Mapping) else None
