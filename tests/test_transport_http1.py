"""The keep-alive HTTP/1.1 path of `EndpointClient` (transport/http1.py) held to its aiohttp path.

Every scenario runs twice, each time against a fresh scripted raw server (support.raw_http_server):
once through `EndpointClient(..., http1=True)`, once through `EndpointClient(..., http1=False)`, and
the two must end alike: the same status, final URL, headers and body text, or the same fault kind
and retryability; the servers must have seen the same requests on as many connections.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest
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

from specengine.errors import EndpointError
from specengine.transport.client import EndpointClient, RawAnswer

LIMIT = 10**7
BODY = b'{"reply":"ok"}'
JSON = ("Content-Type", "application/json")
FAST, AIOHTTP = True, False
Scenario = Callable[[EndpointClient, RawHTTPServer], Awaitable[Any]]


def make_client(url: str, connections: int, timeout: float, http1: bool) -> EndpointClient:
    return EndpointClient(url, connections, timeout, http1=http1)


def on_both_paths(
    routes: Mapping[str, Action],
    scenario: Scenario,
    *,
    connections: int = 2,
    timeout: float = 5.0,
    tls: ssl.SSLContext | None = None,
) -> dict[bool, tuple[Any, RawHTTPServer]]:
    """What `scenario` returned on the fast path and on the aiohttp path, each with the server it
    ran against (stopped by then, its records kept). On both paths, closing the client closes
    every connection it opened."""
    ended: dict[bool, tuple[Any, RawHTTPServer]] = {}
    for http1 in (FAST, AIOHTTP):
        with RawHTTPServer(routes, tls=tls) as server:

            async def main(server: RawHTTPServer = server, http1: bool = http1) -> tuple[Any, bool]:
                async with make_client(server.url, connections, timeout, http1) as client:
                    result = await scenario(client, server)
                server.release()  # a stalled answer goes out, so that its connection can end
                return result, await asyncio.to_thread(server.wait_closed, server.accepted, 2.0)

            result, all_closed = asyncio.run(main())
            path = "fast" if http1 else "aiohttp"
            assert all_closed, (
                f"{path} path: {server.accepted - server.closed} connection(s) open after aclose"
            )
            ended[http1] = (result, server)
    return ended


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


def outcome(result: Any, origin: str = "") -> tuple[Any, ...]:
    """What must be equal between the paths: an answer's status, final URL (`origin` shown as
    ORIGIN, each path having its own server), headers and text; an EndpointError's kind and
    retryability; another exception's type."""
    if isinstance(result, RawAnswer):
        url = str(result.url).replace(origin, "ORIGIN") if origin else str(result.url)
        return ("answer", result.status, url, dict(result.headers), result.text)
    if isinstance(result, EndpointError):
        return ("fault", result.kind, result.retryable)
    if isinstance(result, BaseException):
        return ("raised", type(result).__name__)
    return ("value", result)


def seen(server: RawHTTPServer) -> list[tuple[str, tuple[tuple[str, str], ...], bytes]]:
    """The requests a server received, in order: request line, headers (names in lower case, in no
    particular order; the server's own port shown as PORT) and body."""
    port = str(server.port)
    return [
        (
            request.request_line,
            tuple(sorted((name.lower(), value.replace(port, "PORT")) for name, value in request.headers)),
            request.body,
        )
        for request in server.requests
    ]


def assert_alike(
    ended: dict[bool, tuple[Any, RawHTTPServer]], *, same_connections: bool = True
) -> list[tuple[Any, ...]]:
    """The outcomes of both paths are equal, and so are the requests their servers saw (and the
    number of connections those came on, unless `same_connections` is false); returns the
    (common) outcomes."""
    (fast, fast_server), (plain, plain_server) = ended[FAST], ended[AIOHTTP]
    fast_outcomes = [outcome(result, fast_server.url) for result in fast]
    plain_outcomes = [outcome(result, plain_server.url) for result in plain]
    assert fast_outcomes == plain_outcomes
    assert seen(fast_server) == seen(plain_server)
    if same_connections:
        assert fast_server.accepted == plain_server.accepted
    return plain_outcomes


