"""The `http` protocol: any JSON API, described by a body template and expressions into the answer.

The request body is `body`, a Jinja2 template: either a structure (a mapping or list) whose strings
are templates, rendered value by value, where a string that is exactly `{{ expr }}` keeps the
expression's native type (`{{ history }}` stays a list, `{{ session_id }}` may be null); or one
template text that must render JSON (use `| tojson` for values). Variables:

- `message`: the user message of this turn;
- `history`: the earlier turns of this conversation, oldest first, as `{role, content}` mappings
  (without the current message: `{{ history + [{"role": "user", "content": message}] }}` adds it);
- `session_id`: the conversation's session id (see below);
- `input`: the case's `input` mapping (empty when the runner gives none).

The `url` is a template with the same variables, each printed value URL-encoded, so a server that
keeps a thread in its path is reachable: `…/threads/{{ session_id }}/runs/wait`.

The answer must be JSON. `reply`, `tool_calls` and `session_id` are Jinja2 expressions evaluated in
the sandbox against `json` (the parsed body; `response` is the same value), `headers` (lower-case
names) and `status`. An expression that names something the answer lacks is an error that names
the expression, never a silent None. `tool_calls` must give a list of `{name, arguments}` (or
`{name, args}`, or OpenAI's `{function: {name, arguments}}`); arguments given as a JSON string are
parsed. A null `tool_calls` value means no calls; a null reply is the empty text.

`error` is an expression for the error an agent reports inside a well-formed answer (LangGraph's
HTTP 200 `{"__error__": {…}}`: `json.__error__.message`). A value other than null, false or empty
text makes the turn fail with that message (`succeeded` fails and shows it; other checks still run),
and the reply, tool calls and session id are then read only where the answer has them. A key the
answer lacks means no error; a top-level name other than the answer's variables is a mistake in
the endpoint, reported before any request.

Sessions: with a `session_id` expression, the first turn sends `session_id` as null and every later
turn sends the value the last answer gave (a null answer keeps the previous one). Without one, each
conversation has a fresh uuid, for APIs where the client names the session.

With `stream: true` the answer is an event stream, and the expressions are read on each event
(http_stream.py).

Endpoint options: `body` and `reply` (required), `tool_calls`, `session_id`, `error`, `method` (POST),
`stream`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from jinja2 import Undefined
from jinja2.exceptions import SecurityError, UndefinedError
from jinja2.exceptions import TemplateError as JinjaTemplateError

from specengine.endpoints.answer_paths import shown_paths
from specengine.endpoints.base import Adapter, Conversation, body_excerpt, error_text, request_json
from specengine.endpoints.http_stream import read_stream
from specengine.endpoints.tool_call_shapes import CallItem, Unreadable, key_map, read_items
from specengine.errors import EndpointError, TemplateError
from specengine.expressions import MISSING, Expression
from specengine.templates import render, render_native, render_url, undeclared_names
from specengine.transcript import ToolCall, Turn

EXPRESSIONS = ("reply", "tool_calls", "session_id", "error")
ANSWER_VARIABLES = frozenset({"json", "response", "headers", "status"})
STREAM_VARIABLES = frozenset({"event", "data"})  # with `stream: true` (http_stream.py)


class HttpAdapter(Adapter):
    """A JSON API at `config.url`, driven by the endpoint's templates and expressions."""

    protocol = "http"

    def __init__(self, config: Any, client: Any):
        super().__init__(config, client)
        self._compiled: dict[str, Expression | None] = {}

    def conversation(self, variables: Mapping[str, Any] | None = None) -> HttpConversation:
        return HttpConversation(self, variables or {})

    def expression(self, key: str) -> Expression | None:
        """The compiled expression of option `key` (None when the option is not set), compiled once
        per endpoint: a stream reads it on every event."""
        if key in self._compiled:
            return self._compiled[key]
        source = self.source(key)
        if source is None:
            if key == "reply":
                raise self.problem("protocol http needs `reply`, an expression such as json.answer")
            return None
        if not isinstance(source, str) or not source.strip():
            raise self.problem(f"`{key}` must be an expression text, such as json.answer")
        try:
            compiled = Expression(source.strip())
        except JinjaTemplateError as exc:  # TemplateSyntaxError
            detail = exc.message or exc
            raise self.problem(f"`{key}: {source.strip()}` is not a valid expression: {detail}") from None
        self._compiled[key] = compiled
        return compiled

    def source(self, key: str) -> Any:
        """The expression text of option `key` as written (a key map's `from` for `tool_calls`)."""
        option = self.config.options.get(key)
        mapping = key_map(option) if key == "tool_calls" else None
        if mapping is not None:
            if not mapping.source:
                raise self.problem("a `tool_calls` key map needs `from`, the expression giving the list")
            return mapping.source
        return option

    def read_tool_calls(self, value: Any) -> tuple[ToolCall, ...]:
        """The calls of a `tool_calls` value, as the endpoint's key map (if any) reads them."""
        return tuple(item.call() for item in self.read_call_items(value))

    def read_call_items(self, value: Any, pieces: bool = False) -> tuple[CallItem, ...]:
        """The items of a `tool_calls` value, arguments as written (with `pieces`, a stream event's
        pieces of calls too: call_pieces.py joins them)."""
        source = str(self.source("tool_calls")).strip()
        try:
            return read_items(value, source, key_map(self.config.options.get("tool_calls")), pieces)
        except Unreadable as exc:
            raise self.located("tool_calls", exc.message, "tool_calls: unreadable") from None

    def attempt(self, key: str, answer: Mapping[str, Any]) -> tuple[Any, str | None]:
        """(the value of expression `key` on the answer, None), or (None, what failed)."""
        expression = self.expression(key)
        if expression is None:
            return None, None
        try:
            value = expression(**answer)
        except Exception as exc:  # UndefinedError, SecurityError, TypeError, ...
            return None, _describe(exc)
        failure = _undefined_message(value)  # a missing last key comes back as Undefined
        return (None, failure) if failure is not None else (value, None)

    def evaluate(self, key: str, answer: Mapping[str, Any], text: str, lenient: bool = False) -> Any:
        """The value of expression `key` on the answer. A failure is an error naming the expression,
        unless `lenient` (the agent reported an error, so the answer may lack the usual keys): None."""
        value, failure = self.attempt(key, answer)
        if failure is None:
            return value
        if lenient:
            return None
        source = str(self.source(key)).strip()
        excerpt = body_excerpt(text)
        paths = shown_paths(answer.get("json"))
        holds = f"; the answer holds {paths}" if paths else ""
        raise self.located(
            key,
            f"`{key}: {source}` failed on the response: {failure}{holds} (the response was: {excerpt})",
            f"{key}: {failure}",
        )

    def located(self, key: str, text: str, same_as: str) -> EndpointError:
        """A mistake in option `key`, at the line of the project file where it is written; `same_as`
        is what every answer would fail alike on, for the endpoint to stop after a few."""
        place = self.config.places.get(key)
        message = self.problem(text).message
        return EndpointError(
            "EndpointConfigError", f"{place}: {message}" if place else message, same_as=same_as
        )

    def reported_error(self, answer: Mapping[str, Any], text: str) -> str | None:
        """The error the agent reported, by the `error` expression; None when there is none.

        A lookup of a key the answer lacks means no error (`json.__error__.message` on a good
        answer); anything else that fails is a mistake in the expression, reported as one.
        """
        expression = self.expression("error")
        if expression is None:
            return None
        try:
            value = expression.read(answer)
        except UndefinedError:
            return None
        except Exception:
            return self.evaluate("error", answer, text)  # raises the located problem
        if value is MISSING or isinstance(value, Undefined):
            return None
        return error_text(value)

    def check_error_names(self) -> None:
        """An `error` expression must read the answer's variables only: its undefined lookups mean
        "no error", so a misspelt `jsn` would otherwise never report anything. With `stream: true`
        every expression is read so (an event a lookup finds nothing in carries nothing)."""
        streamed = self.config.options.get("stream") is True
        known_names = ANSWER_VARIABLES | STREAM_VARIABLES if streamed else ANSWER_VARIABLES
        for key in EXPRESSIONS if streamed else ("error",):
            source = self.source(key)
            if not isinstance(source, str) or not source.strip():
                continue
            try:
                unknown = sorted(undeclared_names("{{ " + source.strip() + " }}") - known_names)
            except TemplateError as exc:
                raise self.problem(
                    f"`{key}: {source.strip()}` is not a valid expression: {exc.message}"
                ) from None
            if unknown:
                known = ", ".join(sorted(known_names))
                raise self.problem(f"`{key}: {source.strip()}` reads {unknown[0]!r}; known here: {known}")

    def render_url(self, variables: dict[str, Any]) -> str:
        try:
            return render_url(self.config.url or "", variables)
        except TemplateError as exc:
            raise self.problem(f"the url template failed: {exc.message}") from None

    def render_body(self, variables: dict[str, Any]) -> Any:
        template = self.config.options.get("body")
        if template is None:
            raise self.problem("protocol http needs `body`, the request body template")
        try:
            if not isinstance(template, str):
                body = render_native(template, variables)
                undefined = _undefined_message(body)
                if undefined is not None:  # a whole-value `{{ name }}` that names nothing
                    raise TemplateError(f"undefined variable: {undefined}")
                return body
            text = render(template, variables)
        except TemplateError as exc:
            raise self.problem(f"the body template failed: {exc.message}") from None
        try:
            return json.loads(text)
        except ValueError as exc:
            excerpt = body_excerpt(text)
            raise self.problem(
                f"the body template did not render JSON ({exc}): {excerpt!r}; "
                "render values with | tojson, or write body as a mapping"
            ) from None


