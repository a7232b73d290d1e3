"""The one interface every agent protocol implements, and the plain data a turn produces.

An adapter turns "send this user message in this conversation" into HTTP for its protocol and returns
a `Turn`. The runner never knows which protocol it talks to. Transport faults raise `EndpointError`
(the trial becomes `error`); an error reported inside a well-formed response is a `Turn` with
`error` set (the reply is what was received, `succeeded` fails, other checks still run).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from specengine.errors import EndpointError
from specengine.plan import EndpointConfig
from specengine.retry import is_retryable_status, retry_after_seconds
from specengine.transcript import Turn

if TYPE_CHECKING:
    import httpx

BODY_EXCERPT = 200


class Conversation:
    """One conversation with the agent: keeps history or session ids between turns."""

    async def send(self, message: str) -> Turn:
        raise NotImplementedError


class Adapter:
    """A protocol bound to one endpoint and one shared httpx.AsyncClient."""

    protocol: ClassVar[str] = ""

    def __init__(self, config: EndpointConfig, client: httpx.AsyncClient):
        self.config = config
        self.client = client

    def conversation(self, variables: Mapping[str, Any] | None = None) -> Conversation:
        """A new conversation; `variables` are the case's template variables (input, expected, metadata),
        for protocols whose requests are templates (`http`)."""
        raise NotImplementedError


def body_excerpt(text: str) -> str:
    """The first BODY_EXCERPT characters of a body, white space folded: enough to recognise it by."""
    return " ".join(text.split())[:BODY_EXCERPT]


def not_json(what: str, text: str) -> EndpointError:
    """The error for a body, stream chunk or event that should be JSON and is not; `what` names it."""
    return EndpointError("InvalidJSON", f"{what} is not JSON: {body_excerpt(text)!r}")


def parse_json(text: str, what: str) -> Any:
    """JSON text parsed; anything else is not_json(what, text)."""
    try:
        return json.loads(text)
    except ValueError:
        raise not_json(what, text) from None


def status_error(response: httpx.Response, text: str) -> EndpointError:
    """The error for a non-2xx answer: status and the first 200 characters of the body."""
    excerpt = body_excerpt(text)
    retryable = is_retryable_status(response.status_code)
    return EndpointError(
        "HTTPStatusError",
        f"HTTP {response.status_code} from {response.request.url}: {excerpt}".rstrip(": "),
        retryable=retryable,
        retry_after=retry_after_seconds(response.headers) if retryable else None,
        status=response.status_code,
    )


def transport_error(exc: Exception) -> EndpointError:
    """Wrap an httpx transport exception; connection problems are retryable."""
    import httpx

    kind = type(exc).__name__
    detail = str(exc) or kind
    if isinstance(exc, httpx.TimeoutException):
        return EndpointError(kind, f"request timed out: {detail}", retryable=True)
    if isinstance(exc, httpx.ConnectError):  # the first thing a newcomer meets: say where and what to check
        url = _request_url(exc)
        where = f" to {url}" if url else ""
        message = (
            f"could not connect{where}: is the agent running, and is the endpoint's url right? ({detail})"
        )
        return EndpointError(kind, message, retryable=True)
    return EndpointError(kind, detail, retryable=isinstance(exc, httpx.TransportError))


def _request_url(exc: Exception) -> str | None:
    """The URL of the request an httpx error belongs to, when it has one."""
    try:
        return str(exc.request.url)  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # httpx raises RuntimeError when no request is attached
        return None


async def post_json(
    client: httpx.AsyncClient, config: EndpointConfig, body: Any, url: str | None = None
) -> tuple[Any, float]:
    """POST a JSON body and parse the JSON answer; returns (data, latency in seconds)."""
    import httpx

    started = time.perf_counter()
    try:
        response = await client.post(
            url or config.url or "", json=body, headers=dict(config.headers), timeout=config.timeout
        )
    except httpx.HTTPError as exc:
        raise transport_error(exc) from None
    latency = time.perf_counter() - started
    if response.status_code >= 300:
        raise status_error(response, response.text)
    try:
        return response.json(), latency
    except ValueError:
        raise not_json("the response body", response.text) from None


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """Tool-call arguments arrive as a JSON string in every protocol; parse them, note when bad."""
    if raw is None or raw == "":
        return {}, None
    if not isinstance(raw, str):
        return raw, None
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return {}, f"arguments were not valid JSON ({exc.msg}): {raw[:BODY_EXCERPT]!r}"


async def iter_sse(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """Server-sent events as (event, data) pairs; comments and keep-alives are skipped."""
    event: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
    if data:
        yield event or "message", "\n".join(data)


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


def invalid(problem: str, data: Any) -> EndpointError:
    """A well-formed JSON answer without what the protocol needs: the problem and the body's start."""
    excerpt = json.dumps(data, ensure_ascii=False, default=str)[:BODY_EXCERPT]
    return EndpointError("InvalidResponse", f"{problem}: {excerpt}")
