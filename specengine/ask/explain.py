"""What `specengine ask` prints: the request as sent, the raw response, and what specengine read.

Everything shown passes through the redactor (values from `${VAR}`; the value of an Authorization,
API key or cookie header is always masked) and through `plain_text`, since agent replies are
untrusted and may hold terminal escape sequences. Bodies are shown JSON-indented when they are
JSON, and cut to a screenful unless `--full` asks for all of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from specengine.ask.exchange import Exchange
from specengine.ask.send_message import Answer
from specengine.endpoints.answer_paths import shown_paths
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig, JudgeConfig
from specengine.redact import MASK, redact
from specengine.report.facts import format_duration, plain_text
from specengine.source.loader import PROJECT_FILE
from specengine.transcript import Turn
from specengine.untrusted_json import read_json

SCREEN_LINES = 40  # lines of a body shown without --full
LINE_WIDTH = 240  # characters of one line shown without --full
SENSITIVE_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
EXPRESSIONS = ("reply", "tool_calls", "session_id")


def explain(answer: Answer, *, full: bool = False) -> list[str]:
    """The lines `ask` prints, top to bottom."""
    config = answer.config
    lines = [f"endpoint {config.name} ({config.protocol}) {_shown(config.url or '', config)}".rstrip(), ""]
    for number, exchange in enumerate(answer.exchanges, 1):
        of = f" {number} of {len(answer.exchanges)}" if len(answer.exchanges) > 1 else ""
        lines += _request(exchange, of, config, full)
        lines += _response(exchange, of, config, full)
    if not answer.exchanges:
        lines += ["request: none was sent", ""]
    lines += understood(answer)
    notes = answer.adapter.notes() if answer.adapter is not None else []
    lines += [f"note: {_shown(note, config)}" for note in notes]
    return lines


def _request(exchange: Exchange, of: str, config: EndpointConfig, full: bool) -> list[str]:
    head = f"request{of}"
    return request_lines(
        head, exchange.method, exchange.url, exchange.request_headers, exchange.request_body, config, full
    )


def request_lines(
    head: str,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes,
    config: EndpointConfig | JudgeConfig,
    full: bool = False,
) -> list[str]:
    """A request as sent, as `ask` shows it: also the judge's first request under `run -v`."""
    lines = [f"{head}: {method} {_shown(url, config)}"]
    lines += [f"    {name}: {_header(name, value, config)}" for name, value in headers]
    lines += _body(body.decode("utf-8", "replace"), config, full)
    return [*lines, ""]


def _response(exchange: Exchange, of: str, config: EndpointConfig, full: bool) -> list[str]:
    if exchange.status is None:
        failure = exchange.failure or "no answer"
        return [f"response{of}: none ({_shown(failure, config)})", ""]
    import httpx

    reason = httpx.codes.get_reason_phrase(exchange.status)
    took = f" in {format_duration(exchange.seconds)}" if exchange.seconds is not None else ""
    lines = [f"response{of}: HTTP {exchange.status} {reason}{took}".rstrip()]
    lines += [f"    {name}: {_header(name, value, config)}" for name, value in exchange.response_headers]
    lines += _body(exchange.response_text(), config, full)
    return [*lines, ""]


def _body(text: str, config: EndpointConfig | JudgeConfig, full: bool) -> list[str]:
    if not text.strip():
        return ["    (no body)"]
    try:
        shown = json.dumps(read_json(text), indent=2, ensure_ascii=False)
    except ValueError:
        shown = text
    rows = _shown(shown, config).splitlines()
    if full:
        return [f"    {row}" for row in rows]
    cut = [f"    {row[:LINE_WIDTH]}{'…' if len(row) > LINE_WIDTH else ''}" for row in rows[:SCREEN_LINES]]
    if len(rows) > SCREEN_LINES:
        cut.append(f"    … {len(rows) - SCREEN_LINES} more lines (--full shows them all)")
    return cut


def _shown(text: str, config: EndpointConfig | JudgeConfig) -> str:
    """Text fit for the terminal: secrets redacted, control characters and escapes made harmless."""
    return plain_text(redact(text, config.secrets))


def _header(name: str, value: str, config: EndpointConfig | JudgeConfig) -> str:
    """A header's value as shown: keys and tokens masked whatever their source, the scheme kept."""
    if name.lower() in SENSITIVE_HEADERS:
        scheme, _, rest = value.partition(" ")
        return f"{scheme} {MASK}" if rest and scheme.isalpha() else MASK
    return _shown(value, config)


# --- what specengine understood ------------------------------------------------------------------


def understood(answer: Answer) -> list[str]:
    """The turn specengine read (reply, tool calls, session id, time), or why it read none, and for
    an `http` endpoint which of its expressions picked nothing, with what the response holds."""
    config = answer.config
    problems = _expression_problems(answer)
    if answer.turn is None:
        error = answer.error
        assert error is not None
        lines = ["understood: nothing, the turn failed", f"    {error.kind}: {_shown(error.message, config)}"]
        lines += _found_lines(answer) if answer.found is not None else _fault_hint(error, config)
    else:
        lines = ["understood:", *_turn_lines(answer.turn, config, problems)]
    refused = answer.error is not None and answer.error.status is not None and answer.error.status >= 400
    if answer.found is None and not refused:  # an error body or another protocol holds no reply to point at
        lines += _fixes(answer, problems)
    return lines


