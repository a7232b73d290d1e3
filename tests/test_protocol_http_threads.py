"""Protocol `http` for servers that keep a thread in the URL: the url template (URL-encoded values),
a fresh session id per conversation, reset and retry, and the `error` expression that turns an
error reported in a 200 answer into a failed turn."""

from __future__ import annotations

import uuid

import pytest
from support.protocol_servers import converse, talk
from support.runs import check, run_spec, setup_project
from support.servers import Reply, ScriptedHTTPServer

from specengine.errors import EndpointError

THREAD_URL = "/threads/{{ session_id }}/runs/wait"


class ThreadAPI(ScriptedHTTPServer):
    """Answers POST /threads/<id>/runs/wait with the question and how many it saw on that thread;
    "explode" answers HTTP 200 `{"__error__": …}` as a LangGraph server does."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, int] = {}
        self.queue: list[Reply] = []
        self.route("*", self._run)

    def endpoint(self, **extra):
        base = {
            "protocol": "http",
            "url": self.url_for(THREAD_URL),
            "body": {"if_not_exists": "create", "input": "{{ message }}"},
            "reply": "json.answer",
            "error": "json.__error__.message",
        }
        return {**base, **extra}

    @property
    def paths(self):
        return [request.path for request in self.requests]

    def _run(self, request):
        if self.queue:
            return self.queue.pop(0)
        thread = request.path.split("/")[2]
        question = (request.json or {}).get("input")
        if question == "explode":
            return {"__error__": {"error": "RuntimeError", "message": "the agent exploded on purpose"}}
        self.threads[thread] = self.threads.get(thread, 0) + 1
        return {"answer": f"{question} (message {self.threads[thread]} on this thread)"}


@pytest.fixture
def api():
    with ThreadAPI() as api:
        yield api


def thread_of(path: str) -> str:
    return path.split("/")[2]


def test_each_conversation_keeps_one_thread_in_the_url(api):
    results = converse(api.endpoint(), ["first", "second"], conversations=2)
    threads = [thread_of(path) for path in api.paths]
    assert threads[0] == threads[1] != threads[2] == threads[3]
    assert all(uuid.UUID(thread) for thread in threads)
    assert [turn.reply for turn in results[1]] == [
        "first (message 1 on this thread)",
        "second (message 2 on this thread)",
    ]
    assert results[0][1].session_id == threads[0]


def test_url_values_are_url_encoded(api):
    url = api.url_for("/threads/{{ input.thread }}/runs/wait?q={{ message }}")
    talk(api.endpoint(url=url), "a b&c=d", variables={"input": {"thread": "x/y"}})
    (request,) = api.requests
    assert request.path == "/threads/x%2Fy/runs/wait"
    assert request.query == "q=a%20b%26c%3Dd"


def test_an_undefined_variable_in_the_url_names_it_before_any_request(api):
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(url=api.url_for("/threads/{{ sesion_id }}")), "hi")
    assert caught.value.kind == "EndpointConfigError"
    assert "url template" in caught.value.message and "sesion_id" in caught.value.message
    assert api.hits() == 0


def test_the_error_expression_fails_the_turn_with_its_message(api):
    ok, failed, after = talk(api.endpoint(), "hello", "explode", "again")
    assert (ok.error, ok.reply) == (None, "hello (message 1 on this thread)")
    assert failed.error == "the agent exploded on purpose"
    assert failed.reply == ""  # the reply expression names what an error answer lacks: no reply
    assert after.error is None and after.reply == "again (message 2 on this thread)"


def test_an_error_expression_giving_a_mapping_reads_its_message(api):
    (turn,) = talk(api.endpoint(error="json.__error__"), "explode")
    assert turn.error == "the agent exploded on purpose"


def test_an_error_expression_reading_an_unknown_name_is_refused_before_any_request(api):
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(error="jsn.__error__.message"), "hi")
    assert caught.value.kind == "EndpointConfigError"
    assert "'jsn'" in caught.value.message and "json" in caught.value.message
    assert api.hits() == 0


def test_a_reset_and_a_retry_each_start_a_new_thread(api, tmp_path):
    api.queue.append(Reply(status=503, body={"detail": "busy"}, headers={"Retry-After": "0"}))
    setup_project(tmp_path, api, retries=1)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: retried then reset
            turns:
              - send: one
              - send: two
                expect: [{includes: message 2 on this thread}]
              - reset
              - send: three
                expect: [{includes: message 1 on this thread}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    threads = [thread_of(path) for path in api.paths]
    assert len(threads) == 4  # the 503, then the three turns of the retried trial
    assert threads[0] != threads[1] == threads[2] != threads[3]
    assert threads[0] not in api.threads  # the failed attempt's thread is never used again
    transcript = run.case("retried then reset")["trials"][0]["transcript"]
    sessions = [message["session_id"] for message in transcript if "session_id" in message]
    assert sessions == threads[1:]


def test_an_error_reported_in_a_200_answer_fails_succeeded_and_shows_the_reason(api, tmp_path):
    setup_project(tmp_path, api)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: graph error
            send: explode
            expect: [succeeded, {not_includes: Traceback}]
        """,
    )
    assert run.exit_code == 1, run.cli.output
    case = run.case("graph error")
    assert case["status"] == "failed" and case["error"] is None
    assert "the agent exploded on purpose" in check(case, "succeeded")["reason"]
    assert check(case, 'not_includes "Traceback"')["status"] == "passed"  # the other checks ran
    assert "the agent exploded on purpose" in run.cli.output
