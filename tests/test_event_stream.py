"""The one event-stream reader every streamed protocol shares (`endpoints.base.post_events`):
server-sent events and newline-delimited JSON, picked by the answer's Content-Type, over a run's
aiohttp session, bounded by the endpoint's max_reply_bytes."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest
from support.protocol_servers import endpoint_config
from support.servers import Reply, ScriptedHTTPServer

from specengine.endpoints.base import Adapter, post_events, stream_kind
from specengine.errors import EndpointError
from specengine.transport.endpoint_client import EndpointClient

SSE_BODY = b"event: a\ndata: 1\n\n: a comment\nid: 7\n\ndata: two\ndata: lines\n\nevent: stop\ndata: {}\n\n"
NDJSON_BODY = b'{"n": 1}\n\n{"n": 2}\r\n{"n": 3}'


@pytest.fixture(scope="module")
def server():
    with ScriptedHTTPServer() as started:
        started.route("/sse", lambda _: Reply(body=SSE_BODY, headers={"Content-Type": "text/event-stream"}))
        for path, kind in (("/ndjson", "application/x-ndjson"), ("/jsonl", "application/jsonl")):
            started.route(path, lambda _, kind=kind: Reply(body=NDJSON_BODY, headers={"Content-Type": kind}))
        started.route("/json", lambda _: {"whole": True})
        started.route("/html", lambda _: Reply(body="<html>hi</html>", headers={"Content-Type": "text/html"}))
        yield started


def read(server: ScriptedHTTPServer, path: str, stop: str | None = None, **options: Any) -> Any:
    """(events fed, JSON body or None, what `opened` saw) of one post_events call over a run's client."""
    config = endpoint_config({"protocol": "http", "url": server.url_for(path)})
    config = dataclasses.replace(config, **options)
    fed: list[tuple[str, str]] = []
    seen: list[Any] = []

    def feed(event: str, data: str) -> bool:
        fed.append((event, data))
        return event == stop

    async def main() -> Any:
        async with EndpointClient(config.url, 2, config.timeout, config.max_reply_bytes) as client:
            adapter = Adapter(config, client)
            body, latency = await post_events(
                adapter, {"q": 1}, feed, time.perf_counter(), opened=lambda *got: seen.append(got)
            )
            assert latency > 0
            return fed, body, seen

    return asyncio.run(main())


def test_server_sent_events_are_fed_by_name_with_their_data_joined_and_empty_events_skipped(server):
    fed, body, seen = read(server, "/sse")
    assert fed == [("a", "1"), ("message", "two\nlines"), ("stop", "{}")]
    assert body is None
    assert seen[0][0] == 200 and seen[0][1]["content-type"] == "text/event-stream"
    assert server.requests_to("/sse")[-1].headers["accept"] == "text/event-stream, application/x-ndjson"


def test_reading_stops_at_the_event_the_feed_says_ends_it(server):
    fed, _, _ = read(server, "/sse", stop="a")
    assert fed == [("a", "1")]


@pytest.mark.parametrize("path", ["/ndjson", "/jsonl"])
def test_newline_delimited_json_feeds_each_non_blank_line(server, path):
    fed, body, _ = read(server, path)
    assert fed == [("message", '{"n": 1}'), ("message", '{"n": 2}'), ("message", '{"n": 3}')]
    assert body is None


def test_one_json_body_is_returned_for_the_caller_to_read_whole(server):
    fed, body, _ = read(server, "/json")
    assert (fed, body) == ([], {"whole": True})


def test_an_answer_that_is_no_stream_names_its_content_type(server):
    with pytest.raises(EndpointError) as raised:
        read(server, "/html")
    assert raised.value.message == (
        "expected an event stream (text/event-stream or application/x-ndjson), "
        "got text/html: '<html>hi</html>'"
    )


def test_a_stream_longer_than_max_reply_bytes_errors_the_turn(server):
    with pytest.raises(EndpointError) as raised:
        read(server, "/sse", max_reply_bytes=20)
    assert "reply larger than 20 bytes" in raised.value.message


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("text/event-stream; charset=utf-8", "sse"),
        ("application/x-ndjson", "ndjson"),
        ("application/jsonl", "ndjson"),
        ("application/json-seq", "ndjson"),
        ("Application/JSON", "json"),
        ("text/plain", None),
        ("", None),
    ],
)
def test_the_content_type_names_the_kind_of_stream(content_type, kind):
    assert stream_kind(content_type) == kind
