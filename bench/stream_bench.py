"""The CPU one turn's event stream costs: 10,000 small events through the shared reader.

A server in a child process (its CPU is not counted) answers every POST with the same stream of
`--events` small events; this process reads it through `endpoints.base.post_events` over a run's
EndpointClient (the aiohttp session, httpx over it, httpx-sse), the way a turn does, and prints the
best CPU milliseconds (user + system, this process only) of each way over `--repeat` rounds:

- SSE, the reader alone (a feed that keeps nothing);
- newline-delimited JSON, the reader alone;
- AG-UI: the ag-ui adapter's reading of TEXT_MESSAGE_CONTENT events (JSON parsed, deltas joined);
- AI SDK: the ai-sdk adapter's reading of text-delta chunks;
- http with `stream: true`: the endpoint's expressions evaluated on each event: a plain path
  (`json.delta`, over JSON lines), OpenAI-style chat deltas (`reply` and `tool_calls` paths into
  `json.choices[0].delta`, over SSE), a guarded path on the ag-ui events (`json.delta if json.type
  == ...`), all read without a template, and an expression with a filter, which the sandbox
  evaluates.

Usage: python bench/stream_bench.py [--events 10000] [--repeat 5]
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from timing import REPO, arguments

sys.path.insert(0, str(REPO))

from specengine.endpoints.ag_ui import AgUiRun  # noqa: E402
from specengine.endpoints.ai_sdk import UiMessageStream  # noqa: E402
from specengine.endpoints.base import Adapter, post_events  # noqa: E402
from specengine.endpoints.http import HttpAdapter  # noqa: E402
from specengine.endpoints.http_stream import StreamReading  # noqa: E402
from specengine.plan import EndpointConfig  # noqa: E402
from specengine.transport.endpoint_client import EndpointClient  # noqa: E402

SERVER = """
import sys
from aiohttp import web

count = int(sys.argv[2])
ag_ui = 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"word "}\\n\\n' * count
ai_sdk = 'data: {"type":"text-start","id":"t1"}\\n\\n'
ai_sdk += 'data: {"type":"text-delta","id":"t1","delta":"word "}\\n\\n' * count + "data: [DONE]\\n\\n"
chat = 'data: {"choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}\\n\\n' * count
bodies = {
    "/sse": ("text/event-stream", ag_ui),
    "/chat": ("text/event-stream", chat + "data: [DONE]\\n\\n"),
    "/ndjson": ("application/x-ndjson", '{"delta":"word "}\\n' * count),
    "/ai-sdk": ("text/event-stream", ai_sdk),
}


async def answer(request):
    kind, text = bodies[request.path]
    return web.Response(text=text, content_type=kind)


app = web.Application()
app.router.add_post("/{name}", answer)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("ready", flush=True))
"""


@contextmanager
def server(events: int) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), str(events)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait()


def config(url: str, **options: Any) -> EndpointConfig:
    return EndpointConfig(name="bench", protocol="http", url=url, options=options, timeout=30.0)


def keep_nothing(event: str, data: str) -> bool:
    return False


Feed = Callable[[str, str], bool]


async def cpu_of(endpoint: EndpointConfig, make_feed: Callable[[], Feed], http: bool) -> float:
    """CPU seconds of one read of the stream (the client made beforehand)."""
    async with EndpointClient(endpoint.url, 1, endpoint.timeout, endpoint.max_reply_bytes) as client:
        adapter = HttpAdapter(endpoint, client) if http else Adapter(endpoint, client)
        client.httpx_client()
        started = time.process_time()
        feed = StreamReading(adapter).feed if isinstance(adapter, HttpAdapter) else make_feed()
        await post_events(adapter, {}, feed, time.perf_counter())
        return time.process_time() - started


def main() -> None:
    args = arguments(__doc__, events=10_000, repeat=5)
    with server(args.events) as base:
        ways: dict[str, tuple[EndpointConfig, Callable[[], Feed], bool]] = {
            "SSE, reader alone": (config(base + "/sse"), lambda: keep_nothing, False),
            "JSON lines, reader alone": (config(base + "/ndjson"), lambda: keep_nothing, False),
            "ag-ui TEXT_MESSAGE_CONTENT": (config(base + "/sse"), lambda: AgUiRun([], {}).feed, False),
            "ai-sdk text-delta": (config(base + "/ai-sdk"), lambda: UiMessageStream().feed, False),
            "http stream: true, json.delta": (
                config(base + "/ndjson", body={}, reply="json.delta", stream=True),
                lambda: keep_nothing,
                True,
            ),
            "http SSE chat deltas": (
                config(
                    base + "/chat",
                    body={},
                    reply="json.choices[0].delta.content",
                    tool_calls="json.choices[0].delta.tool_calls",
                    stream=True,
                ),
                lambda: keep_nothing,
                True,
            ),
            "http SSE, path if type ==": (
                config(
                    base + "/sse",
                    body={},
                    reply="json.delta if json.type == 'TEXT_MESSAGE_CONTENT'",
                    stream=True,
                ),
                lambda: keep_nothing,
                True,
            ),
            "http SSE, a filter (sandbox)": (
                config(base + "/sse", body={}, reply="json.delta | string", stream=True),
                lambda: keep_nothing,
                True,
            ),
        }
        best = {name: float("inf") for name in ways}
        for _ in range(args.repeat):
            for name, (endpoint, feed, http) in ways.items():
                best[name] = min(best[name], asyncio.run(cpu_of(endpoint, feed, http)))
    print(f"{args.events:,} small events in one answer: best CPU of {args.repeat} rounds")
    for name, seconds in best.items():
        print(f"  {name:32} {seconds * 1000:7.1f} ms  ({seconds / args.events * 1e6:.2f} µs per event)")
    print(json.dumps({name: round(seconds * 1000, 1) for name, seconds in best.items()}))


if __name__ == "__main__":
    main()
