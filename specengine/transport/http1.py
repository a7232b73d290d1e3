"""A keep-alive HTTP/1.1 connection pool for a run's hot path: one JSON request, one whole answer.

Why it exists: aiohttp spends about 65 µs of CPU on each request, the same in a bare loop as in a
run, and at 0 ms agents that is most of a case's cost; this pool spends about 15 µs on the same
request (bench/run_bench.py prints both loops side by side). It does only what that path needs:
write a request whose bytes are built once per endpoint, read one answer (Content-Length, chunked
or until close; gzip and deflate decoded), keep the connection for the next request. Everything else
stays with aiohttp, and `client.py` decides which path a request takes: event streams, proxies,
redirects to other servers, cookies, URLs that need quoting, headers that could not be written as
given.

Parsing is httptools (llhttp, the parser uvicorn and aiohttp's C extension are built on), with the
leniencies and limits aiohttp's parser sets, so no byte of HTTP is parsed here.
tests/test_transport_http1.py holds this path to aiohttp's, answer by answer and fault by fault:
the same status, final URL, headers and text, the same fault kinds, the same requests on the wire.

Faults are EndpointErrors with the kinds and wording of `client.fault`, as aiohttp's are.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httptools

from specengine import __version__
from specengine.errors import EndpointError
from specengine.transport.limits import too_large

# what aiohttp answers these faults with, so that results read the same whichever path was taken
DISCONNECTED = "Server disconnected"
NOT_COMPLETED = "Response payload is not completed"
READ_TIMEOUT = "Timeout on reading data from socket"
READ_BYTES = 64 * 1024  # what one read of a connection takes at most
# aiohttp's parser limits: a header line's name and value together, and the number of headers
MAX_FIELD_SIZE = 8190
MAX_HEADERS = 128
# the encodings aiohttp decodes (br and zstd only with their optional packages); others stay as sent
DECODED = frozenset({b"gzip", b"deflate"})
NEEDS_PACKAGE = frozenset({b"br", b"zstd"})
DECODABLE = DECODED | NEEDS_PACKAGE
REDIRECTS = frozenset({301, 302, 303, 307, 308})
BODILESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})  # no Content-Length: 0 (aiohttp)
POST_METHODS = frozenset({"PATCH", "POST", "PUT"})  # a Content-Type even without a body (aiohttp)
# a request target aiohttp (yarl) sends exactly as written; `%`, `[` and `]` it would re-quote
_PLAIN_TARGET = re.compile(r"[A-Za-z0-9\-._~:/?@!$&'()*+,;=]*")
# a URL aiohttp (yarl) shows as written: lower-case scheme and host, no dot segment, no empty query
_PLAIN_URL = re.compile(r"https?://[a-z0-9.\-]+(:[0-9]+)?(/[^?#]*)?(\?[^#]+)?")
_DOT_SEGMENT = re.compile(r"/\.\.?(/|$)")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110)
_UNSAFE_VALUE = re.compile(r"[\x00\r\n]")
USER_AGENT = f"specengine/{__version__}"  # on either path: an agent's logs can tell eval traffic apart


@dataclass(frozen=True)
class Reply:
    """One answer read whole: status, headers as received, the decoded body."""

    status: int
    raw_headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    content_type: bytes | None
    sets_cookie: bool

    def header(self, name: bytes) -> str | None:
        """The first value of the header `name` (lower case), if the answer has it."""
        for key, value in self.raw_headers:
            if key.lower() == name:
                return value.decode("latin-1")
        return None

    def charset(self) -> str | None:
        """The charset its Content-Type names, if any."""
        if self.content_type is None:
            return None
        for parameter in self.content_type.decode("latin-1").split(";")[1:]:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "charset":
                return value.strip().strip('"') or None
        return None


@dataclass(frozen=True)
class Origin:
    """Where a pool connects: host and port, TLS or not."""

    host: str
    port: int
    tls: ssl.SSLContext | None


def url_origin(url: str) -> tuple[str, str, int] | None:
    """`url`'s scheme, host and port, when it is an http or https URL without user info; else None."""
    try:
        split = urllib.parse.urlsplit(url)
        port = split.port
    except ValueError:
        return None
    scheme = split.scheme.lower()
    if scheme not in ("http", "https") or not split.hostname or "@" in split.netloc:
        return None
    return scheme, split.hostname, port or (443 if scheme == "https" else 80)


