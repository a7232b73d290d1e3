"""A minimal, fast OpenAI-compatible chat server for benchmarks: asyncio, keep-alive, fixed latency.

    python bench/fake_openai.py PORT LATENCY_S

Every POST gets the same small chat completion after LATENCY_S seconds; a POST whose body offers
the judge's `select_choice` tool gets a judge verdict instead; one that offers the simulator's
`next_user_message` tool gets the simulated user's next message at once (`Message N`, N the user
messages so far, so it never repeats itself and never ends the conversation: it runs to max_turns);
any other request (the judge preflight's `GET /models`) gets the completion too. `GET /count`
answers how many POSTs were served. It is deliberately tiny so that the benchmark measures the
engine, not the server.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys


def _message(content: str | None, name: str, arguments: str) -> dict:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": content, "tool_calls": [call]}


def _response(body: dict) -> bytes:
    data = json.dumps(body).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    return head + str(len(data)).encode() + b"\r\n\r\n" + data


AGENT = _response(
    {
        "id": "c1",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": _message("The weather in Paris is Sunny.", "get_weather", '{"city": "Paris"}'),
            }
        ],
    }
)
JUDGE = _response(
    {
        "id": "j1",
        "object": "chat.completion",
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": _message(None, "select_choice", '{"reasons": "fine", "choice": "Y"}'),
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
)


_SAID = re.compile(rb'"role":\s*"assistant"')


def simulated_user(body: bytes) -> bytes:
    """The simulator's answer: the next message, numbered by the user messages sent so far."""
    arguments = json.dumps(
        {"message": f"Message {len(_SAID.findall(body)) + 1}", "goal_reached": False, "gave_up": False}
    )
    return _response(
        {
            "id": "s1",
            "object": "chat.completion",
            "model": "simulator",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": _message(None, "next_user_message", arguments),
                }
            ],
            "usage": {"prompt_tokens": 80, "completion_tokens": 10, "total_tokens": 90},
        }
    )


class Server:
    def __init__(self, latency: float):
        self.latency = latency
        self.posts = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                if head.startswith(b"GET /count"):
                    count = str(self.posts).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(count), count))
                    continue
                self.posts += head.startswith(b"POST")  # not the judge preflight's GET /models
                if b"next_user_message" in body:  # the simulator answers at once: the engine is measured
                    writer.write(simulated_user(body))
                    await writer.drain()
                    continue
                if self.latency:
                    await asyncio.sleep(self.latency)
                writer.write(JUDGE if b"select_choice" in body else AGENT)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def main(port: int, latency: float) -> None:
    server = await asyncio.start_server(Server(latency).handle, "127.0.0.1", port, backlog=1024)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
