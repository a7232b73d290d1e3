"""The `langgraph` protocol against a real LangGraph server (`langgraph dev` with a scripted graph).

One `specengine run` through the real CLI holds every case (plain and streamed, with trials and
`-j`, so conversations interleave on the server); each test reads its part of the results. The
server answers each run after about a second, so running the cases together keeps the suite fast.
"""

from __future__ import annotations

from itertools import combinations

import pytest
from support.cli import write_project, write_spec
from support.protocol_servers import talk
from support.runs import check, run_spec

from specengine.errors import EndpointError

CITIES = ["Paris", "Rome", "Oslo", "Lima"]
TRIALS = 3

WEATHER_SPEC = """
suite: langgraph
evals:
  - name: tool call with arguments
    send: What's the weather in Paris?
    expect:
      - succeeded
      - equals: It is sunny in Paris.
      - called_tool_with: {name: get_weather, args: {city: Paris}}
  - name: follow-up on the server's thread
    turns:
      - send: What's the weather in Rome?
      - send: and tomorrow?
        expect: [succeeded, {equals: Tomorrow it is sunny in Rome too.}, {not_called_tool: get_weather}]
  - name: reset forgets
    turns:
      - send: What's the weather in Oslo?
      - reset
      - send: and tomorrow?
        expect: [{equals: Which city do you mean?}]
  - name: graph error
    send: explode
    expect: [succeeded]
  - name: interrupt and resume
    turns:
      - send: book a table
        expect: [{equals: For how many people?}]
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
        expect: [{called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}}]
      - send: and tomorrow?
        expect: [{equals: "Tomorrow it is sunny in {{ input.city }} too."}]
"""

STREAM_SPEC = """
suite: langgraph streamed
endpoint: streamed
evals:
  - name: streamed tool call
    send: What's the weather in Lima?
    expect:
      - succeeded
      - equals: It is sunny in Lima.
      - called_tool_with: {name: get_weather, args: {city: Lima}}
  - name: streamed follow-up
    turns:
      - send: What's the weather in Oslo?
      - send: and tomorrow?
        expect: [{equals: Tomorrow it is sunny in Oslo too.}]
  - name: streamed graph error
    send: explode
    expect: [succeeded]
"""

HTTP_SPEC = """
suite: langgraph over http
endpoint: thread-http
evals:
  - name: http follow-up on the server's thread
    turns:
      - send: What's the weather in Paris?
        expect: [{includes: sunny in Paris}]
      - send: and tomorrow?
        expect: [succeeded, {equals: Tomorrow it is sunny in Paris too.}]
  - name: http graph error
    send: explode
    expect: [succeeded]
"""


def thread_over_http(server):
    """The generic http protocol keeping a LangGraph thread: the users' own endpoint block."""
    return {
        "protocol": "http",
        "url": server.url + "/threads/{{ session_id }}/runs/wait",
        "body": {
            "assistant_id": server.graph_id,
            "if_not_exists": "create",
            "input": {"messages": [{"role": "user", "content": "{{ message }}"}]},
        },
        "reply": "json.messages[-1].content",
        "error": "json.__error__.message",
    }