class HttpConversation(Conversation):
    """One conversation: the history of texts and the session id the API gave (or ours)."""

    def __init__(self, adapter: HttpAdapter, variables: Mapping[str, Any]):
        self.adapter = adapter
        given = variables.get("input")
        self.input: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        self.history: list[dict[str, str]] = []
        has_expression = adapter.config.options.get("session_id") is not None
        self.session_id: Any = None if has_expression else str(uuid.uuid4())

    async def send(self, message: str) -> Turn:
        adapter = self.adapter
        config = adapter.config
        adapter.expression("reply")  # a broken expression fails before any request is sent
        for key in EXPRESSIONS[1:]:
            adapter.expression(key)
        adapter.check_error_names()
        variables = {
            "message": message,
            "history": [dict(entry) for entry in self.history],
            "session_id": self.session_id,
            "input": dict(self.input),
        }
        body = adapter.render_body(variables)
        url = adapter.render_url(variables)
        method = str(config.options.get("method") or "POST").upper()
        if config.options.get("stream") is True:
            streamed = await read_stream(adapter, body, method, url)
            if streamed.body is None:
                return self._turn(
                    message,
                    streamed.reply,
                    streamed.tool_calls,
                    streamed.session_id,
                    streamed.error,
                    streamed.latency_s,
                    streamed.ttft_s,
                )
            data, status, headers = streamed.body, streamed.status, streamed.headers or {}
            text, latency = json.dumps(data, ensure_ascii=False), streamed.latency_s
        else:
            sent = await request_json(adapter, body, method, url)
            data, status, headers, text, latency = (
                sent.data,
                sent.status,
                sent.headers,
                sent.text,
                sent.latency_s,
            )
        answer = {
            "json": data,
            "response": data,
            "headers": {name.lower(): value for name, value in headers.items()},
            "status": status,
        }
        error = adapter.reported_error(answer, text)
        failed = error is not None
        reply = adapter.evaluate("reply", answer, text, lenient=failed)
        calls = adapter.read_tool_calls(adapter.evaluate("tool_calls", answer, text, lenient=failed))
        session = adapter.evaluate("session_id", answer, text, lenient=failed)
        return self._turn(message, _text(reply), calls, session, error, latency, None)

    def _turn(
        self,
        message: str,
        reply: str,
        calls: tuple[ToolCall, ...],
        session: Any,
        error: str | None,
        latency: float,
        ttft: float | None,
    ) -> Turn:
        """The turn, once the conversation keeps its session id and history."""
        if session is not None and session != "":
            self.session_id = session if isinstance(session, (str, int)) else _text(session)
        self.history = [
            *self.history,
            {"role": "user", "content": message},
            {"role": "assistant", "content": reply},
        ]
        return Turn(
            reply=reply,
            tool_calls=calls,
            session_id=None if self.session_id is None else str(self.session_id),
            latency_s=latency,
            error=error,
            ttft_s=ttft,
        )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (Mapping, list, tuple, bool)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _undefined_message(value: Any) -> str | None:
    """The message of the first undefined value left in a rendered structure, if any."""
    if isinstance(value, Undefined):
        return value._undefined_message or "a value is undefined"
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _undefined_message(item)
            if found is not None:
                return found
    return None


def _describe(exc: Exception) -> str:
    if isinstance(exc, SecurityError):
        return f"not allowed: {exc}"
    if isinstance(exc, UndefinedError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"
