"""The `a2a` protocol: end to end against the A2A route of a real LangGraph server (`/a2a/{assistant
UUID}`), through the real CLI in one run (plain and streamed, trials, `-j`); then the reading of
answers that server does not give (JSON-RPC errors, rejected tasks, plain messages, reported tool
arguments, a task still working) against scripted A2A answers."""

from __future__ import annotations

from itertools import combinations

import pytest
from support.cli import run_cli, write_project, write_spec
from support.protocol_servers import talk
from support.runs import check, run_spec
from support.servers import Reply, ScriptedHTTPServer

CITIES = ["Paris", "Rome", "Oslo", "Lima"]
TRIALS = 3

A2A_SPEC = """
suite: a2a
evals:
  - name: tool call
    send: What's the weather in Paris?
    expect: [succeeded, {equals: It is sunny in Paris.}, {called_tool: get_weather}]
  - name: argument check
    send: What's the weather in Paris?
    expect:
      - called_tool_with: {name: get_weather, args: {city: Paris}}
  - name: follow-up in the context
    turns:
      - send: What's the weather in Rome?
      - send: and tomorrow?
        expect: [succeeded, {equals: Tomorrow it is sunny in Rome too.}]
  - name: reset forgets
    turns:
      - send: What's the weather in Oslo?
      - reset
      - send: and tomorrow?
        expect: [{equals: Which city do you mean?}]
  - name: task failed
    send: explode
    expect: [succeeded]
  - name: input required
    turns:
      - send: book a table
        expect: [succeeded, {includes: For how many people?}]
      - send: "4"
        expect: [{equals: Booked a table for 4.}]
  - name: interleaved
    trials: 3
    dataset:
      - {id: paris, input: {city: Paris}}
      - {id: rome, input: {city: Rome}}
      - {id: oslo, input: {city: Oslo}}
      - {id: lima, input: {city: Lima}}
    turns:
      - send: "What's the weather in {{ input.city }}?"
        expect: [{called_tool: get_weather}]
      - send: and tomorrow?
        expect: [{equals: "Tomorrow it is sunny in {{ input.city }} too."}]
"""

STREAM_SPEC = """
suite: a2a streamed
endpoint: streamed
evals:
  - name: streamed tool call
    turns:
      - send: What's the weather in Lima?
        expect: [succeeded, {equals: It is sunny in Lima.}, {called_tool: get_weather}]
      - send: and tomorrow?
        expect: [{equals: Tomorrow it is sunny in Lima too.}]
  - name: streamed task failed
    send: explode
    expect: [succeeded]
"""


