"""The floor run_bench.py measures specengine against: a bare loop of the same requests, no engine.

    python bench/raw_clients.py aiohttp URL CASES CONCURRENCY

Sends CASES chat completions (the body specengine sends for the benchmark's spec) with at most
CONCURRENCY in flight on one aiohttp.ClientSession, parses each JSON answer, and exits. It runs on
the event loop specengine picks (uvloop when it is installed), so a ratio compares the engine with
the wire it runs on, not two loops.
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


def main() -> None:
    client, url, cases, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    loop = {"aiohttp": with_aiohttp}[client]
    try:
        import uvloop
    except ImportError:
        asyncio.run(loop(url, cases, concurrency))
    else:
        uvloop.run(loop(url, cases, concurrency))


if __name__ == "__main__":
    main()
