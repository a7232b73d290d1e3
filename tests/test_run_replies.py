"""Replies are bounded: an answer past `max_reply_bytes` errors its trial, an endless stream ends at
the trial's deadline, and results keep an excerpt of any huge text. Also the transport a run sends
through: the same bytes on the wire and the same faults as plain httpx."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from support.runs import check, run_spec, setup_project
from support.servers import Reply

from specengine.endpoints.base import request_json
from specengine.endpoints.openai_chat import OpenAIChatAdapter
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig
from specengine.results.writer import TEXT_EXCERPT
from specengine.transport.endpoint_client import EndpointClient
from specengine.transport.limits import size_text

COMPLETION = {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}


class RawServer:
    """A loopback server that answers every request by calling `answer(connection)` on the socket,
    after reading the request head and body; for answers no well-behaved server sends."""

    def __init__(self, answer: Callable[[socket.socket], None]):
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1/chat/completions"
        self.bodies: list[bytes] = []
        self.heads: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            length = int(lengths[0].split(b":")[1]) if lengths else 0
            while len(body) < length:
                body += connection.recv(65536)
            self.heads.append(head)
            self.bodies.append(body)
            self.answer(connection)

    def close(self) -> None:
        self.listener.close()


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[RawServer]:
    server = RawServer(answer)
    try:
        yield server
    finally:
        server.close()


def chunked_json(total: int) -> Callable[[socket.socket], None]:
    """A JSON completion whose content makes the body `total` bytes, sent chunked (no length)."""

    def answer(connection: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        connection.sendall(head)
        prefix = b'{"choices": [{"message": {"role": "assistant", "content": "'
        pieces = [prefix] + [b"x" * 65536] * (total // 65536 + 1) + [b'"}}]}']
        for piece in pieces:
            connection.sendall(b"%X\r\n%s\r\n" % (len(piece), piece))
        connection.sendall(b"0\r\n\r\n")

    return answer


def endless_events(connection: socket.socket) -> None:
    """An event stream that never ends: a content delta every 20 ms."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    connection.sendall(head)
    delta = json.dumps({"choices": [{"index": 0, "delta": {"content": "more "}}]})
    event = f"data: {delta}\n\n".encode()
    while True:
        connection.sendall(b"%X\r\n%s\r\n" % (len(event), event))
        time.sleep(0.02)


def test_size_text_reads_as_people_write_sizes():
    assert size_text(10_000_000) == "10 MB"
    assert size_text(50_000) == "50 kB"
    assert size_text(1_500) == "1.5 kB"
    assert size_text(512) == "512 bytes"


@pytest.mark.parametrize(
    ("limit", "stream"),
    [
        pytest.param(50_000, False, id="json-with-length"),
        pytest.param(50_000, True, id="event-stream"),
    ],
)
def test_an_answer_past_max_reply_bytes_errors_its_trial_and_is_not_retried(
    agent_server, tmp_path, limit, stream
):
    big = "x" * 200_000
    agent_server.script({"big": Reply(content=big), "small": "fine"})
    setup_project(tmp_path, agent_server, max_reply_bytes=limit, stream=stream)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: big, send: big, expect: [succeeded]}
          - {name: small, send: small, expect: [{includes: fine}]}
        """,
    )
    assert run.exit_code == 1, run.cli.output
    error = run.case("big")["error"]
    assert error["type"] == "ReplyTooLarge"
    assert error["message"].startswith("reply larger than 50 kB")
    assert run.case("big")["trials"][0].get("attempts", 1) == 1  # the same answer would come again
    assert run.status("small") == "passed"


def test_the_default_limit_is_10_mb_and_holds_for_a_body_without_a_length(tmp_path):
    with raw_server(chunked_json(11_000_000)) as server:
        setup_project(tmp_path, _Endpoint(server.url))
        run = run_spec(tmp_path, "evals: [{name: huge, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 1, run.cli.output
    error = run.case("huge")["error"]
    assert error["type"] == "ReplyTooLarge"
    assert error["message"].startswith("reply larger than 10 MB")


def test_an_answer_just_under_the_limit_is_read_whole(tmp_path):
    with raw_server(chunked_json(300_000)) as server:
        setup_project(tmp_path, _Endpoint(server.url), max_reply_bytes=400_000)
        run = run_spec(tmp_path, "evals: [{name: fits, send: hi, expect: [{matches: 'x{300000}'}]}]")
    assert run.exit_code == 0, run.cli.output


def test_a_stream_that_never_ends_is_cut_by_the_trial_deadline(tmp_path):
    with raw_server(endless_events) as server:
        setup_project(tmp_path, _Endpoint(server.url), stream=True)
        run = run_spec(tmp_path, "evals: [{name: endless, timeout: 1, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 1, run.cli.output
    error = run.case("endless")["error"]
    assert error["type"] == "TimeoutError"
    assert "case exceeded 1 s" in error["message"]


def test_results_keep_an_excerpt_of_a_huge_reply_with_its_length_and_checks_see_it_whole(
    agent_server, tmp_path
):
    reply = "a" * 150_000 + "THE END"
    agent_server.script(lambda messages: reply)
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, "evals: [{name: long, send: hi, expect: [{includes: THE END}]}]")
    assert run.exit_code == 0, run.cli.output
    case = run.case("long")
    assert check(case, 'includes "THE END"')["status"] == "passed"
    stored = case["trials"][0]["transcript"][1]["content"]
    assert stored.startswith("a" * TEXT_EXCERPT)
    assert stored.endswith(f"… [cut: {len(reply):,} characters in all]")
    assert "THE END" not in stored


class _Endpoint:
    """An openai-chat endpoint at a raw server's URL, in the shape setup_project takes."""

    def __init__(self, url: str):
        self.url = url

    def endpoint(self, **extra: Any) -> dict[str, Any]:
        return {"protocol": "openai-chat", "url": self.url, "retries": 0, **extra}