@pytest.fixture(scope="module")
def a2a_run(langgraph_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("a2a-run")
    write_project(
        folder,
        endpoints={
            "agent": langgraph_server.endpoint("a2a"),
            "streamed": langgraph_server.endpoint("a2a", stream=True),
        },
        defaults={"endpoint": "agent"},
    )
    write_spec(folder, "specs/a2a.yaml", A2A_SPEC)
    write_spec(folder, "specs/streamed.yaml", STREAM_SPEC)
    return run_spec(folder, None, "-j", "12", paths=["specs"])


def assistant_turns(case, trial=0):
    return [m for m in case["trials"][trial]["transcript"] if m["role"] == "assistant"]


def test_only_the_argument_check_and_the_failed_tasks_fail(a2a_run):
    assert a2a_run.exit_code == 1, a2a_run.cli.output
    failed = sorted(case["id"] for case in a2a_run.cases if case["status"] != "passed")
    assert failed == [
        "specs/a2a.yaml::argument check",
        "specs/a2a.yaml::task failed",
        "specs/streamed.yaml::streamed task failed",
    ]
    assert a2a_run.summary["errored"] == 0


def test_reply_from_the_artifact_and_tool_names_from_tool_results(a2a_run):
    (assistant,) = assistant_turns(a2a_run.case("tool call"))
    assert assistant["content"] == "It is sunny in Paris."
    assert assistant["tool_calls"] == [{"name": "get_weather", "args": {}}]


def test_an_argument_check_says_the_protocol_reports_no_arguments(a2a_run):
    case = a2a_run.case("argument check")
    assert case["status"] == "failed" and case["error"] is None
    reason = case["trials"][0]["checks"][0]["reason"]
    assert "without its arguments" in reason and "called_tool" in reason


def test_the_context_carries_the_conversation_and_a_reset_drops_it(a2a_run):
    first, second = assistant_turns(a2a_run.case("follow-up in the context"))
    assert a2a_run.status("follow-up in the context") == "passed"
    assert first["session_id"] and first["session_id"] == second["session_id"]
    before, after = assistant_turns(a2a_run.case("reset forgets"))
    assert a2a_run.status("reset forgets") == "passed"
    assert before["session_id"] != after["session_id"]


def test_a_failed_task_is_a_failed_turn_with_its_message(a2a_run):
    for name, message in [
        ("task failed", "task failed: Error executing assistant: RuntimeError"),
        ("streamed task failed", "task failed: the agent exploded on purpose"),
    ]:
        case = a2a_run.case(name)
        assert case["status"] == "failed" and case["error"] is None
        (assistant,) = assistant_turns(case)
        assert assistant["error"] == message
        assert message in check(case, "succeeded")["reason"]


def test_input_required_is_a_completed_turn_and_the_answer_continues_the_task(a2a_run):
    case = a2a_run.case("input required")
    assert case["status"] == "passed", case
    question, booked = assistant_turns(case)
    assert "error" not in question
    assert booked["content"] == "Booked a table for 4."


def test_trials_and_parallel_conversations_keep_their_own_contexts(langgraph_server, a2a_run):
    cases = [a2a_run.case(f"interleaved[{city.lower()}]") for city in CITIES]
    assert [case["passed_trials"] for case in cases] == [TRIALS] * len(CITIES)
    contexts = []
    for case in cases:
        for trial in range(TRIALS):
            first, second = assistant_turns(case, trial)
            assert first["session_id"] == second["session_id"]
            contexts.append(first["session_id"])
    assert len(set(contexts)) == len(CITIES) * TRIALS
    threads = [langgraph_server.post("/threads/search", {"ids": [c], "limit": 1})[0] for c in contexts]
    spans = [(thread["created_at"], thread["updated_at"]) for thread in threads]
    assert any(a[0] < b[1] and b[0] < a[1] for a, b in combinations(spans, 2))


def test_streamed_turns_record_the_time_to_first_token(a2a_run):
    case = a2a_run.case("streamed tool call")
    assert case["status"] == "passed", case
    first, second = assistant_turns(case)
    assert 0 < first["ttft_s"] <= first["latency_s"]
    assert first["session_id"] == second["session_id"]
    assert "ttft_s" not in assistant_turns(a2a_run.case("tool call"))[0]


# --- answers the LangGraph server does not give, from a scripted A2A agent ---


class ScriptedA2A(ScriptedHTTPServer):
    """Answers each JSON-RPC request with the next scripted result (or error)."""

    def __init__(self, *answers):
        super().__init__()
        self.answers = list(answers)
        self.route("/a2a", self._answer)

    def _answer(self, request):
        answer = self.answers.pop(0)
        if isinstance(answer, Reply):
            return answer
        key = "error" if "code" in answer else "result"
        return {"jsonrpc": "2.0", "id": request.json["id"], key: answer}

    @property
    def bodies(self):
        return [request.json for request in self.requests_to("/a2a")]

    def endpoint(self, **extra):
        return {"protocol": "a2a", "url": self.url_for("/a2a"), **extra}


def task(state, *, message=None, history=(), artifacts=None, task_id="t1", context="c1"):
    status = {"state": state, **({"message": message} if message else {})}
    body = {"kind": "task", "id": task_id, "contextId": context, "status": status, "history": list(history)}
    if artifacts is not None:
        body["artifacts"] = artifacts
    return body


def agent(*parts):
    return {"kind": "message", "role": "agent", "messageId": f"m{len(parts)}", "parts": list(parts)}


def text(value):
    return {"kind": "text", "text": value}


def test_json_rpc_error_and_rejected_task_are_failed_turns():
    with ScriptedA2A(
        {"code": -32602, "message": "Missing required 'messageId'"},
        task("rejected", message=agent(text("I only talk about the weather."))),
    ) as server:
        first, second = talk(server.endpoint(), "hi", "tell me a joke")
    assert first.error == "-32602: Missing required 'messageId'"
    assert second.error == "task rejected: I only talk about the weather."
    assert second.reply == ""


def test_a_message_result_and_reported_tool_arguments():
    calls = {"tool_calls": [{"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}]}
    results = {"tool_results": [{"toolCallId": "c1", "name": "get_weather", "content": "sunny"}]}
    answer = agent({"kind": "data", "data": calls}, {"kind": "data", "data": results}, text("Sunny."))
    with ScriptedA2A({**answer, "contextId": "c9"}) as server:
        (turn,) = talk(server.endpoint(), "weather in Paris?")
    assert turn.reply == "Sunny." and turn.error is None and turn.session_id == "c9"
    assert [(call.name, call.args, call.note) for call in turn.tool_calls] == [
        ("get_weather", {"city": "Paris"}, None)
    ]


def test_each_message_has_a_fresh_id_and_the_context_and_waiting_task_go_back():
    with ScriptedA2A(
        task("input-required", message=agent(text("Which city?")), task_id="t1", context="c1"),
        task("completed", artifacts=[{"artifactId": "a", "parts": [text("Sunny in Oslo.")]}], context="c1"),
        task("completed", message=agent(text("Done.")), task_id="t2", context="c1"),
    ) as server:
        turns = talk(server.endpoint(), "weather?", "Oslo", "thanks")
    assert [turn.reply for turn in turns] == ["Which city?", "Sunny in Oslo.", "Done."]
    assert turns[0].error is None  # the agent asked the user something
    messages = [body["params"]["message"] for body in server.bodies]
    assert len({message["messageId"] for message in messages}) == 3
    assert [message.get("contextId") for message in messages] == [None, "c1", "c1"]
    assert [message.get("taskId") for message in messages] == [None, "t1", None]


def test_a_task_still_working_is_polled_until_it_settles():
    with ScriptedA2A(
        task("submitted"),
        task("working"),
        task("completed", artifacts=[{"artifactId": "a", "parts": [text("Sunny.")]}]),
    ) as server:
        (turn,) = talk(server.endpoint(), "weather?")
    assert turn.reply == "Sunny."
    methods = [body["method"] for body in server.bodies]
    assert methods == ["message/send", "tasks/get", "tasks/get"]
    assert server.bodies[1]["params"] == {"id": "t1"}


def test_streamed_artifact_chunks_are_appended():
    def event(result):
        return {"jsonrpc": "2.0", "id": "1", "result": result}

    chunk = {"kind": "artifact-update", "taskId": "t1", "contextId": "c1"}
    events = [
        event(task("submitted")),
        event({**chunk, "artifact": {"artifactId": "a", "parts": [text("Sun")]}}),
        event({**chunk, "append": True, "artifact": {"artifactId": "a", "parts": [text("ny.")]}}),
        event(
            {
                "kind": "status-update",
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "final": True,
            }
        ),
    ]
    with ScriptedA2A(Reply(events=events)) as server:
        (turn,) = talk(server.endpoint(stream=True), "weather?")
    assert (turn.reply, turn.error, turn.session_id) == ("Sunny.", None, "c1")
    assert turn.ttft_s is not None
    assert server.bodies[0]["method"] == "message/stream"


def test_ask_says_a_task_that_stays_working_was_still_working(tmp_path):
    with ScriptedA2A(*[task("working")] * 40) as server:
        write_project(tmp_path, endpoints={"agent": server.endpoint(timeout=1)})
        asked = run_cli(["ask", "agent", "weather?"], cwd=tmp_path)
    assert asked.exit_code == 1
    assert "TimeoutError: the task was still working after 1." in asked.output
    assert "no answer within" not in asked.output
    assert [body["method"] for body in server.bodies][:2] == ["message/send", "tasks/get"]