def request_heads(
    origin: Origin, method: str, url: str, with_json: dict[str, str], without_body: dict[str, str]
) -> tuple[bytes, bytes] | None:
    """The bytes of a request to `url` with a JSON body (up to its Content-Length value) and without
    a body, as aiohttp writes them; None when aiohttp must send it: another origin, a target or
    header aiohttp would rewrite or refuse."""
    split = urllib.parse.urlsplit(url)
    scheme = "https" if origin.tls is not None else "http"
    if url_origin(url) != (scheme, origin.host, origin.port) or not _PLAIN_URL.fullmatch(url):
        return None
    target = (split.path or "/") + (f"?{split.query}" if split.query else "")
    if not _PLAIN_TARGET.fullmatch(target) or _DOT_SEGMENT.search(split.path):
        return None
    if not method.isalpha() or not method.isupper() or method == "HEAD":
        return None
    for headers in (with_json, without_body):
        if len({name.lower() for name in headers}) < len(headers):
            return None  # one name twice: which one aiohttp sends is its own business
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name) or _UNSAFE_VALUE.search(value):
                return None
            if name.lower() in ("content-length", "transfer-encoding", "expect", "upgrade"):
                return None
    given = {name.lower() for name in with_json}
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    default_port = 443 if origin.tls is not None else 80
    start = [f"{method} {target} HTTP/1.1"]
    if "host" not in given:
        start.append(f"Host: {host}" if origin.port == default_port else f"Host: {host}:{origin.port}")
    defaults = []
    if "accept" not in given:
        defaults.append("Accept: */*")
    if "user-agent" not in given:
        defaults.append(f"User-Agent: {USER_AGENT}")

    def head(headers: dict[str, str], length: str) -> bytes:
        lines = [*start, *(f"{name}: {value}" for name, value in headers.items()), *defaults]
        return ("\r\n".join(lines) + "\r\n" + length).encode()

    empty = "" if method in BODILESS_METHODS else "Content-Length: 0\r\n"
    if method in POST_METHODS and not any(name.lower() == "content-type" for name in without_body):
        empty = f"Content-Type: application/octet-stream\r\n{empty}"
    return head(with_json, "Content-Length: "), head(without_body, empty) + b"\r\n"


Fault = Callable[[str, str], EndpointError]  # (kind, detail) → the error a request raises


