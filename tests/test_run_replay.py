"""`replay: input.messages` end to end: a dataset row's recorded conversation (OpenAI chat shape, as
MLflow datasets and AppKit's `userTurns` hold it) sent user message by user message on one
conversation, checks on the last turn or the whole conversation, `plan` showing the turns, and
every mistake located (in the spec for the form, in the dataset for a row's messages)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.runs import check, run_spec, setup_project, user_messages
from support.servers import Reply

CONVERSATIONS = [
    {
        "inputs": {
            "messages": [
                {"role": "system", "content": "You are a booking assistant."},
                {"role": "user", "content": "Book a table at Luigi's"},
                {"role": "assistant", "content": "RECORDED ANSWER: for how many?"},
                {"role": "user", "content": [{"type": "text", "text": "For 4 people"}]},
            ]
        },
        "expectations": {"expected_response": "Booked for 4"},
        "dataset_record_id": "dr-booking",
    },
    {
        "inputs": {"messages": [{"role": "user", "content": "Weather in Paris?"}]},
        "expectations": {"expected_response": "Sunny"},
        "dataset_record_id": "dr-weather",
    },
]
SPEC = """
evals:
  - name: recorded chats
    dataset: data/chats.jsonl
    replay: input.messages
    expect:
      - includes: "{{ expected.expected_response }}"
      - called_tool: book_table
        scope: conversation
        soft: true
