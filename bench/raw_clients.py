"""The floor run_bench.py measures specengine against: a bare loop of the same requests, no engine.

    python bench/raw_clients.py aiohttp|httpx URL CASES CONCURRENCY

Sends CASES chat completions (the body specengine sends for the benchmark's spec) with at most
CONCURRENCY in flight, parses each JSON answer, and exits. `aiohttp` uses one aiohttp.ClientSession,
`httpx` one httpx.AsyncClient with its default transport. Both run on the event loop specengine
picks (uvloop when it is installed), so a ratio compares clients, not loops.
"""

from __future__ import annotations

import asyncio
import json
import sys

BODY = {"model": "bench", "messages": [{"role": "user", "content": "What's the weather in Paris?"}]}


async def with_aiohttp(url: str, cases: int, concurrency: int) -> None:
    import aiohttp

    slots = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def one() -> None:
            async with slots, session.post(url, json=BODY) as response:
                json.loads(await response.read())

        await asyncio.gather(*(one() for _ in range(cases)))


async def with_httpx(url: str, cases: int, concurrency: int) -> None:
    import httpx

    slots = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one() -> None:
            async with slots:
                response = await client.post(url, json=BODY)
                json.loads(response.content)

        await asyncio.gather(*(one() for _ in range(cases)))


def main() -> None:
    client, url, cases, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    loop = {"aiohttp": with_aiohttp, "httpx": with_httpx}[client]
    try:
        import uvloop
    except ImportError:
        asyncio.run(loop(url, cases, concurrency))
    else:
        uvloop.run(loop(url, cases, concurrency))


if __name__ == "__main__":
    main()