def _turn_lines(turn: Turn, config: EndpointConfig, problems: Mapping[str, str]) -> list[str]:
    reply = _shown(turn.reply, config)
    if reply:
        shown_reply = reply.replace("\n", "\n" + " " * 16)
    else:
        shown_reply = "(empty" + (f": {problems['reply']})" if "reply" in problems else ")")
    lines = [f"    reply       {shown_reply}"]
    if turn.tool_calls:
        for position, call in enumerate(turn.tool_calls):
            label = "tool calls  " if position == 0 else " " * 12
            args = json.dumps(call.args, ensure_ascii=False, sort_keys=True, default=str)
            note = f"  ({call.note})" if call.note else ""
            lines.append(f"    {label}{_shown(call.name, config)} {_shown(args, config)}{note}")
    else:
        why = f": {problems['tool_calls']}" if "tool_calls" in problems else ""
        lines.append(f"    tool calls  (none{why})")
    if turn.session_id:
        lines.append(f"    session id  {_shown(turn.session_id, config)}")
    else:
        why = f": {problems['session_id']}" if "session_id" in problems else ""
        lines.append(f"    session id  (none{why})")
    if turn.state is not None:
        state = json.dumps(turn.state, ensure_ascii=False, sort_keys=True, default=str)
        lines.append(f"    state       {_shown(state, config)}")
    took = format_duration(turn.latency_s)
    if turn.ttft_s is not None:
        took += f" (first token after {format_duration(turn.ttft_s)})"
    lines.append(f"    time        {took}")
    if turn.tokens is not None:
        lines.append(f"    tokens      {turn.tokens}")
    if turn.error:
        lines.append(f"    agent error {_shown(turn.error, config)}")
        lines.append(
            "    (an error reported inside the answer: `succeeded` fails with it, other checks still run)"
        )
    return lines


def _found_lines(answer: Answer) -> list[str]:
    """What answered instead, the protocol to write, and the endpoint block to paste."""
    from specengine.ask.probe import endpoint_block

    found = answer.found
    assert found is not None
    config = answer.config
    same = found.protocol == config.protocol  # the protocol is right, the url is not (an A2A card's)
    fix = f"url: {found.block.get('url')}" if same else f"protocol: {found.protocol}"
    lines = [f"    found: {_shown(found.what, config)}", f"    fix: write {_shown(fix, config)}", ""]
    lines.append(f"paste this endpoint into {PROJECT_FILE} (in place of '{config.name}'):")
    return lines + [f"    {_shown(line, config)}" for line in endpoint_block(config.name, found)]


def _fault_hint(error: EndpointError, config: EndpointConfig) -> list[str]:
    """What to look at for the faults a newcomer meets first (told apart by kind and status)."""
    if error.status in (401, 403):
        return ["    fix: the agent refused the request: check the key or token in the endpoint's headers"]
    if error.status == 404 and config.protocol == "adk":
        apps = f"{(config.url or '').rstrip('/')}/list-apps"
        return [f"    fix: app_name must be an app the server serves (GET {apps} lists them)"]
    if error.status == 404:
        where = "the server's base URL" if config.protocol == "langgraph" else "the full URL requests go to"
        return [f"    fix: nothing answers at that path: the endpoint's url must be {where}"]
    if error.kind == "InvalidJSON":
        return ["    fix: the answer is not JSON: is the url the agent's API route, not a web page?"]
    return []


def _expression_problems(answer: Answer) -> dict[str, str]:
    """For an `http` endpoint, what went wrong with each of its answer expressions on the response:
    a failure, or a null value (empty reply, no calls, no session id)."""
    from specengine.endpoints.http import HttpAdapter

    adapter = answer.adapter
    last = answer.exchanges[-1] if answer.exchanges else None
    if not isinstance(adapter, HttpAdapter) or last is None or last.status is None:
        return {}
    if adapter.config.options.get("stream") is True:  # read event by event: a run's errors say it
        return {}
    try:
        data = read_json(last.response_text())
    except ValueError:
        return {}
    variables = {
        "json": data,
        "response": data,
        "headers": {name.lower(): value for name, value in last.response_headers},
        "status": last.status,
    }
    problems: dict[str, str] = {}
    for key in EXPRESSIONS:
        try:
            source = adapter.source(key)
            if source is None:
                continue
            value, failure = adapter.attempt(key, variables)
        except EndpointError as exc:  # not an expression at all
            problems[key] = exc.message
            continue
        if failure is not None:
            problems[key] = f"`{key}: {str(source).strip()}` picked nothing: {failure}"
        elif value is None or value == "" or value == []:
            problems[key] = f"`{key}: {str(source).strip()}` gave {json.dumps(value)}"
    return problems


def _fixes(answer: Answer, problems: Mapping[str, str]) -> list[str]:
    """`fix:` lines for the expressions that picked nothing: which option, where, and the paths the
    response offers instead."""
    if not problems:
        return []
    last = answer.exchanges[-1]
    data = read_json(last.response_text())
    config = answer.config
    lines = [""]
    for key in problems:
        lines.append(
            f"fix: `{key}` of endpoint '{config.name}' in specengine.yaml must name where the answer holds "
            f"{_WANTED[key]}"
        )
    paths = shown_paths(data)
    if paths:
        lines.append(f"     the response holds: {_shown(paths, config)}")
    return lines


_WANTED = {
    "reply": "the reply's text (e.g. json.answer.text)",
    "tool_calls": "the list of tool calls, each with a name and arguments (e.g. json.actions)",
    "session_id": "the id to send back on the next turn (e.g. json.conversation_id)",
}