# --- one answer, then a follow-up on the same pool ---------------------------------------------

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
    pytest.param(
        reply(http_answer(200, BODY, [JSON, CHUNKED])),
        LIMIT,
        None,
        id="length-and-chunked",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, ("Content-Length", "99")])),
        LIMIT,
        None,
        id="two-content-lengths",
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
        reply(http_answer(200, gzip.compress(BODY), [JSON, ("Content-Encoding", "x-gzip")])),
        LIMIT,
        None,
        id="x-gzip",
    ),
    pytest.param(
        reply(http_answer(200, b"\x0b\x02\x80hello\x03", [("Content-Encoding", "br")])),
        LIMIT,
        None,
        id="brotli-not-installed",
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
        reply(http_answer(200, BODY, [JSON, ("X-Long", "v" * 9000)])),
        LIMIT,
        None,
        id="9-kB-header",
    ),
    pytest.param(
        reply(http_answer(200, BODY, [JSON, *[(f"X-H{n}", "v") for n in range(200)]])),
        LIMIT,
        None,
        id="200-headers",
    ),
    pytest.param(
        reply(b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nContent-Length: 2\r\n\r\nok"),
        LIMIT,
        None,
        id="folded-header",
    ),
    pytest.param(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok"),
        LIMIT,
        ("fault", "RemoteProtocolError"),
        id="bad-content-length",
    ),
    pytest.param(reply(b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"), LIMIT, None, id="bad-status"),
    pytest.param(
        reply(http_answer(200, BODY, [JSON]) + http_answer(200, b'{"extra":true}', [JSON])),
        LIMIT,
        None,
        id="two-answers-to-one-request",
    ),
    pytest.param(reply(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"), LIMIT, None, id="bare-lf-line-ends"),
]


@pytest.mark.parametrize(("action", "limit", "expected"), ONE_ANSWER_CASES)
def test_an_answer_reads_the_same_on_both_paths_and_the_pool_serves_the_next(action, limit, expected):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/case?n=1", body={"q": "first"}, limit=limit)
        follow_up = await attempt(client, f"{server.url}/ok", body={"q": "second"})
        return [first, follow_up]

    ended = on_both_paths({"/case": action, "/ok": OK}, scenario)
    # past the limit the fast path drops the connection; aiohttp keeps one whose answer had arrived
    first, follow_up = assert_alike(ended, same_connections=expected != ("fault", "ReplyTooLarge"))
    assert follow_up == ("answer", 200, "ORIGIN/ok", follow_up[3], '{"follow":"up"}')
    if expected is None:
        return
    if expected[0] == "fault":
        assert first[:2] == expected
    else:
        _, status, text, headers = expected
        assert first[:2] == ("answer", status) and first[4] == text
        assert headers.items() <= first[3].items()


# --- faults of their own ---------------------------------------------------------------------------


def test_an_answer_refused_mid_parse_is_named_by_its_own_fault_while_another_exception_is_handled():
    """httptools chains its error for a callback's to whatever exception is being handled (a run
    started in an `except ImportError:` block once made every refusal a bare parser error)."""

    async def main(server: RawHTTPServer) -> Any:
        async with make_client(server.url, 2, 5.0, FAST) as client:
            return await attempt(client, f"{server.url}/big", body={"q": 1}, limit=1000)

    with RawHTTPServer({"/big": reply(http_answer(200, b"x" * 5000))}) as server:
        try:
            raise ImportError("an optional package is missing")
        except ImportError:
            result = asyncio.run(main(server))
    assert outcome(result) == ("fault", "ReplyTooLarge", False)
    assert "reply larger than" in str(result)


def test_a_refused_connection_is_a_connect_error_on_both_paths(free_port):
    url = f"http://127.0.0.1:{free_port}/v1"

    async def send(http1: bool) -> Any:
        async with make_client(url, 2, 5.0, http1) as client:
            return await attempt(client, url, body={"q": 1})

    fast, plain = asyncio.run(send(FAST)), asyncio.run(send(AIOHTTP))
    assert outcome(fast) == outcome(plain) == ("fault", "ConnectError", True)


def test_a_silent_server_is_a_read_timeout_and_its_late_answer_is_never_read():
    stale = http_answer(200, b'{"stale":true}', [JSON])

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/silent", body={"q": 1}, timeout=0.3)
        server.release()  # the late answer goes out on the first connection, if still open
        return [first, await attempt(client, f"{server.url}/echo", body={"q": 2})]

    ended = on_both_paths({"/silent": stall(then=stale), "/echo": reply(echo)}, scenario, connections=1)
    first, second = assert_alike(ended)
    assert first == ("fault", "ReadTimeout", True)
    assert json.loads(second[4]) == {"method": "POST", "target": "/echo", "body": '{"q":2}', "cookie": None}


def test_a_request_cancelled_in_flight_does_not_poison_the_pool():
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
        # with one connection allowed, a slot the cancelled request kept would stop the pool: bounded
        second = await asyncio.wait_for(attempt(client, f"{server.url}/echo", body={"q": 2}), 5.0)
        third = await asyncio.wait_for(attempt(client, f"{server.url}/echo", body={"q": 3}), 5.0)
        return [cancelled, second, third]

    ended = on_both_paths({"/stall": stall(then=stale), "/echo": reply(echo)}, scenario, connections=1)
    cancelled, second, third = assert_alike(ended)
    assert cancelled == ("value", "cancelled")
    assert json.loads(second[4])["body"] == '{"q":2}'
    assert json.loads(third[4])["body"] == '{"q":3}'


def test_a_keep_alive_connection_the_server_closed_while_idle_is_not_reused():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/once", body={"q": 1})
        assert server.wait_closed(1)
        await asyncio.sleep(0.05)  # the loop sees the connection's end
        return [first, await attempt(client, f"{server.url}/echo", body={"q": 2})]

    routes = {"/once": reply(http_answer(200, BODY, [JSON]), close=True), "/echo": reply(echo)}
    first, second = assert_alike(on_both_paths(routes, scenario))
    assert first[4] == '{"reply":"ok"}'
    assert json.loads(second[4])["body"] == '{"q":2}'


def test_a_body_that_trickles_in_is_read_whole_when_no_wait_outlasts_the_timeout():
    def trickle(request: RawRequest, connection: Any, server: RawHTTPServer) -> bool:
        connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(6):
            time.sleep(0.1)  # each wait well under the timeout, all of them together over it
            connection.sendall(b"5\r\nslow \r\n")
        connection.sendall(b"0\r\n\r\n")
        return True

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}/trickle", body={"q": 1}, timeout=0.4)]

    [only] = assert_alike(on_both_paths({"/trickle": trickle}, scenario))
    assert only[4] == "slow " * 6


# --- redirects and cookies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "method_after"),
    [(301, "GET"), (302, "GET"), (303, "GET"), (307, "POST"), (308, "POST")],
)
def test_a_redirect_is_followed_as_aiohttp_follows_it(status, method_after):
    moved = reply(http_answer(status, b"moved", [("Location", "/b?from=a")]))

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/a", body={"q": "moved"})
        return [first, await attempt(client, f"{server.url}/b", body={"q": "direct"})]

    ended = on_both_paths({"/a": moved, "/b": reply(echo)}, scenario)
    # the fast path hands the redirect to aiohttp, whose pool opens a connection of its own
    first, _ = assert_alike(ended, same_connections=False)
    assert first[:3] == ("answer", 200, "ORIGIN/b?from=a")
    landed = json.loads(first[4])
    assert landed["method"] == method_after
    assert landed["body"] == ('{"q":"moved"}' if method_after == "POST" else "")


def test_a_redirect_loop_is_too_many_redirects_on_both_paths():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}/loop", body={"q": 1})]

    loop = reply(http_answer(302, b"", [("Location", "/loop")]))
    [only] = assert_alike(on_both_paths({"/loop": loop}, scenario))
    assert only == ("fault", "TooManyRedirects", False)


def test_a_cookie_an_answer_sets_goes_with_the_next_request_on_both_paths():
    login = reply(http_answer(200, BODY, [JSON, ("Set-Cookie", "sid=abc123; Path=/")]))

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/login", body={"q": 1})
        second = await attempt(client, f"{server.url}/echo", body={"q": 2})
        return [first, second, len(client.session.cookie_jar)]

    ended = on_both_paths({"/login": login, "/echo": reply(echo)}, scenario)
    # once a cookie is kept, the fast path sends through aiohttp, on a connection of its own
    first, second, jar = assert_alike(ended, same_connections=False)
    assert first[3]["set-cookie"] == "sid=abc123; Path=/"
    assert json.loads(second[4])["cookie"] == "sid=abc123"
    assert jar == ("value", 1)
    for _, server in ended.values():
        assert server.requests[1].header("cookie") == "sid=abc123"


# --- the pool ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("http1", [FAST, AIOHTTP], ids=["fast", "aiohttp"])
def test_sequential_requests_share_one_keep_alive_connection(http1):
    async def main(server: RawHTTPServer) -> list[Any]:
        async with make_client(server.url, 4, 5.0, http1) as client:
            return [await attempt(client, f"{server.url}/echo?n={n}", body={"n": n}) for n in range(20)]

    with RawHTTPServer({"/echo": reply(echo)}) as server:
        answers = asyncio.run(main(server))
    assert [json.loads(answer.text)["target"] for answer in answers] == [f"/echo?n={n}" for n in range(20)]
    assert server.accepted == 1


@pytest.mark.parametrize("http1", [FAST, AIOHTTP], ids=["fast", "aiohttp"])
def test_concurrent_requests_open_at_most_the_connections_allowed(http1):
    def slow_echo(request: RawRequest) -> bytes:
        time.sleep(0.05)  # long enough for the other requests to ask for a connection
        return echo(request)

    async def main(server: RawHTTPServer) -> list[Any]:
        async with make_client(server.url, 2, 5.0, http1) as client:
            sends = [attempt(client, f"{server.url}/echo?n={n}", body={"n": n}) for n in range(10)]
            return list(await asyncio.gather(*sends))

    with RawHTTPServer({"/echo": reply(slow_echo)}) as server:
        answers = asyncio.run(main(server))
    assert [json.loads(answer.text)["body"] for answer in answers] == [f'{{"n":{n}}}' for n in range(10)]
    assert server.max_open <= 2
    assert server.accepted <= 2


# --- what goes on the wire -------------------------------------------------------------------------

CALLER_HEADERS = {"Authorization": "Bearer k", "X-Trace": "t-1"}


@pytest.mark.parametrize(
    ("method", "body"),
    [("POST", {"q": "héllo \u2028 ☃", "n": [1, 2.5, None, True]}), ("PUT", []), ("GET", None)],
    ids=["post", "put-empty-list", "get-no-body"],
)
def test_the_fast_path_sends_the_request_aiohttp_sends(method, body):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        url = f"{server.url}/echo?a=1&b=x-y"
        return [await attempt(client, url, method=method, body=body, headers=CALLER_HEADERS)]

    ended = on_both_paths({"/echo": reply(echo)}, scenario)
    assert_alike(ended)
    [fast], [plain] = ended[FAST][1].requests, ended[AIOHTTP][1].requests
    assert fast.request_line == plain.request_line == f"{method} /echo?a=1&b=x-y HTTP/1.1"
    assert fast.body == plain.body
    if body is not None:
        assert fast.body == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    named = {name.lower(): value for name, value in fast.headers}
    assert len(named) == len(fast.headers), f"a header sent twice: {fast.headers}"
    assert named["host"] == f"127.0.0.1:{ended[FAST][1].port}"
    assert plain.header("host") == f"127.0.0.1:{ended[AIOHTTP][1].port}"
    assert named["authorization"] == "Bearer k" and named["x-trace"] == "t-1"
    assert named.get("accept-encoding") == plain.header("accept-encoding") == "gzip, deflate"
    if body is None:
        assert "content-type" not in named and named.get("content-length", "0") == "0"
    else:
        assert named["content-type"] == plain.header("content-type") == "application/json"
        assert named["content-length"] == plain.header("content-length") == str(len(plain.body))


def test_the_callers_content_type_and_accept_encoding_win_on_both_paths():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        headers = {"content-type": "application/vnd.x+json", "ACCEPT-ENCODING": "identity"}
        return [await attempt(client, f"{server.url}/echo", body={"q": 1}, headers=headers)]

    ended = on_both_paths({"/echo": reply(echo)}, scenario)
    assert_alike(ended)
    for _, server in ended.values():
        [request] = server.requests
        assert request.header("content-type") == "application/vnd.x+json"
        assert request.header("accept-encoding") == "identity"


@pytest.mark.parametrize(
    "headers",
    [{"X-Bad": "v\r\nX-Injected: 1"}, {"X-Bad": "v\nX-Injected: 1"}, {"X-Bad\r\nX-Injected": "1"}],
    ids=["crlf-in-value", "lf-in-value", "crlf-in-name"],
)
def test_a_header_with_a_line_break_is_never_written_raw(headers):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/echo", body={"q": 1}, headers=headers)
        return [first, await attempt(client, f"{server.url}/echo", body={"q": 2})]

    ended = on_both_paths({"/echo": reply(echo)}, scenario)
    fast, plain = (
        [outcome(result, ended[path][1].url) for result in ended[path][0]] for path in (FAST, AIOHTTP)
    )
    assert fast == plain
    for _, server in ended.values():
        assert all(request.header("x-injected") is None for request in server.requests)
        last = server.requests[-1]
        assert (last.request_line, last.body) == ("POST /echo HTTP/1.1", b'{"q":2}')


# --- the fast path is the one taken -----------------------------------------------------------------


def test_a_plain_answer_on_the_fast_path_does_not_go_through_aiohttp(monkeypatch):
    calls: list[str] = []
    original = aiohttp.ClientSession._request

    def counted(self: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> Any:
        calls.append(f"{method} {url}")
        return original(self, method, url, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", counted)

    async def main(server: RawHTTPServer, http1: bool) -> list[Any]:
        async with make_client(server.url, 2, 5.0, http1) as client:
            return [await attempt(client, f"{server.url}/echo", body={"n": n}) for n in range(3)]

    with RawHTTPServer({"/echo": reply(echo)}) as server:
        fast = asyncio.run(main(server, FAST))
        assert calls == []
        plain = asyncio.run(main(server, AIOHTTP))
    assert [outcome(answer) for answer in fast] == [outcome(answer) for answer in plain]
    assert len(calls) == 3


# --- more of what a caller may send ---------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "/echo#part",
        "/a/../echo",
        "//echo",
        "/echo?",
        "/echo?x=%41",
        "",
        "/ech%6F",
        "/echo?q=a b",
        "/echo?q=é",
    ],
)
def test_a_target_goes_out_and_reads_back_as_aiohttp_sends_it(target):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}{target}", body={"q": 1})]

    assert_alike(on_both_paths({"/echo": reply(echo)}, scenario))