class _Connection(asyncio.BufferedProtocol):
    """One connection: at most one request in flight; the answer is parsed as it arrives.

    It reads into a buffer of its own (a buffered protocol): a plain protocol is handed every read
    as a new bytes object cut from a fresh 256 KB buffer, an allocation and a copy per answer."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fault: Fault):
        self._loop = loop
        self._fault = fault
        self._parser = httptools.HttpResponseParser(self)
        # what aiohttp's parser forgives outside its debug mode: obs-fold, a bare LF, spaces after a
        # chunk size
        self._parser.set_dangerous_leniencies(
            lenient_headers=True, lenient_optional_cr_before_lf=True, lenient_spaces_after_chunk_size=True
        )
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[Reply] | None = None
        self._limit = 0
        self._read_timeout = 0.0
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.usable = False  # connected, no answer half read, not told to close
        self._buffer = memoryview(bytearray(READ_BYTES))
        self._refusal: EndpointError | None = None  # why a callback stopped the parser
        self._reset()

    def _reset(self) -> None:
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._size = 0
        self._headers_done = False
        self._delimited = False  # by Content-Length or chunked, rather than by the connection's end
        self._content_type: bytes | None = None
        self._encoding: bytes | None = None
        self._sets_cookie = False

    # --- the request --------------------------------------------------------------------------

    async def exchange(self, request: bytes, limit: int, read_timeout: float) -> Reply:
        """Write `request` and wait for its whole answer; the connection is closed on any fault or
        cancellation, so a half-read answer never reaches the next request."""
        assert self._transport is not None
        self.usable = False
        self._limit = limit
        self._read_timeout = read_timeout
        now = self._last_read = self._loop.time()
        self._arm_read_timer(now + read_timeout)
        waiter = self._waiter = self._loop.create_future()
        self._transport.write(request)
        try:
            return await waiter
        except BaseException:
            self.close()
            raise
        finally:
            self._waiter = None

    def close(self) -> None:
        self.usable = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            self._transport.close()

    def _arm_read_timer(self, due: float) -> None:
        """The read timer is kept from one request to the next rather than made and cancelled for
        each: while requests follow one another it fires once per read timeout, finds data came in
        since, and re-arms itself. A timer due later than `due` is replaced."""
        timer = self._timer
        if timer is not None:
            if timer.when() <= due:
                return
            timer.cancel()
        self._timer = self._loop.call_at(due, self._check_read)

    def _check_read(self) -> None:
        """The read timer: fail when nothing arrived for `read_timeout` seconds while an answer is
        awaited, as aiohttp's sock_read does; re-armed for the rest of the interval when data came
        in meanwhile, and let lapse on an idle connection."""
        self._timer = None
        if self._waiter is None or self._waiter.done():
            return
        due = self._last_read + self._read_timeout
        if self._loop.time() < due:
            self._timer = self._loop.call_at(due, self._check_read)
            return
        self._fail(self._fault("ReadTimeout", READ_TIMEOUT))

    def _fail(self, error: BaseException) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.close()

    # --- asyncio.BufferedProtocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.usable = True

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self._waiter is None:  # nothing asked: an idle connection the server talks on
            self.close()
            return
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(self._buffer[:nbytes])  # the parser copies what it keeps
        except httptools.HttpParserCallbackError as exc:
            refused, self._refusal = self._refusal, None
            self._fail(refused or exc)
        except httptools.HttpParserError as exc:
            self._fail(self._fault("RemoteProtocolError", f"invalid HTTP answer: {exc}"))

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and not self._delimited and exc is None:
            self._complete(keep=False)  # the body ran until the connection's end
        elif exc is not None:
            self._fail(self._fault("ReadError", str(exc) or type(exc).__name__))
        elif self._headers_done:
            self._fail(self._fault("RemoteProtocolError", f"{NOT_COMPLETED}: {DISCONNECTED}"))
        else:
            self._fail(self._fault("RemoteProtocolError", DISCONNECTED))

    # --- httptools callbacks ------------------------------------------------------------------

    def _malformed(self, detail: str) -> EndpointError:
        """A RemoteProtocolError that stops the parser, kept as `_refused` keeps it."""
        return self._refused(self._fault("RemoteProtocolError", detail))

    def _refused(self, error: EndpointError) -> EndpointError:
        """`error`, kept for `buffer_updated`: httptools hands back its own error for a callback's,
        chained to whatever exception was being handled, not always to the callback's."""
        self._refusal = error
        return error

    def on_message_begin(self) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():  # more than the one answer asked for: never reused
            raise self._malformed("the server sent an answer nobody asked for")

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._headers_done:
            return  # a trailer after a chunked body: aiohttp shows none of them
        value = value.rstrip(b" \t")  # llhttp keeps the whitespace after a value; HTTP drops it
        if len(name) + len(value) > MAX_FIELD_SIZE:
            raise self._malformed(f"Got more than {MAX_FIELD_SIZE} bytes when reading")
        if b"\x00" in value:
            raise self._malformed("Invalid HTTP header: a NUL byte in its value")
        self._headers.append((name, value))
        if len(self._headers) > MAX_HEADERS:
            raise self._malformed("Too many headers received")
        lower = name.lower()
        if lower == b"content-type":
            self._content_type = value
        elif lower == b"content-encoding":
            self._encoding = value.lower()
        elif lower == b"set-cookie":
            self._sets_cookie = True
        elif lower == b"content-length":
            self._delimited = True
            if value.strip().isdigit() and int(value) > self._limit:
                raise self._refused(too_large(self._limit))
        elif lower == b"transfer-encoding":
            self._delimited = True

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self._limit:
            raise self._refused(too_large(self._limit))
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete(keep=self._parser.should_keep_alive())

    def _complete(self, keep: bool) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # an interim answer: the real one follows
            self._reset()
            return
        body = b"".join(self._body)
        encoding = self._encoding
        if encoding in DECODABLE and body:
            try:
                body = _decoded(body, encoding, self._limit, self._fault)
            except EndpointError as exc:
                self._fail(exc)
                return
        reply = Reply(status, tuple(self._headers), body, self._content_type, self._sets_cookie)
        self._reset()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)
        if keep and status != 101 and self._transport is not None and not self._transport.is_closing():
            self.usable = True
        else:
            self.close()


