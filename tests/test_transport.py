"""The wire (specengine/transport/): every request through the endpoint's aiohttp session.

`send_json` (what JSON turns take) and the httpx client over the same session (what event streams,
`ask` and the judge take, through httpx-aiohttp's transport) are each run against a scripted raw
server (support.raw_http_server): answers read alike, every fault named and worded alike, and each
reply bounded while it is read, decoded bytes included. The last tests run `specengine run` against
a hostile server serving a 1 GB gzip bomb, a 1 GB brotli bomb and a 100 MB header line.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.cli import REPO_ROOT, write_project, write_spec
from support.raw_http_server import (
    Action,
    RawHTTPServer,
    RawRequest,
    chunked,
    echo,
    hang_up,
    http_answer,
    reply,
    self_signed_tls,
    stall,
)

from specengine.endpoints.base import transport_error
from specengine.errors import EndpointError
from specengine.transport.endpoint_client import EndpointClient
from specengine.transport.http_basics import RawAnswer

LIMIT = 10**7
BODY = b'{"reply":"ok"}'
JSON = ("Content-Type", "application/json")
Scenario = Callable[[EndpointClient, RawHTTPServer], Awaitable[Any]]


def on_the_wire(
    routes: Mapping[str, Action],
    scenario: Scenario,
    *,
    connections: int = 2,
    timeout: float = 5.0,
    limit: int = LIMIT,
    tls: ssl.SSLContext | None = None,
) -> tuple[Any, RawHTTPServer]:
    """What `scenario` returned against a fresh server, and the server (stopped by then, its records
    kept). Closing the client closes every connection it opened."""
    with RawHTTPServer(routes, tls=tls) as server:

        async def main() -> tuple[Any, bool]:
            async with EndpointClient(server.url, connections, timeout, limit) as client:
                result = await scenario(client, server)
            server.release()  # a stalled answer goes out, so that its connection can end
            return result, await asyncio.to_thread(server.wait_closed, server.accepted, 2.0)

        result, all_closed = asyncio.run(main())
        assert all_closed, f"{server.accepted - server.closed} connection(s) open after aclose"
    return result, server


async def attempt(
    client: EndpointClient,
    url: str,
    *,
    method: str = "POST",
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 5.0,
    limit: int = LIMIT,
) -> RawAnswer | BaseException:
    """The answer of one send_json, or what it raised."""
    try:
        return await client.send_json(method, url, body, headers or {}, timeout, limit)
    except Exception as exc:
        return exc


async def through_httpx(client: EndpointClient, url: str, *, body: Any = None) -> RawAnswer | BaseException:
    """The answer of one request through the client's httpx client, read whole, or the
    EndpointError its fault becomes (as endpoints.base words an httpx fault)."""
    try:
        async with client.httpx_client().stream("POST", url, json=body) as response:
            await response.aread()
            return RawAnswer(response.status_code, response.url, response.headers, response.text)
    except httpx.HTTPError as exc:
        return transport_error(exc)
    except Exception as exc:
        return exc


def outcome(result: Any, origin: str = "") -> tuple[Any, ...]:
    """An answer's status, final URL (`origin` shown as ORIGIN), headers and text; an
    EndpointError's kind and retryability; another exception's type."""
    if isinstance(result, RawAnswer):
        url = str(result.url).replace(origin, "ORIGIN") if origin else str(result.url)
        return ("answer", result.status, url, dict(result.headers), result.text)
    if isinstance(result, EndpointError):
        return ("fault", result.kind, result.retryable)
    if isinstance(result, BaseException):
        return ("raised", type(result).__name__)
    return ("value", result)


# --- one answer, then a follow-up on the same session ---------------------------------------------

OK = reply(http_answer(200, b'{"follow":"up"}', [JSON]))
GZIPPED_BIG = gzip.compress(b"x" * 50_000)
RAW_DEFLATE = zlib.compressobj(wbits=-zlib.MAX_WBITS)
RAW_DEFLATED = RAW_DEFLATE.compress(BODY) + RAW_DEFLATE.flush()
CHUNKED = ("Transfer-Encoding", "chunked")


def _answer(status: int, text: str, **headers: str) -> tuple[str, int, str, dict[str, str]]:
    return ("answer", status, text, headers)


# (the action answering POST /case, the limit, what the aiohttp path ends with: ("answer", status,
# text, headers it must hold) or ("fault", kind))
ONE_ANSWER_CASES = [
    pytest.param(reply(http_answer(200, BODY, [JSON])), LIMIT, _answer(200, '{"reply":"ok"}'), id="length"),
    pytest.param(
        reply(http_answer(200, chunked(b'{"reply"', b':"ok"}'), [JSON, CHUNKED], length=False)),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="chunked",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Connection", "close")], length=False), close=True),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="delimited-by-close",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Connection", "close")]), close=True),
        LIMIT,
        _answer(200, '{"reply":"ok"}', connection="close"),
        id="connection-close-with-length",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON], version="HTTP/1.0"), close=True),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="http-1.0",
    ),
    pytest.param(
        reply(http_answer(200, gzip.compress(BODY), [JSON, ("Content-Encoding", "gzip")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}', **{"content-encoding": "gzip"}),
        id="gzip",
    ),
    pytest.param(
        reply(
            http_answer(
                200, chunked(gzip.compress(BODY)), [JSON, ("Content-Encoding", "gzip"), CHUNKED], length=False
            )
        ),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="gzip-chunked",
    ),
    pytest.param(
        reply(http_answer(200, zlib.compress(BODY), [JSON, ("Content-Encoding", "deflate")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="deflate",
    ),
    pytest.param(
        reply(http_answer(200, RAW_DEFLATED, [JSON, ("Content-Encoding", "deflate")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="raw-deflate",
    ),
    pytest.param(
        reply(
            http_answer(200, "café ß".encode("latin-1"), [("Content-Type", "text/plain; charset=latin-1")])
        ),
        LIMIT,
        _answer(200, "café ß"),
        id="charset-latin-1",
    ),
    pytest.param(
        reply(http_answer(200, b"\xff\xfe\xfd", [("Content-Type", "text/plain; charset=no-such-codec")])),
        LIMIT,
        _answer(200, "\ufffd\ufffd\ufffd"),
        id="unknown-charset",
    ),
    pytest.param(
        reply(http_answer(200, b'{"a":"\xff\xfeok"}', [("Content-Type", "application/json; charset=utf-8")])),
        LIMIT,
        _answer(200, '{"a":"\ufffd\ufffdok"}'),
        id="non-utf-8-bytes",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("X-A", "1"), ("x-a", "2"), ("X-Other", "  padded  ")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}', **{"x-a": "1, 2", "x-other": "padded"}),
        id="repeated-header",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("X-Name", "caf\xe9".encode("latin-1"))])),
        LIMIT,
        _answer(200, '{"reply":"ok"}', **{"x-name": "caf\xe9"}),
        id="latin-1-header-value",
    ),
    pytest.param(
        reply(http_answer(500, b'{"error":"busy"}', [JSON, ("Retry-After", "7")])),
        LIMIT,
        _answer(500, '{"error":"busy"}', **{"retry-after": "7"}),
        id="500-retry-after",
    ),
    pytest.param(reply(http_answer(204, length=False)), LIMIT, _answer(204, ""), id="204"),
    pytest.param(
        reply(b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok"),
        LIMIT,
        _answer(200, "ok"),
        id="no-reason-phrase",
    ),
    pytest.param(
        reply(b"HTTP/1.1 100 Continue\r\n\r\n" + http_answer(200, BODY, [JSON])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="interim-100",
    ),
    pytest.param(
        reply(http_answer(200, b"y" * 300_000, [("Content-Type", "text/plain")])),
        LIMIT,
        _answer(200, "y" * 300_000),
        id="300-kB-length",
    ),
    pytest.param(
        reply(http_answer(200, chunked(*[b"z" * 70_000] * 5), [CHUNKED], length=False)),
        LIMIT,
        _answer(200, "z" * 350_000),
        id="350-kB-chunked",
    ),
    pytest.param(reply(http_answer(200, b"x" * 1000)), 1000, _answer(200, "x" * 1000), id="length-at-limit"),
    pytest.param(
        reply(http_answer(200, chunked(b"x" * 600, b"x" * 400), [CHUNKED], length=False)),
        1000,
        _answer(200, "x" * 1000),
        id="chunked-at-limit",
    ),
    pytest.param(
        reply(http_answer(200, b"x" * 5000)), 1000, ("fault", "ReplyTooLarge"), id="length-over-limit"
    ),
    pytest.param(
        reply(http_answer(200, chunked(*[b"x" * 700] * 8), [CHUNKED], length=False)),
        1000,
        ("fault", "ReplyTooLarge"),
        id="chunked-over-limit",
    ),
    pytest.param(
        reply(http_answer(200, chunked(GZIPPED_BIG), [("Content-Encoding", "gzip"), CHUNKED], length=False)),
        1000,
        ("fault", "ReplyTooLarge"),
        id="gzip-chunked-decoded-over-limit",
    ),
    pytest.param(
        reply(http_answer(200, GZIPPED_BIG, [("Content-Encoding", "gzip")])),
        1000,
        ("fault", "ReplyTooLarge"),
        id="gzip-length-decoded-over-limit",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON])[:-5], close=True),
        LIMIT,
        ("fault", "RemoteProtocolError"),
        id="closed-mid-body",
    ),
    pytest.param(
        reply(http_answer(200, chunked(b"x" * 100, b"y" * 100), [CHUNKED], length=False)[:-20], close=True),
        LIMIT,
        ("fault", "RemoteProtocolError"),
        id="closed-mid-chunks",
    ),
    pytest.param(reply(b"HELLO\r\n\r\n"), LIMIT, ("fault", "RemoteProtocolError"), id="garbage"),
    pytest.param(
        reply(b"HELLO\r\n\r\n", close=True), LIMIT, ("fault", "RemoteProtocolError"), id="garbage-close"
    ),
    pytest.param(hang_up, LIMIT, ("fault", "RemoteProtocolError"), id="closed-without-answer"),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Connection", "close")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="connection-close-but-left-open",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Connection", "keep-alive")], version="HTTP/1.0")),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="http-1.0-keep-alive",
    ),
    pytest.param(
        reply(http_answer(200, gzip.compress(BODY), [JSON, ("Content-Encoding", "GZIP")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="gzip-upper-case",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Content-Encoding", "identity")])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="identity-encoding",
    ),
    pytest.param(
        reply(http_answer(200, b"not gzip at all", [("Content-Encoding", "gzip")])),
        LIMIT,
        ("fault", "RemoteProtocolError"),
        id="bad-gzip",
    ),
    pytest.param(
        reply(http_answer(200, b"", [("Content-Encoding", "gzip")])),
        LIMIT,
        _answer(200, ""),
        id="empty-gzip",
    ),
    pytest.param(
        reply(http_answer(304, b"", [("Content-Length", "10")], length=False)),
        LIMIT,
        _answer(304, ""),
        id="304-with-length",
    ),
    pytest.param(
        reply(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + http_answer(200, BODY, [JSON])),
        LIMIT,
        _answer(200, '{"reply":"ok"}'),
        id="interim-103",
    ),
    pytest.param(
        reply(http_answer(200, b"5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n", [CHUNKED], length=False)),
        LIMIT,
        _answer(200, "hello"),
        id="chunk-extension-and-trailer",
    ),
    pytest.param(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok"),
        LIMIT,
        ("fault", "RemoteProtocolError"),
        id="bad-content-length",
    ),
]


def _held(expected: Any, got: tuple[Any, ...]) -> None:
    if expected[0] == "fault":
        assert got[:2] == expected
    else:
        _, status, text, headers = expected
        assert got[:2] == ("answer", status) and got[4] == text
        assert headers.items() <= got[3].items()


@pytest.mark.parametrize(("action", "limit", "expected"), ONE_ANSWER_CASES)
def test_an_answer_reads_the_same_through_send_json_and_httpx_and_the_session_serves_the_next(
    action, limit, expected
):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/case?n=1", body={"q": "first"}, limit=limit)
        follow_up = await attempt(client, f"{server.url}/ok", body={"q": "second"})
        streamed = await through_httpx(client, f"{server.url}/case?n=2", body={"q": "first"})
        return [first, follow_up, streamed]

    (first, follow_up, streamed), server = on_the_wire({"/case": action, "/ok": OK}, scenario, limit=limit)
    first_seen, streamed_seen = outcome(first, server.url), outcome(streamed, server.url)
    assert outcome(follow_up, server.url)[:3] == ("answer", 200, "ORIGIN/ok")
    _held(expected, first_seen)
    encoded = {"content-encoding", "content-length"}  # httpx is handed the decoded body
    if expected[0] == "answer":
        expected = (*expected[:3], {k: v for k, v in expected[3].items() if k not in encoded})
    _held(expected, streamed_seen)
    if first_seen[0] == "answer":
        assert streamed_seen[2] == "ORIGIN/case?n=2"
        plain_headers = {k: v for k, v in first_seen[3].items() if k not in encoded}
        assert {k: v for k, v in streamed_seen[3].items() if k not in encoded} == plain_headers
    # both clients sent the same request, save for what httpx always adds
    first_request, streamed_request = server.requests[0], server.requests[2]
    assert first_request.body == streamed_request.body
    for name in ("content-type", "accept-encoding", "user-agent"):
        assert first_request.header(name) == streamed_request.header(name), name


# --- faults: the same kind and words whichever client sent the request ---------------------------


def _trickle_headers(request: RawRequest, connection: Any, server: RawHTTPServer) -> bool:
    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Long: " + b"v" * 9000 + b"\r\nContent-Length: 2\r\n\r\nok")
    return True


FAULTS = [
    pytest.param(hang_up, "RemoteProtocolError", "Server disconnected", id="hang-up"),
    pytest.param(reply(b"HELLO\r\n\r\n"), "RemoteProtocolError", None, id="not-http"),
    pytest.param(
        reply(http_answer(200, BODY, [JSON])[:-5], close=True),
        "RemoteProtocolError",
        "Response payload is not completed",
        id="closed-mid-body",
    ),
    pytest.param(_trickle_headers, "RemoteProtocolError", "header too long", id="9-kB-header"),
    pytest.param(
        reply(http_answer(200, b"not gzip at all", [("Content-Encoding", "gzip")])),
        "RemoteProtocolError",
        "Can not decode content-encoding: gzip",
        id="bad-gzip",
    ),
    pytest.param(stall(), "ReadTimeout", "request timed out", id="silent"),
    pytest.param(
        reply(http_answer(200, b"x" * 5000)), "ReplyTooLarge", "reply larger than 1 kB", id="too-large"
    ),
    pytest.param(
        reply(http_answer(200, zlib.compress(b"x" * 50_000), [("Content-Encoding", "deflate")])),
        "ReplyTooLarge",
        "reply larger than 1 kB",
        id="deflate-decoded-too-large",
    ),
]


@pytest.mark.parametrize(("action", "kind", "words"), FAULTS)
def test_each_fault_has_the_same_kind_and_words_through_send_json_and_httpx(action, kind, words):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [
            await attempt(client, f"{server.url}/fault", body={"q": 1}, timeout=0.3, limit=1000),
            await through_httpx(client, f"{server.url}/fault", body={"q": 1}),
        ]

    (plain, streamed), _ = on_the_wire({"/fault": action}, scenario, timeout=0.3, limit=1000)
    assert isinstance(plain, EndpointError) and isinstance(streamed, EndpointError), (plain, streamed)
    assert (plain.kind, plain.retryable) == (streamed.kind, streamed.retryable)
    assert plain.kind == kind
    assert plain.message == streamed.message
    if words is not None:
        assert words in plain.message


def test_a_refused_connection_is_a_connect_error_that_says_where_through_either_client(free_port):
    url = f"http://127.0.0.1:{free_port}/v1"

    async def main() -> list[Any]:
        async with EndpointClient(url, 2, 5.0) as client:
            return [
                await attempt(client, url, body={"q": 1}),
                await through_httpx(client, url, body={"q": 1}),
            ]

    plain, streamed = asyncio.run(main())
    assert outcome(plain) == outcome(streamed) == ("fault", "ConnectError", True)
    assert plain.message == streamed.message
    assert f"could not connect to {url}" in plain.message


def test_a_redirect_loop_is_too_many_redirects_through_either_client():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        url = f"{server.url}/loop"
        return [await attempt(client, url, body={"q": 1}), await through_httpx(client, url, body={"q": 1})]

    loop = reply(http_answer(302, b"", [("Location", "/loop")]))
    (plain, streamed), _ = on_the_wire({"/loop": loop}, scenario)
    assert outcome(plain) == outcome(streamed) == ("fault", "TooManyRedirects", False)


def test_the_judges_client_can_be_told_not_to_follow_redirects():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> Any:
        response = await client.httpx_client(follow_redirects=False).post(f"{server.url}/a", json={})
        return response.status_code, response.headers["location"]

    moved = reply(http_answer(302, b"", [("Location", "/b")]))
    answer, server = on_the_wire({"/a": moved}, scenario)
    assert answer == (302, "/b")
    assert [request.path for request in server.requests] == ["/a"]


def test_a_request_cancelled_in_flight_leaves_the_session_usable():
    stale = http_answer(200, b'{"stale":true}', [JSON])

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        cancelled: Any = "answered"
        try:
            await asyncio.wait_for(
                client.send_json("POST", f"{server.url}/stall", {"q": 1}, {}, 5.0, LIMIT), 0.2
            )
        except asyncio.TimeoutError:
            cancelled = "cancelled"
        server.release()
        second = await asyncio.wait_for(attempt(client, f"{server.url}/echo", body={"q": 2}), 5.0)
        return [cancelled, second]

    (cancelled, second), _ = on_the_wire(
        {"/stall": stall(then=stale), "/echo": reply(echo)}, scenario, connections=1
    )
    assert cancelled == "cancelled"
    assert isinstance(second, RawAnswer) and json.loads(second.text)["body"] == '{"q":2}'


def test_a_body_that_trickles_in_is_read_whole_when_no_wait_outlasts_the_timeout():
    def trickle(request: RawRequest, connection: Any, server: RawHTTPServer) -> bool:
        connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(6):
            time.sleep(0.1)  # each wait well under the timeout, all of them together over it
            connection.sendall(b"5\r\nslow \r\n")
        connection.sendall(b"0\r\n\r\n")
        return True

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> Any:
        return await attempt(client, f"{server.url}/trickle", body={"q": 1}, timeout=0.4)

    answer, _ = on_the_wire({"/trickle": trickle}, scenario, timeout=0.4)
    assert isinstance(answer, RawAnswer) and answer.text == "slow " * 6


# --- redirects, cookies, connections, TLS ----------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "method_after"),
    [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")],
)
def test_a_redirect_is_followed_as_httpx_follows_it_through_either_client(status, method_after):
    moved = reply(http_answer(status, b"moved", [("Location", "/b?from=a")]))

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        url = f"{server.url}/a"
        return [
            await attempt(client, url, body={"q": "moved"}),
            await through_httpx(client, url, body={"q": "moved"}),
        ]

    (plain, streamed), server = on_the_wire({"/a": moved, "/b": reply(echo)}, scenario)
    for answer in (plain, streamed):
        assert outcome(answer, server.url)[:3] == ("answer", 200, "ORIGIN/b?from=a")
        landed = json.loads(answer.text)
        assert landed["method"] == method_after
        assert landed["body"] == ('{"q":"moved"}' if method_after == "POST" else "")


def test_a_cookie_an_answer_sets_goes_with_the_next_request_of_either_client():
    login = reply(http_answer(200, BODY, [JSON, ("Set-Cookie", "sid=abc123; Path=/")]))

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        await attempt(client, f"{server.url}/login", body={"q": 1})
        return [
            await attempt(client, f"{server.url}/echo", body={"q": 2}),
            await through_httpx(client, f"{server.url}/echo", body={"q": 3}),
        ]

    answers, server = on_the_wire({"/login": login, "/echo": reply(echo)}, scenario)
    assert [json.loads(answer.text)["cookie"] for answer in answers] == ["sid=abc123", "sid=abc123"]
    assert server.requests[2].header("cookie") == "sid=abc123"


def test_sequential_requests_of_both_clients_share_one_keep_alive_connection():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        answers = []
        for n in range(10):
            answers.append(await attempt(client, f"{server.url}/echo?n={n}", body={"n": n}))
            answers.append(await through_httpx(client, f"{server.url}/echo?m={n}", body={"n": n}))
        return answers

    answers, server = on_the_wire({"/echo": reply(echo)}, scenario, connections=4)
    assert len({json.loads(answer.text)["target"] for answer in answers}) == 20
    assert server.accepted == 1


def test_concurrent_requests_open_at_most_the_connections_allowed():
    def slow_echo(request: RawRequest) -> bytes:
        time.sleep(0.05)  # long enough for the other requests to ask for a connection
        return echo(request)

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        sends = [attempt(client, f"{server.url}/echo", body={"n": n}) for n in range(6)]
        streams = [through_httpx(client, f"{server.url}/echo", body={"n": n}) for n in range(6)]
        return list(await asyncio.gather(*sends, *streams))

    answers, server = on_the_wire({"/echo": reply(slow_echo)}, scenario, connections=2)
    assert all(isinstance(answer, RawAnswer) for answer in answers)
    assert server.max_open <= 2


def test_https_is_verified_against_the_trusted_certificates(tmp_path, monkeypatch):
    tls, cert = self_signed_tls(tmp_path)

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        url = f"{server.url}/echo"
        return [await attempt(client, url, body={"q": 1}), await through_httpx(client, url, body={"q": 1})]

    untrusted, _ = on_the_wire({"/echo": reply(echo)}, scenario, tls=tls)
    assert [outcome(result)[1] for result in untrusted] == ["ConnectError", "ConnectError"]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    trusted, _ = on_the_wire({"/echo": reply(echo)}, scenario, tls=tls)
    assert [json.loads(answer.text)["body"] for answer in trusted] == ['{"q":1}', '{"q":1}']


# --- hostile servers: bombs and an endless header, through `specengine run` ------------------------

ZEROS = bytes(1 << 20)
GIGABYTE_IN_MB = 1024
MAX_RSS_MB = 150
MAX_CPU_S = 2.0


def _head(content_type: str, encoding: str | None) -> bytes:
    lines = ["HTTP/1.1 200 OK", f"Content-Type: {content_type}", "Connection: close"]
    if encoding:
        lines.append(f"Content-Encoding: {encoding}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def bomb(encoding: str, content_type: str) -> Action:
    """A 1 GB body of zeros, compressed as it is sent (never held whole): a few MB on the wire."""

    def action(request: RawRequest, connection: Any, server: RawHTTPServer) -> bool:
        if encoding == "gzip":
            compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
            squeeze, finish = compressor.compress, compressor.flush
        else:
            import brotli

            compressor = brotli.Compressor(quality=1)
            squeeze, finish = compressor.process, compressor.finish
        connection.sendall(_head(content_type, encoding))
        for _ in range(GIGABYTE_IN_MB):
            connection.sendall(squeeze(ZEROS))
        connection.sendall(finish())
        return False

    return action


def endless_header(request: RawRequest, connection: Any, server: RawHTTPServer) -> bool:
    """A header line of 100 MB, sent a megabyte at a time."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Long: ")
    for _ in range(100):
        connection.sendall(b"a" * (1 << 20))
    connection.sendall(b"\r\nContent-Length: 2\r\n\r\n{}")
    return False