def test_an_upper_case_scheme_and_host_read_back_as_aiohttp_reads_them():
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"HTTP://127.0.0.1:{server.port}/echo", body={"q": 1})]

    [only] = assert_alike(on_both_paths({"/echo": reply(echo)}, scenario))
    assert only[1] == 200


@pytest.mark.parametrize(
    ("method", "body"),
    [
        ("post", {"q": 1}),
        ("Post", {"q": 1}),
        ("POST", None),
        ("DELETE", None),
        ("GET", {"q": 1}),
        ("PATCH", "x"),
        ("POST", {"big": "x" * 1_000_000}),
    ],
    ids=[
        "post-lower",
        "post-mixed",
        "post-no-body",
        "delete-no-body",
        "get-with-body",
        "patch-string",
        "post-1-MB",
    ],
)
def test_a_method_goes_out_as_aiohttp_sends_it(method, body):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}/echo", method=method, body=body)]

    assert_alike(on_both_paths({"/echo": reply(echo)}, scenario))


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "agent.example"},
        {"User-Agent": "mine/1", "Accept": "application/json"},
        {"X-Snow": "☃ é"},
        {"X-Empty": ""},
        {"X-A": "1", "x-a": "2"},
        {"X-Spaced": "  padded  "},
        {"Connection": "close"},
    ],
    ids=["host", "user-agent-accept", "non-ascii-value", "empty-value", "same-name-twice", "spaces", "close"],
)
def test_the_callers_headers_go_out_as_aiohttp_sends_them(headers):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/echo", body={"q": 1}, headers=headers)
        return [first, await attempt(client, f"{server.url}/echo", body={"q": 2}, headers=headers)]

    assert_alike(on_both_paths({"/echo": reply(echo)}, scenario))