def _decoded(body: bytes, encoding: bytes, limit: int, fault: Fault) -> bytes:
    """`body` decompressed, at most `limit` bytes of it; deflate as aiohttp reads it (zlib-wrapped,
    or raw when the wrapper is missing), br and zstd by aiohttp's own decoders when their packages
    are installed."""
    if encoding in NEEDS_PACKAGE:
        return _decoded_by_aiohttp(body, encoding, limit, fault)
    windows = (16 + zlib.MAX_WBITS,) if encoding != b"deflate" else (zlib.MAX_WBITS, -zlib.MAX_WBITS)
    for bits in windows:
        decoder = zlib.decompressobj(bits)
        try:
            decoded = decoder.decompress(body, limit + 1)
        except zlib.error as exc:
            error = exc
            continue
        if len(decoded) > limit:
            raise too_large(limit)
        return decoded
    raise _undecodable(fault, error)


def _undecodable(fault: Fault, why: object) -> EndpointError:
    """The fault of a body that cannot be decoded, worded as aiohttp's."""
    return fault("RemoteProtocolError", f"{NOT_COMPLETED}: can not decode content-encoding: {why}")


def _decoded_by_aiohttp(body: bytes, encoding: bytes, limit: int, fault: Fault) -> bytes:
    """A br or zstd body, which no server should send unasked (requests accept gzip and deflate),
    decoded as aiohttp decodes it, or the fault aiohttp raises when the package is missing."""
    from aiohttp import compression_utils

    name = encoding.decode()
    flag, decoder_name = (
        ("HAS_BROTLI", "BrotliDecompressor") if name == "br" else ("HAS_ZSTD", "ZSTDDecompressor")
    )
    if not getattr(compression_utils, flag, False):  # zstd: aiohttp 3.12 and later
        raise _undecodable(fault, name)
    decoder = getattr(compression_utils, decoder_name)()
    try:
        decoded = decoder.decompress_sync(body)
    except Exception as exc:  # each decoder has errors of its own
        raise _undecodable(fault, exc) from None
    if len(decoded) > limit:
        raise too_large(limit)
    return decoded


class Http1Pool:
    """Keep-alive connections to one origin, at most `connections` at once (0: no limit)."""

    def __init__(self, origin: Origin, connections: int, fault: Fault):
        self.origin = origin
        self._fault = fault
        self._idle: list[_Connection] = []
        self._closed = False
        self._slots = asyncio.Semaphore(connections) if connections > 0 else None

    async def exchange(self, request: bytes, limit: int, timeout: float) -> Reply:
        """Send `request` (its whole bytes) and read its answer; `timeout` bounds the connect and
        each wait for data. One coroutine in all (a slot taken, an idle connection reused): this is
        every request's path."""
        slots = self._slots
        if slots is not None:
            await slots.acquire()
        try:
            connection = self._idle_connection() or await self._connect(timeout)
            reply = await connection.exchange(request, limit, timeout)
            if self._closed:
                connection.close()
            elif connection.usable:
                self._idle.append(connection)
            return reply
        finally:
            if slots is not None:
                slots.release()

    def _idle_connection(self) -> _Connection | None:
        idle = self._idle
        while idle:
            connection = idle.pop()
            if connection.usable:
                return connection
        return None

    async def _connect(self, timeout: float) -> _Connection:
        loop = asyncio.get_running_loop()
        origin = self.origin
        extra: dict[str, Any] = {}
        if origin.tls is not None:
            extra = {"ssl": origin.tls, "server_hostname": origin.host}
        connect = loop.create_connection(
            lambda: _Connection(loop, self._fault), origin.host, origin.port, **extra
        )
        try:
            _, protocol = await asyncio.wait_for(connect, timeout)
        except (asyncio.TimeoutError, TimeoutError):
            raise self._fault("ConnectTimeout", f"Connection timeout to host {self._where()}") from None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise self._fault("ConnectError", f"Cannot connect to host {self._where()} [{reason}]") from None
        return protocol

    def _where(self) -> str:
        origin = self.origin
        return f"{origin.host}:{origin.port} ssl:{'default' if origin.tls is None else 'True'}"

    def close(self) -> None:
        """Close the idle connections, and each busy one as its answer ends."""
        self._closed = True
        for connection in self._idle:
            connection.close()
        self._idle.clear()