"""


def agent_script(messages):
    last = messages[-1]["content"]
    if last == "Book a table at Luigi's":
        return Reply(
            content="For how many?", tool_calls=[{"name": "find_restaurant", "args": {"name": "Luigi's"}}]
        )
    if last == "For 4 people":
        return Reply(content="Booked for 4", tool_calls=[{"name": "book_table", "args": {"people": 4}}])
    return "Sunny in Paris"


def write_rows(folder: Path, rows: list) -> None:
    data = folder / "data"
    data.mkdir(exist_ok=True)
    (data / "chats.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def project(tmp_path, agent_server):
    agent_server.script(agent_script)
    setup_project(tmp_path, agent_server)
    write_rows(tmp_path, CONVERSATIONS)
    return tmp_path


def test_each_user_message_is_one_turn_of_one_conversation(project, agent_server):
    run = run_spec(project, SPEC, "-j", "1")
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::recorded chats[dr-booking]", "spec.yaml::recorded chats[dr-weather]"]
    bodies = agent_server.bodies
    assert [user_messages(body) for body in bodies] == [
        ["Book a table at Luigi's"],
        ["Book a table at Luigi's", "For 4 people"],  # the same conversation: history replayed
        ["Weather in Paris?"],
    ]
    second = bodies[1]["messages"]
    assert {"role": "assistant", "content": "For how many?"} in [
        {"role": m["role"], "content": m["content"]} for m in second
    ]  # the agent's own answer is the history, never the row's recorded one
    assert "RECORDED ANSWER" not in json.dumps(bodies)
    assert all(m["role"] != "system" for body in bodies for m in body["messages"])
    booking = run.case("recorded chats[dr-booking]")
    transcript = booking["trials"][0]["transcript"]
    assert [m["content"] for m in transcript if m["role"] == "user"] == [
        "Book a table at Luigi's",
        "For 4 people",
    ]
    assert {c["name"]: (c["turn"], c["status"]) for c in booking["trials"][0]["checks"]} == {
        'includes "Booked for 4"': (2, "passed"),
        "called_tool book_table": (2, "passed"),
    }


def test_checks_see_the_last_turn_unless_scoped_to_the_conversation(project, agent_server):
    spec = SPEC.replace("book_table", "find_restaurant")
    run = run_spec(project, spec)
    booking = run.case("recorded chats[dr-booking]")
    assert check(booking, "called_tool find_restaurant")["status"] == "passed"  # turn 1, scope conversation
    unscoped = spec.replace("        scope: conversation\n", "")
    run = run_spec(project, unscoped)
    assert check(run.case("recorded chats[dr-booking]"), "called_tool find_restaurant")["status"] == "failed"


def test_plan_shows_the_turns_of_every_row(project):
    (project / "spec.yaml").write_text(SPEC, encoding="utf-8")
    result = run_cli(["plan", "spec.yaml", "--json"], cwd=project)
    assert result.exit_code == 0, result.output
    cases = json.loads(result.stdout)["cases"]
    steps = {case["id"]: [step["send"] for step in case["steps"]] for case in cases}
    assert steps == {
        "spec.yaml::recorded chats[dr-booking]": ["Book a table at Luigi's", "For 4 people"],
        "spec.yaml::recorded chats[dr-weather]": ["Weather in Paris?"],
    }
    text = run_cli(["plan", "spec.yaml"], cwd=project)
    assert '  turn 1 send: "Book a table at Luigi\'s"\n' in text.stdout
    assert "  turn 2 send: 'For 4 people'\n" in text.stdout


def test_a_row_without_a_user_message_is_an_error_at_its_line(project, agent_server):
    write_rows(
        project,
        [
            CONVERSATIONS[1],
            {
                "inputs": {"messages": [{"role": "assistant", "content": "Hi"}]},
                "expectations": {"expected_response": "Hi"},  # the spec's check reads it
            },
        ],
    )
    run = run_spec(project, SPEC)
    assert run.exit_code == 2
    assert run.cli.stderr.strip().splitlines()[0] == (
        "data/chats.jsonl:2:1: replay: input.messages holds no message with role user, so there is nothing"
        " to send, for the eval 'recorded chats' (spec.yaml:4)"
    )
    assert agent_server.bodies == []


def test_a_row_without_the_messages(project, agent_server):
    write_rows(
        project, [{"inputs": {"question": "Weather?"}, "expectations": {"expected_response": "Sunny"}}]
    )
    run = run_spec(project, SPEC)
    assert run.exit_code == 2
    assert run.cli.stderr.startswith(  # proven with the rows before the run, naming the keys they have
        "spec.yaml:4:13: replay: undefined variable input.messages: input has no key 'messages'"
    )
    assert "it has: question" in run.cli.stderr


def test_inline_input_without_a_dataset(tmp_path, agent_server):
    agent_server.script(agent_script)
    setup_project(tmp_path, agent_server)
    spec = """
    evals:
      - name: one chat
        input:
          messages:
            - {role: user, content: "Book a table at Luigi's"}
            - {role: user, content: For 4 people}
        replay: input.messages
        expect: [{includes: Booked}]
    """
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    assert len(agent_server.bodies) == 2


@pytest.mark.parametrize(
    ("eval_text", "message"),
    [
        (
            "replay: input.messages\n    send: hi",
            "spec.yaml:2:5: an eval has either replay (the turns of a row's messages) or send, not both",
        ),
        (
            "replay: messages",
            "spec.yaml:3:13: replay: name the messages under input, e.g. input.messages",
        ),
        ("replay: [input.messages]", "spec.yaml:3:13: replay must be text, not a list"),
        (
            "replay: input.messages",
            "spec.yaml:3:13: replay: there is no input.messages; this eval has no dataset, so its own input"
            " must hold the messages",
        ),
        (
            "replay: input.chat\n    input: {chat: [{role: assistant, content: hi}]}",
            "spec.yaml:3:13: replay: input.chat holds no message with role user, so there is nothing to send;"
            " this eval has no dataset, so its own input must hold the messages",
        ),
    ],
)
def test_validate_checks_the_form(tmp_path, agent_server, eval_text, message):
    setup_project(tmp_path, agent_server)
    spec = f"evals:\n  - name: chats\n    {eval_text}\n    expect: [succeeded]\n"
    (tmp_path / "spec.yaml").write_text(spec, encoding="utf-8")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == message