def test_a_cookie_set_on_a_redirect_goes_with_the_request_it_leads_to():
    login = reply(http_answer(302, b"", [("Set-Cookie", "sid=r1; Path=/"), ("Location", "/echo")]))

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}/login", body={"q": 1})]

    [only] = assert_alike(
        on_both_paths({"/login": login, "/echo": reply(echo)}, scenario), same_connections=False
    )
    assert json.loads(only[4])["cookie"] == "sid=r1"


def test_a_redirect_to_another_origin_drops_authorization_on_both_paths():
    with RawHTTPServer({"/echo": reply(echo)}) as other:
        away = reply(http_answer(307, b"", [("Location", f"{other.url}/echo")]))

        async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
            headers = {"Authorization": "Bearer k", "X-Keep": "1"}
            return [await attempt(client, f"{server.url}/away", body={"q": 1}, headers=headers)]

        [only] = assert_alike(on_both_paths({"/away": away}, scenario), same_connections=False)
        fast, plain = other.requests
    assert json.loads(only[4])["body"] == '{"q":1}'
    assert fast.header("authorization") is None and plain.header("authorization") is None
    assert (fast.request_line, fast.body, fast.header("x-keep")) == (plain.request_line, plain.body, "1")


@pytest.mark.parametrize("http1", [FAST, AIOHTTP], ids=["fast", "aiohttp"])
def test_the_connection_limit_holds_when_some_requests_go_through_aiohttp(http1):
    """Redirected requests are finished by aiohttp; with the fast path's pool beside aiohttp's, the
    server must still never see more connections than the endpoint allows."""
    moved = reply(http_answer(307, b"", [("Location", "/echo")]))

    def slow_echo(request: RawRequest) -> bytes:
        time.sleep(0.05)  # long enough for the other requests to ask for a connection
        return echo(request)

    async def main(server: RawHTTPServer) -> list[Any]:
        async with make_client(server.url, 2, 5.0, http1) as client:
            paths = ["/moved" if n % 2 else "/echo" for n in range(10)]
            return list(
                await asyncio.gather(
                    *(attempt(client, f"{server.url}{p}", body={"n": n}) for n, p in enumerate(paths))
                )
            )

    with RawHTTPServer({"/moved": moved, "/echo": reply(slow_echo)}) as server:
        answers = asyncio.run(main(server))
    assert [json.loads(answer.text)["body"] for answer in answers] == [f'{{"n":{n}}}' for n in range(10)]
    assert server.max_open <= 2