def run_measured(folder: Path) -> tuple[dict[str, Any], float, float]:
    """`specengine run` in a child process: its results, and its peak memory (MB) and CPU (s).

    The peak is the process's own (VmHWM): ru_maxrss would start from the size of this process,
    which forked it."""
    import subprocess

    code = (
        "import atexit, resource, sys\n"
        "def usage():\n"
        "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "    peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
        "    print('USAGE', peak.split()[1], u.ru_utime + u.ru_stime, file=sys.stderr)\n"
        "atexit.register(usage)\n"
        "sys.argv = ['specengine', 'run', 'spec.yaml', '--output', 'out.json']\n"
        "from specengine.entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("USAGE "))
    _, rss_kb, cpu = line.split()
    return json.loads((folder / "out.json").read_text()), int(rss_kb) / 1024, float(cpu)


@pytest.mark.parametrize(
    ("action", "stream", "words"),
    [
        pytest.param(bomb("gzip", "application/json"), False, "reply larger than 10 MB", id="gzip-bomb"),
        pytest.param(bomb("br", "application/json"), False, "reply larger than 10 MB", id="brotli-bomb"),
        pytest.param(
            bomb("gzip", "text/event-stream"), True, "reply larger than 10 MB", id="gzip-bomb-stream"
        ),
        pytest.param(
            bomb("br", "text/event-stream"), True, "reply larger than 10 MB", id="brotli-bomb-stream"
        ),
        pytest.param(endless_header, False, "header too long", id="100-MB-header"),
        pytest.param(endless_header, True, "header too long", id="100-MB-header-stream"),
    ],
)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc (Linux)")
def test_a_hostile_answer_errors_the_turn_in_little_memory_and_cpu(tmp_path, action, stream, words):
    pytest.importorskip("brotli")
    with RawHTTPServer({"/v1/chat/completions": action}) as server:
        endpoint = {"protocol": "openai-chat", "url": f"{server.url}/v1/chat/completions", "retries": 0}
        write_project(tmp_path, endpoints={"agent": {**endpoint, "stream": stream}})
        write_spec(tmp_path, "spec", "evals:\n  - name: hi\n    send: Hi\n    expect: [succeeded]\n")
        results, rss_mb, cpu_s = run_measured(tmp_path)
    error = results["cases"][0]["trials"][0]["error"]
    assert words in error["message"], error
    assert rss_mb < MAX_RSS_MB, rss_mb
    assert cpu_s < MAX_CPU_S, cpu_s
