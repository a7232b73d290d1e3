"""`http` with `stream: true` joins a tool call sent in pieces over many events, as OpenAI-style chat
deltas send it (`index`, `id` and name first, `arguments` in pieces), end to end through the CLI
against a server streaming chunks made by the openai library's own types; and the joining itself,
piece by piece."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionChunk
from support.cli import write_project
from support.runs import run_spec
from support.servers import Reply, ScriptedHTTPServer

from specengine.endpoints.call_pieces import JoinedCalls
from specengine.endpoints.tool_call_shapes import CallItem, KeyMap, Unreadable, read_items


def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> str:
    """One chat completion chunk, as the openai library writes it."""
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    fields = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
    made = ChatCompletionChunk.model_validate({**fields, "choices": choices, "usage": usage})
    return made.model_dump_json(exclude_unset=True)


def piece(index: int, arguments: str, **head: str) -> dict:
    """A tool-call delta: the call's `index`, with `id` and `name` in its first piece only."""
    name = head.pop("name", None)
    function = {"arguments": arguments, **({"name": name} if name else {})}
    return {
        "tool_calls": [
            {"index": index, **head, **({"type": "function"} if name else {}), "function": function}
        ]
    }


# Two calls streamed side by side (index 0 and 1), their arguments cut mid-key and mid-value.
CHAT_STREAM = [
    chunk({"role": "assistant"}),
    chunk(piece(0, "", id="call_a", name="lookup_order")),
    chunk(piece(1, "", id="call_b", name="notify")),
    chunk(piece(0, '{"order_')),
    chunk(piece(1, '{"channel": "em')),
    chunk(piece(0, 'id": "A-17"}')),
    chunk(piece(1, 'ail", "to": "ann"}')),
    chunk({"content": "Order A-17 "}),
    chunk({"content": "ships today."}),
    chunk({}, finish="tool_calls"),
    chunk({}, usage={"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}),
    "[DONE]",
]
STRAY = [chunk({"role": "assistant"}), chunk(piece(3, '{"x": 1}')), "[DONE]"]

ENDPOINT = {
    "protocol": "http",
    "stream": True,
    "body": {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "{{ message }}"}]},
    "reply": "json.choices[0].delta.content",
    "tool_calls": "json.choices[0].delta.tool_calls",
    "retries": 0,
}

SPEC = """
suite: pieces
evals:
  - name: chat deltas
    endpoint: chat
    send: where is A-17?
    expect:
      - equals: Order A-17 ships today.
      - called_tool_with: {name: lookup_order, args: {order_id: A-17}}
      - called_tool_with: {name: notify, args: {channel: email, to: ann}}
      - max_tool_calls: 2
  - name: stray piece
    endpoint: stray
    send: hi
    expect: [succeeded]
"""


@pytest.fixture(scope="module")
def pieces_run(tmp_path_factory):
    with ScriptedHTTPServer() as server:
        server.route("/v1/chat/completions", lambda request: Reply(events=CHAT_STREAM))
        server.route("/stray", lambda request: Reply(events=STRAY))
        folder = tmp_path_factory.mktemp("http-pieces")
        write_project(
            folder,
            endpoints={
                "chat": {**ENDPOINT, "url": server.url_for("/v1/chat/completions")},
                "stray": {**ENDPOINT, "url": server.url_for("/stray")},
            },
            defaults={"endpoint": "chat"},
        )
        yield run_spec(folder, SPEC, "-j", "2")


def test_a_call_sent_in_pieces_over_many_events_is_one_call_with_its_arguments_joined(pieces_run):
    run = pieces_run
    assert run.status("chat deltas") == "passed", run.cli.output
    case = run.case("chat deltas")
    [turn] = [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]
    assert turn["content"] == "Order A-17 ships today."
    assert turn["tool_calls"] == [
        {"name": "lookup_order", "args": {"order_id": "A-17"}},
        {"name": "notify", "args": {"channel": "email", "to": "ann"}},
    ]


def test_a_piece_of_no_call_started_before_is_a_located_mistake(pieces_run):
    error = pieces_run.case("stray piece")["error"]
    assert error["type"] == "EndpointConfigError"
    assert error["message"].startswith("specengine.yaml:")
    assert (
        "`tool_calls: json.choices[0].delta.tool_calls` gave a piece of a tool call (index 3, no name) "
        "that no earlier event started" in error["message"]
    )


def joined(*items: CallItem) -> list[tuple[str, object, str | None, str | None]]:
    calls = JoinedCalls()
    assert all(calls.add(item) for item in items)
    return [(call.name, call.args, call.id, call.note) for call in calls.calls()]


def test_pieces_join_by_id_before_index_and_a_new_name_starts_a_new_call():
    # a multi-step stream: the second model call's tool call has index 0 again, and a new name
    assert joined(
        CallItem("lookup_order", "", "call_a", 0),
        CallItem(None, '{"order_id": ', None, 0),
        CallItem(None, '"A-17"}', None, 0),
        CallItem("refund", '{"amount"', "call_b", 0),
        CallItem(None, ": 5}", "call_b"),
    ) == [("lookup_order", {"order_id": "A-17"}, "call_a", None), ("refund", {"amount": 5}, "call_b", None)]


def test_a_repeated_name_and_id_continue_the_call_and_a_structure_is_taken_whole():
    assert joined(
        CallItem("search", '{"q": "sho', "c1"),
        CallItem("search", 'es"}', "c1"),  # a server that repeats name and id on every piece
        CallItem("get_weather", {}, "toolu_1", 1),  # Anthropic's start: input as {}, then its JSON text
        CallItem(None, '{"city": "Paris"}', None, 1),
        CallItem("ping", {"n": 1}),
        CallItem("noop", ""),
    ) == [
        ("search", {"q": "shoes"}, "c1", None),
        ("get_weather", {"city": "Paris"}, "toolu_1", None),
        ("ping", {"n": 1}, None, None),
        ("noop", {}, None, None),
    ]


def test_joined_arguments_that_are_not_json_keep_the_call_with_a_note():
    [(name, args, _, note)] = joined(CallItem("lookup_order", '{"order_id": "A-', "c1", 0))
    assert (name, args) == ("lookup_order", {})
    assert note is not None and note.startswith("arguments were not valid JSON")


def test_a_piece_whose_id_and_index_match_no_call_is_refused():
    calls = JoinedCalls()
    assert calls.add(CallItem("a", "", "c1", 0))
    assert not calls.add(CallItem(None, "{}", "c9"))
    assert not calls.add(CallItem(None, "{}", None, 1))
    assert calls.add(CallItem(None, "{}", "c9", 0))  # an unknown id, a known index


def test_a_nameless_item_with_an_index_or_id_is_a_piece_only_where_a_stream_reads_pieces():
    item = {"index": 0, "function": {"arguments": '{"ord'}}
    assert read_items([item], "json.calls", pieces=True) == (CallItem(None, '{"ord', None, 0),)
    with pytest.raises(Unreadable, match="item 0 is not a tool call specengine reads"):
        read_items([item], "json.calls")
    mapping = KeyMap(source="json.calls", name="tool", args="data", id="ref")
    assert read_items([{"ref": "c1", "data": '": 1}'}], "json.calls", mapping, pieces=True) == (
        CallItem(None, '": 1}', "c1", None),
    )
    with pytest.raises(Unreadable):  # neither a name, nor an index or id: no call, no piece
        read_items([{"function": {"arguments": "{}"}}], "json.calls", pieces=True)