# --- https ---------------------------------------------------------------------------------------


@pytest.fixture
def tls(tmp_path, monkeypatch) -> ssl.SSLContext:
    """A server TLS context whose self-signed certificate clients trust (httpx's SSL_CERT_FILE)."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    context, cert = self_signed_tls(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    return context


@pytest.mark.parametrize(
    "action",
    [
        reply(echo),
        reply(http_answer(200, chunked(b"a" * 20_000, b"b" * 20_000), [CHUNKED], length=False)),
        reply(http_answer(200, gzip.compress(BODY), [JSON, ("Content-Encoding", "gzip")])),
        reply(http_answer(200, BODY, [JSON, ("Connection", "close")], length=False), close=True),
        reply(http_answer(200, BODY, [JSON])[:-5], close=True),
        hang_up,
    ],
    ids=["echo", "chunked", "gzip", "delimited-by-close", "closed-mid-body", "closed-without-answer"],
)
def test_https_answers_read_the_same_on_both_paths(tls, action):
    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        first = await attempt(client, f"{server.url}/case", body={"q": 1})
        return [first, *[await attempt(client, f"{server.url}/echo", body={"n": n}) for n in range(3)]]

    ended = on_both_paths({"/case": action, "/echo": reply(echo)}, scenario, tls=tls)
    outcomes = assert_alike(ended)
    assert [json.loads(answer[4])["body"] for answer in outcomes[1:]] == [f'{{"n":{n}}}' for n in range(3)]


def test_https_on_the_fast_path_checks_the_certificate(tmp_path):
    """Without the certificate trusted, the fast path refuses the server as aiohttp does."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    context, _ = self_signed_tls(tmp_path)

    async def scenario(client: EndpointClient, server: RawHTTPServer) -> list[Any]:
        return [await attempt(client, f"{server.url}/echo", body={"q": 1})]

    ended = on_both_paths({"/echo": reply(echo)}, scenario, tls=context)
    [only] = assert_alike(ended)
    assert only[0] == "fault" and ended[FAST][1].requests == []
