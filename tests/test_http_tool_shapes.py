"""`specengine run` against a support bot's own JSON API: every tool-call shape real APIs use is read
without configuration, a key map reads any other, and an item that cannot be read shows itself and
the key map to write for it."""

from __future__ import annotations

import pytest
from support.cli import write_project
from support.runs import run_spec
from support.support_bot import SHAPES, SupportBot

from specengine.endpoints.tool_call_shapes import Unreadable, key_map, read_calls

KNOWN = [name for name in SHAPES if name != "own-shape"]


@pytest.fixture(scope="module")
def bot():
    with SupportBot() as bot:
        yield bot


@pytest.fixture(scope="module")
def shapes_run(bot, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shapes")
    write_project(
        folder,
        endpoints={
            "bot": bot.endpoint(),
            "bot-mapped": bot.endpoint(tool_calls={"from": "json.actions", "name": "op", "args": "data"}),
        },
        defaults={"endpoint": "bot"},
    )
    evals = "".join(
        f"""
  - name: {name}
    send: "Where is my order? ({name})"
    expect:
      - called_tool_with: {{name: lookup_order, args: {{order_id: ORD-123}}}}
"""
        for name in KNOWN
    )
    evals += """
  - name: own shape with a key map
    endpoint: bot-mapped
    send: "Where is my order? (own-shape)"
    expect:
      - called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
  - name: own shape without one
    send: "Where is my order? (own-shape)"
    expect:
      - succeeded
"""
    bot.clear()
    return run_spec(folder, "evals:" + evals)


@pytest.mark.parametrize("shape", KNOWN)
def test_each_known_shape_is_read_without_configuration(shapes_run, shape):
    case = shapes_run.case(shape)
    assert case["status"] == "passed", case
    calls = [message for message in case["trials"][0]["transcript"] if message.get("tool_calls")]
    assert calls[0]["tool_calls"] == [{"name": "lookup_order", "args": {"order_id": "ORD-123"}}]


def test_a_key_map_reads_the_bots_own_shape(shapes_run):
    assert shapes_run.status("own shape with a key map") == "passed"


def test_an_unreadable_item_shows_itself_and_the_key_map_to_write(shapes_run, bot):
    case = shapes_run.case("own shape without one")
    assert case["status"] == "error"
    message = case["trials"][0]["error"]["message"]
    assert '{"op": "lookup_order", "data": {"order_id": "ORD-123"}}' in message
    assert "`tool_calls: {from: json.actions, name: op, args: data}`" in message
    assert bot.hits() == len(KNOWN) + 2  # one request per case: a shape mistake is not retried


def test_validate_reads_a_key_map_and_refuses_one_without_from(tmp_path, bot):
    from support.cli import run_cli, write_spec

    write_project(tmp_path, endpoints={"bot": bot.endpoint(tool_calls={"name": "op", "args": "data"})})
    write_spec(tmp_path, "spec", "evals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "specengine.yaml:" in result.output and "from" in result.output


def test_read_calls_unit_shapes_and_errors():
    mapping = key_map({"from": "json.calls", "name": "fn.name", "args": "fn.payload", "id": "ref"})
    [call] = read_calls([{"fn": {"name": "a", "payload": '{"x": 1}'}, "ref": 7}], "json.calls", mapping)
    assert (call.name, call.args, call.id) == ("a", {"x": 1}, "7")
    assert read_calls({"name": "a", "args": {}}, "json.call")[0].name == "a"  # one call, not a list
    assert read_calls(None, "json.calls") == ()
    with pytest.raises(Unreadable, match="must give a list of tool calls"):
        read_calls("lookup_order", "json.reply")
    with pytest.raises(Unreadable, match="no key holds a text"):
        read_calls([{"data": {"x": 1}, "n": 2}], "json.calls")
