"""The http adapter against a scripted JSON API: body templates (structured and text), the variables
they see, reply / tool_calls / session_id expressions, and the errors a typo or bad JSON gives."""

from __future__ import annotations

import json

import pytest
from support.protocol_servers import converse, talk
from support.servers import Reply, ScriptedHTTPServer

from specengine.errors import EndpointError

PATH = "/api/ask"


class JsonAPI(ScriptedHTTPServer):
    """A small JSON API with a server-side session: `{"answer", "session", "tools"}`."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions: dict[str, list[str]] = {}
        self.queue: list[Reply] = []
        self.route(PATH, self._ask)
        self.route(PATH, self._ask, method="PUT")

    def endpoint(self, **extra):
        base = {
            "protocol": "http",
            "url": self.url_for(PATH),
            "body": {"question": "{{ message }}", "session": "{{ session_id }}"},
            "reply": "json.answer",
        }
        return {**base, **extra}

    @property
    def bodies(self):
        return [request.json for request in self.requests_to(PATH)]

    def _ask(self, request):
        if self.queue:
            return self.queue.pop(0)
        body = request.json or {}
        session = body.get("session") or f"s{len(self.sessions) + 1}"
        seen = self.sessions.setdefault(session, [])
        seen.append(str(body.get("question")))
        tools = [{"name": "lookup", "arguments": json.dumps({"q": body.get("question")})}]
        return Reply(
            body={"answer": f"#{len(seen)}: {body.get('question')}", "session": session, "tools": tools},
            headers={"X-Session": session},
        )


@pytest.fixture
def api():
    with JsonAPI() as api:
        yield api


def test_reply_tool_calls_and_server_session_round_trip(api):
    endpoint = api.endpoint(session_id="json.session", tool_calls="json.tools")
    turns = talk(endpoint, "first", "second")
    assert [turn.reply for turn in turns] == ["#1: first", "#2: second"]
    assert [turn.session_id for turn in turns] == ["s1", "s1"]
    assert api.bodies[0] == {"question": "first", "session": None}  # `{{ session_id }}` keeps null
    assert api.bodies[1] == {"question": "second", "session": "s1"}
    assert [(call.name, call.args) for call in turns[1].tool_calls] == [("lookup", {"q": "second"})]


def test_session_id_from_a_header(api):
    turns = talk(api.endpoint(session_id="headers['x-session']"), "a", "b")
    assert turns[1].session_id == "s1"
    assert api.bodies[1]["session"] == "s1"


def test_without_a_session_expression_each_conversation_has_its_own_uuid(api):
    results = converse(api.endpoint(), ["a", "b"], conversations=2)
    sessions = [body["session"] for body in api.bodies]
    assert sessions[0] == sessions[1] != sessions[2] == sessions[3]
    assert len(sessions[0]) == 36
    assert results[0][1].session_id == sessions[0]


def test_native_types_history_and_case_input(api):
    body = {
        "messages": "{{ history + [{'role': 'user', 'content': message}] }}",
        "city": "{{ input.city }}",
        "days": "{{ input.days }}",
        "label": "City: {{ input.city }}",
        "fixed": [1, True, None],
    }
    talk(api.endpoint(body=body), "hello", "again", variables={"input": {"city": "Oslo", "days": 3}})
    first, second = api.bodies
    assert first["messages"] == [{"role": "user", "content": "hello"}]
    assert second["messages"] == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "#1: None"},
        {"role": "user", "content": "again"},
    ]
    assert (first["city"], first["days"], first["label"], first["fixed"]) == (
        "Oslo",
        3,
        "City: Oslo",
        [1, True, None],
    )


def test_text_body_template_renders_json(api):
    body = '{"question": {{ message | tojson }}, "n": {{ history | length }}}'
    talk(api.endpoint(body=body), 'say "hi"', "again")
    assert api.bodies == [{"question": 'say "hi"', "n": 0}, {"question": "again", "n": 2}]


def test_text_body_that_is_not_json_is_a_clear_error(api):
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(body='{"question": {{ message }}}'), "hi there")
    assert caught.value.kind == "EndpointConfigError"
    assert "did not render JSON" in caught.value.message and "tojson" in caught.value.message
    assert api.hits() == 0


def test_undefined_variable_in_the_body_names_it(api):
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(body={"q": "{{ mesage }}"}), "hi")
    assert "'mesage' is undefined" in caught.value.message
    assert "endpoint 'agent'" in caught.value.message
    assert api.hits() == 0


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        (
            {"reply": "json.anser"},
            "`reply: json.anser` failed on the response: 'dict object' has no attribute 'anser'",
        ),
        ({"reply": "jsn.answer"}, "'jsn' is undefined"),
        ({"reply": "json.answer.text.more"}, "`reply: json.answer.text.more` failed"),
        ({"tool_calls": "json.tool"}, "`tool_calls: json.tool` failed"),
        ({"session_id": "json.sesion"}, "`session_id: json.sesion` failed"),
    ],
)
def test_typo_in_an_expression_is_an_error_naming_it(api, options, fragment):
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(**options), "hi")
    assert fragment in caught.value.message
    assert '"answer"' in caught.value.message  # the response is shown, to help fix the path
    assert not caught.value.retryable


def test_syntax_error_in_an_expression_fails_before_sending(api):
    with pytest.raises(EndpointError, match=r"`reply: json\.\[` is not a valid expression"):
        talk(api.endpoint(reply="json.["), "hi")
    assert api.hits() == 0


def test_tool_calls_must_be_a_list_of_named_calls(api):
    with pytest.raises(EndpointError, match="must give a list of"):
        talk(api.endpoint(tool_calls="json.answer"), "hi")
    with pytest.raises(EndpointError, match="item 0"):
        talk(api.endpoint(tool_calls="[{'arguments': '{}'}]"), "hi")


def test_tool_call_shapes_args_arguments_and_function(api):
    calls = (
        "[{'name': 'a', 'args': {'x': 1}}, {'name': 'b', 'arguments': '{\"y\": 2}'},"
        " {'function': {'name': 'c', 'arguments': '{}'}, 'id': 'call_9'}, {'name': 'd', 'arguments': 'oops'}]"
    )
    [turn] = talk(api.endpoint(tool_calls=calls), "hi")
    assert [(call.name, call.args, call.id) for call in turn.tool_calls] == [
        ("a", {"x": 1}, None),
        ("b", {"y": 2}, None),
        ("c", {}, "call_9"),
        ("d", {}, None),
    ]
    assert turn.tool_calls[3].note is not None


def test_null_reply_is_empty_and_null_tool_calls_are_none(api):
    api.queue = [Reply(body={"answer": None, "tools": None})]
    [turn] = talk(api.endpoint(tool_calls="json.tools"), "hi")
    assert (turn.reply, turn.tool_calls) == ("", ())


def test_non_text_reply_becomes_json_text(api):
    api.queue = [Reply(body={"answer": {"temp": 3}})]
    [turn] = talk(api.endpoint(), "hi")
    assert turn.reply == '{"temp": 3}'


def test_bad_json_answer_is_an_endpoint_error(api):
    api.queue = [Reply(body="<html>oops</html>")]
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(), "hi")
    assert caught.value.kind == "InvalidJSON"
    assert "<html>oops</html>" in caught.value.message


def test_http_status_errors_are_endpoint_errors(api):
    api.queue = [Reply(status=502)]
    with pytest.raises(EndpointError) as caught:
        talk(api.endpoint(), "hi")
    assert caught.value.status == 502 and caught.value.retryable


def test_method_status_and_headers_are_available(api):
    [turn] = talk(api.endpoint(method="put", reply="status ~ ' ' ~ headers['content-type']"), "hi")
    assert turn.reply == "200 application/json"
    assert api.requests[0].method == "PUT"


def test_response_is_the_same_value_as_json(api):
    [turn] = talk(api.endpoint(reply="response.answer"), "hi")
    assert turn.reply == "#1: hi"


def test_sandbox_blocks_unsafe_access(api):
    with pytest.raises(EndpointError, match="not allowed"):
        talk(api.endpoint(reply="json.__class__.__mro__"), "hi")


def test_missing_reply_or_body_is_a_clear_error(api):
    endpoint = api.endpoint()
    del endpoint["reply"]
    with pytest.raises(EndpointError, match="needs `reply`"):
        talk(endpoint, "hi")
    endpoint = api.endpoint()
    del endpoint["body"]
    with pytest.raises(EndpointError, match="needs `body`"):
        talk(endpoint, "hi")


def test_undefined_inside_a_list_result_is_an_error_too(api):
    with pytest.raises(EndpointError, match="has no attribute 'nothing'"):
        talk(api.endpoint(tool_calls="[json.nothing]"), "hi")