@pytest.fixture(scope="module")
def graph_run(langgraph_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("langgraph-run")
    write_project(
        folder,
        endpoints={
            "graph": langgraph_server.endpoint(),
            "streamed": langgraph_server.endpoint(stream=True),
            "thread-http": thread_over_http(langgraph_server),
        },
        defaults={"endpoint": "graph"},
    )
    write_spec(folder, "specs/weather.yaml", WEATHER_SPEC)
    write_spec(folder, "specs/streamed.yaml", STREAM_SPEC)
    write_spec(folder, "specs/http.yaml", HTTP_SPEC)
    return run_spec(folder, None, "-j", "12", paths=["specs"])


def transcripts(case):
    return [trial["transcript"] for trial in case["trials"]]


def assistant_turns(transcript):
    return [message for message in transcript if message["role"] == "assistant"]


def test_the_run_fails_only_for_the_graph_errors(graph_run):
    assert graph_run.exit_code == 1, graph_run.cli.output
    failed = sorted(case["id"] for case in graph_run.cases if case["status"] != "passed")
    assert failed == [
        "specs/http.yaml::http graph error",
        "specs/streamed.yaml::streamed graph error",
        "specs/weather.yaml::graph error",
    ]
    assert graph_run.summary["errored"] == 0


def test_single_turn_reply_and_tool_call_arguments(graph_run):
    case = graph_run.case("tool call with arguments")
    assert case["status"] == "passed"
    (assistant,) = assistant_turns(transcripts(case)[0])
    assert assistant["content"] == "It is sunny in Paris."
    assert assistant["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}}]


def test_follow_up_is_answered_from_the_server_held_thread(graph_run):
    case = graph_run.case("follow-up on the server's thread")
    assert case["status"] == "passed", case
    first, second = assistant_turns(transcripts(case)[0])
    assert first["session_id"] == second["session_id"]  # one thread for the conversation
    assert "tool_calls" not in second  # the earlier run's tool call is not this run's


def test_reset_starts_a_new_thread(graph_run):
    case = graph_run.case("reset forgets")
    assert case["status"] == "passed", case
    transcript = transcripts(case)[0]
    assert [m["role"] for m in transcript] == ["user", "assistant", "reset", "user", "assistant"]
    before, after = assistant_turns(transcript)
    assert before["session_id"] != after["session_id"]


def test_graph_error_is_a_failed_turn_with_its_type_and_message(graph_run):
    for name in ("graph error", "streamed graph error"):
        case = graph_run.case(name)
        assert case["status"] == "failed" and case["error"] is None
        (assistant,) = assistant_turns(transcripts(case)[0])
        assert assistant["error"] == "RuntimeError: the agent exploded on purpose"
        assert assistant["content"] == ""
        reason = check(case, "succeeded")["reason"]
        assert "RuntimeError: the agent exploded on purpose" in reason


def test_http_protocol_keeps_the_thread_in_its_url_template(graph_run):
    case = graph_run.case("http follow-up on the server's thread")
    assert case["status"] == "passed", case
    first, second = assistant_turns(transcripts(case)[0])
    assert first["session_id"] == second["session_id"]
    error = graph_run.case("http graph error")
    assert error["status"] == "failed" and error["error"] is None
    assert "the agent exploded on purpose" in check(error, "succeeded")["reason"]


def test_interrupt_question_is_the_reply_and_the_next_message_resumes(graph_run):
    assert graph_run.status("interrupt and resume") == "passed"


def test_trials_and_parallel_conversations_keep_their_own_threads(langgraph_server, graph_run):
    cases = [graph_run.case(f"interleaved[{city.lower()}]") for city in CITIES]
    assert [case["status"] for case in cases] == ["passed"] * len(CITIES)
    sessions = []
    for case in cases:
        assert case["passed_trials"] == TRIALS
        for transcript in transcripts(case):
            first, second = assistant_turns(transcript)
            assert first["session_id"] == second["session_id"]
            sessions.append(first["session_id"])
    assert len(set(sessions)) == len(CITIES) * TRIALS
    threads = [langgraph_server.post("/threads/search", {"ids": [s], "limit": 1})[0] for s in sessions]
    spans = [(thread["created_at"], thread["updated_at"]) for thread in threads]
    # some conversations were under way on the server at the same time
    assert any(a[0] < b[1] and b[0] < a[1] for a, b in combinations(spans, 2))
    assert all(len(thread["values"]["messages"]) == 6 for thread in threads)


def test_streamed_runs_record_the_time_to_first_token(graph_run):
    case = graph_run.case("streamed tool call")
    assert case["status"] == "passed", case
    (assistant,) = assistant_turns(transcripts(case)[0])
    assert 0 < assistant["ttft_s"] <= assistant["latency_s"]
    assert assistant["tool_calls"] == [{"name": "get_weather", "args": {"city": "Lima"}}]
    assert graph_run.status("streamed follow-up") == "passed"
    plain = assistant_turns(transcripts(graph_run.case("tool call with arguments"))[0])[0]
    assert "ttft_s" not in plain


def test_an_unknown_assistant_is_a_transport_error_that_says_which(langgraph_server):
    with pytest.raises(EndpointError) as caught:
        talk(langgraph_server.endpoint(assistant_id="wether"), "hi")
    assert caught.value.status == 422  # the server lists its graphs
    assert "wether" in caught.value.message and "weather" in caught.value.message
    unknown = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(EndpointError) as caught:
        talk(langgraph_server.endpoint(assistant_id=unknown), "hi")
    assert caught.value.status == 404  # threads are created on demand: the assistant is what is missing
    assert f"assistant_id '{unknown}'" in caught.value.message
    assert not caught.value.retryable


def test_reading_a_state_takes_this_runs_messages_only():
    from specengine.endpoints.langgraph import read_run

    earlier_call = {"type": "ai", "id": "a1", "content": "", "tool_calls": [{"name": "lookup", "args": {}}]}
    state = {
        "messages": [
            {"type": "human", "id": "h1", "content": "first"},
            earlier_call,
            {"type": "human", "id": "h2", "content": "second"},
            {
                "type": "ai",
                "id": "a2",
                "content": "",
                "tool_calls": [{"name": "get_weather", "args": '{"city": "Oslo"}'}],
            },
            {"type": "tool", "id": "t1", "content": "sunny"},
            {
                "type": "ai",
                "id": "a3",
                "content": [
                    {"type": "text", "text": "Sunny "},
                    {"type": "image_url"},
                    {"type": "text", "text": "in Oslo."},
                ],
            },
        ]
    }
    output = read_run(state, frozenset({"h1", "a1"}))
    assert output.reply == "Sunny in Oslo."
    assert [(call.name, call.args) for call in output.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert not output.interrupted
    assert output.message_ids == {"h1", "a1", "h2", "a2", "t1", "a3"}


def test_a_state_without_messages_is_an_unusable_answer():
    from specengine.endpoints.langgraph import read_run

    with pytest.raises(EndpointError) as caught:
        read_run({"answer": "42"}, frozenset())
    assert caught.value.kind == "InvalidResponse"
    assert 'no "messages" list' in caught.value.message


def test_ask_names_a_langgraph_server_behind_another_protocol(langgraph_server, tmp_path):
    from support.cli import run_cli

    url = langgraph_server.url + "/v1/chat/completions"
    write_project(tmp_path, endpoints={"agent": {"protocol": "openai-chat", "url": url}})
    asked = run_cli(["ask", "agent", "hi", "--project", str(tmp_path / "specengine.yaml")])
    assert asked.exit_code == 1
    assert "found: a LangGraph server (its graphs: weather)" in asked.output
    block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:6]
    assert [line.strip() for line in block] == [
        "endpoints:",
        "agent:",
        "protocol: langgraph",
        f"url: {langgraph_server.url}",
        "assistant_id: weather",
    ]
