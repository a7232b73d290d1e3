"""A dead endpoint stops the run early: after N connection failures in a row (no answer between them),
the endpoint's remaining cases error at once with one message instead of each being retried.

End to end through the real CLI against a closed loopback port, next to a live scripted agent; the
breaker's counting (any answer resets it, an HTTP error is an answer) as a unit beside them.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from support.cli import run_cli, write_project, write_spec

from specengine.engine.breaker import DEFAULT_LIMIT, Breaker
from specengine.errors import EndpointError

ROWS = 200


def many_cases(folder, endpoint: str = "dead", rows: int = ROWS, name: str = "dead.yaml") -> None:
    data = folder / "data"
    data.mkdir(exist_ok=True)
    (data / f"{endpoint}.jsonl").write_text(
        "".join(json.dumps({"id": f"r{n}", "input": {"n": n}}) + "\n" for n in range(rows)), encoding="utf-8"
    )
    write_spec(
        folder,
        name,
        f"""
        endpoint: {endpoint}
        dataset: data/{endpoint}.jsonl
        evals:
          - name: hello
            send: "hello {{{{ input.n }}}}"
            expect: [succeeded]
        """,
    )


def test_a_closed_port_errors_every_case_with_one_message_and_exits_1(tmp_path, free_port, agent_server):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"dead": url, "alive": agent_server}, defaults={"endpoint": "alive"})
    many_cases(tmp_path)
    many_cases(tmp_path, "alive", rows=20, name="alive.yaml")
    result = run_cli(["run", ".", "-o", "out.json"], cwd=tmp_path)
    assert result.exit_code == 1, result.output
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    dead = [case for case in results["cases"] if case["endpoint"] == "dead"]
    alive = [case for case in results["cases"] if case["endpoint"] == "alive"]
    assert len(dead) == ROWS and {case["status"] for case in dead} == {"error"}
    assert {case["status"] for case in alive} == {"passed"}  # another endpoint is not stopped
    assert agent_server.hits() == 20

    stopped = f"stopped after {DEFAULT_LIMIT} connection failures in a row: is the agent running at {url}?"
    messages = [case["error"]["message"] for case in dead]
    assert messages.count(stopped) >= ROWS - 8 * 3  # at most the trials in flight (-j 8) tried
    tried = [m for m in messages if m != stopped]
    assert all(m.startswith(f"could not connect to {url}") for m in tried)
    assert all("(after " not in m for m in tried)  # none was retried once the endpoint was given up
    assert all("attempts" not in case["trials"][0] for case in dead)
    assert {case["error"]["type"] for case in dead} == {"ConnectError"}
    # the console prints each error once, then counts the cases that errored the same way
    assert result.stdout.count(stopped) == 2
    assert f"errored the same way: ConnectError: {stopped}" in result.stdout
    assert "200 errored" in result.stdout.replace("[", "")


def test_max_connection_failures_0_tries_every_case(tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"dead": {"protocol": "openai-chat", "url": url, "retries": 0}})
    many_cases(tmp_path, rows=12)
    result = run_cli(["run", ".", "-o", "out.json", "--max-connection-failures", "0"], cwd=tmp_path)
    assert result.exit_code == 1
    cases = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    assert all(case["error"]["message"].startswith("could not connect") for case in cases)


def test_the_limit_is_settable(tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"dead": {"protocol": "openai-chat", "url": url, "retries": 0}})
    many_cases(tmp_path, rows=12)
    result = run_cli(
        ["run", ".", "-o", "out.json", "-j", "1", "--max-connection-failures", "3"], cwd=tmp_path
    )
    assert result.exit_code == 1
    cases = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    messages = [case["error"]["message"] for case in cases]
    assert [m.startswith("could not connect") for m in messages] == [True] * 3 + [False] * 9
    assert set(messages[3:]) == {
        f"stopped after 3 connection failures in a row: is the agent running at {url}?"
    }


def test_answers_between_failures_keep_the_endpoint_going(tmp_path, agent_server, free_port):
    """An endpoint that fails to connect now and then but answers in between is never given up:
    the rows alternate between a closed port and the live agent (the url is a template)."""
    endpoint = {
        "protocol": "http",
        "url": "http://127.0.0.1:{{ input.port }}/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": "{{ message }}"}]},
        "reply": "json.choices[0].message.content",
        "retries": 0,
    }
    write_project(tmp_path, endpoints={"flaky": endpoint})
    (tmp_path / "data").mkdir()
    ports = [free_port, agent_server.port] * 10
    (tmp_path / "data" / "rows.jsonl").write_text(
        "".join(json.dumps({"id": f"r{n}", "input": {"port": port}}) + "\n" for n, port in enumerate(ports)),
        encoding="utf-8",
    )
    write_spec(
        tmp_path,
        "flaky.yaml",
        """
        dataset: data/rows.jsonl
        evals: [{name: hello, send: hi, expect: [succeeded]}]
        """,
    )
    result = run_cli(
        ["run", ".", "-o", "out.json", "-j", "1", "--max-connection-failures", "2"], cwd=tmp_path
    )
    cases = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"]
    assert agent_server.hits() == 10
    assert "stopped after" not in result.output
    assert [case["status"] for case in cases] == ["error", "passed"] * 10
    assert {case["error"]["type"] for case in cases[::2]} == {"ConnectError"}


# --- the breaker's counting -----------------------------------------------------------------------


def _connect_error() -> EndpointError:
    return EndpointError("ConnectError", "could not connect", retryable=True)


def test_the_breaker_trips_on_n_in_a_row_and_any_answer_resets_it():
    breaker = Breaker("http://x", limit=3)
    for error in (_connect_error(), _connect_error()):
        breaker.failed(error)
    breaker.failed(EndpointError("HTTPStatusError", "HTTP 503", retryable=True, status=503))  # an answer
    breaker.failed(_connect_error())
    breaker.answered()
    breaker.failed(_connect_error())
    breaker.failed(EndpointError("ConnectTimeout", "timed out", retryable=True))
    assert not breaker.tripped
    breaker.failed(_connect_error())
    assert breaker.tripped
    breaker.failed(_connect_error())  # in flight when it tripped: the count stays what tripped it
    assert breaker.error() == {
        "type": "ConnectError",
        "message": "stopped after 3 connection failures in a row: is the agent running at http://x?",
    }


def test_a_trial_waiting_to_retry_wakes_when_the_breaker_trips():
    async def scenario() -> float:
        breaker = Breaker(None, limit=1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiter = asyncio.create_task(breaker.wait(30))
        await asyncio.sleep(0.01)
        breaker.failed(_connect_error())
        await waiter
        return loop.time() - started

    assert asyncio.run(scenario()) < 5


@pytest.mark.parametrize("limit", [0])
def test_limit_0_never_trips(limit):
    breaker = Breaker(None, limit=limit)
    for _ in range(100):
        breaker.failed(_connect_error())
    assert not breaker.tripped