# --- the transport, held to plain httpx ---------------------------------------------------------


def _send_both(url: str, body: Any, **config: Any) -> list[Any]:
    """request_json through a plain httpx client, then through a run's EndpointClient: each answer,
    or the EndpointError it raised."""
    endpoint = EndpointConfig(name="agent", protocol="openai-chat", url=url, **config)

    async def send(make_client: Callable[[], Any]) -> Any:
        async with make_client() as client:  # an aiohttp session needs the running loop
            try:
                return await request_json(OpenAIChatAdapter(endpoint, client), body)
            except EndpointError as exc:
                return exc

    return [
        asyncio.run(send(httpx.AsyncClient)),
        asyncio.run(send(lambda: EndpointClient(url, 2, endpoint.timeout))),
    ]


def _ok(connection: socket.socket) -> None:
    payload = json.dumps(COMPLETION).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Seen: 1\r\nX-Seen: 2\r\n"
    connection.sendall(head + b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "messages": [{"role": "user", "content": "héllo \u2028 ☃"}]},
        {"model": "m", "nested": {"list": [1, 2.5, None, True]}, "empty": {}},
    ],
)
def test_a_run_sends_the_bytes_httpx_sends_and_reads_the_same_answer(body):
    with raw_server(_ok) as server:
        plain, fast = _send_both(server.url, body, headers={"Authorization": "Bearer k"})
    assert (
        server.bodies[0]
        == server.bodies[1]
        == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    )
    for head in server.heads:
        assert b"content-type: application/json" in head.lower()
        assert b"authorization: bearer k" in head.lower()
    assert (plain.data, plain.text, plain.status) == (fast.data, fast.text, fast.status)
    assert plain.headers["x-seen"] == fast.headers["x-seen"] == "1, 2"


def _drop(connection: socket.socket) -> None:
    connection.shutdown(socket.SHUT_RDWR)


def _slow(connection: socket.socket) -> None:
    time.sleep(1.0)


def _status(connection: socket.socket) -> None:
    payload = b'{"error": "busy"}'
    head = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 7\r\n"
    connection.sendall(head + b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))


@pytest.mark.parametrize(
    ("answer", "config", "kind"),
    [
        pytest.param(_drop, {}, "RemoteProtocolError", id="dropped"),
        pytest.param(_slow, {"timeout": 0.2}, "ReadTimeout", id="read-timeout"),
        pytest.param(_status, {}, "HTTPStatusError", id="status"),
        pytest.param(chunked_json(100_000), {"max_reply_bytes": 10_000}, "ReplyTooLarge", id="too-large"),
    ],
)
def test_a_run_reports_each_fault_as_plain_httpx_does(answer, config, kind):
    with raw_server(answer) as server:
        plain, fast = _send_both(server.url, {"model": "m"}, **config)
    assert isinstance(plain, EndpointError) and isinstance(fast, EndpointError)
    assert plain.kind == fast.kind == kind
    assert plain.retryable == fast.retryable
    assert plain.retry_after == fast.retry_after
    assert plain.message == fast.message or kind in ("RemoteProtocolError", "ReadTimeout")


def test_a_refused_connection_is_a_connect_error_either_way(free_port):
    plain, fast = _send_both(f"http://127.0.0.1:{free_port}/v1/chat/completions", {"model": "m"})
    assert plain.kind == fast.kind == "ConnectError"
    assert plain.retryable and fast.retryable
    assert f"could not connect to http://127.0.0.1:{free_port}/v1/chat/completions" in fast.message


# --- the run's own JSON encoding and header reading, held to httpx's -----------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from specengine.transport.endpoint_client import request_bytes  # noqa: E402
from specengine.transport.http_basics import JoinedHeaders  # noqa: E402

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_JSON_VALUES)
def test_a_json_body_is_the_bytes_httpx_sends(body):
    sent = httpx.Request("POST", "http://127.0.0.1/", json=body).content
    assert (request_bytes(body) or b"") == sent


_HEADER_NAMES = st.sampled_from(["Retry-After", "retry-after", "X-Seen", "Set-Cookie", "Content-Type"])
_HEADER_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=6))
def test_answer_headers_read_as_httpx_reads_them(pairs):
    raw = tuple((name.encode(), value.encode()) for name, value in pairs)
    ours, theirs = JoinedHeaders(raw), httpx.Headers(list(raw))
    assert dict(ours.items()) == dict(theirs.items())
    for name, _ in pairs:
        assert ours.get(name) == theirs.get(name)
