"""Traces in an MLflow tracking server, as MLflow's own tracing writes them (`mlflow.openai.autolog()`,
`@mlflow.trace`, the other autologgers), read into trace parts.

    sources:
      staging:
        mlflow: {experiment: support-agent, tracking_uri: http://mlflow.internal:5000}

The experiment's traces are read a page at a time with `MlflowClient.search_traces`, oldest first.
A trace's conversation is MLflow's session (the trace metadata `mlflow.trace.session`, which
`mlflow.update_current_trace(session_id=...)` sets), else the trace is one. Its spans by type:

- `CHAT_MODEL` / `LLM`: a model call; its inputs' `messages` (the OpenAI chat shape autologging
  records) are what it read, its outputs' `choices[].message` (or `message`, or a text) what it
  wrote, `mlflow.chat.tokenUsage` its tokens;
- `TOOL`: a tool the application ran, named by the span, its inputs the arguments and its outputs
  the result;
- `AGENT` (and the root span when no span is an agent's): who answered and how long it took.

The MLflow client comes with the `mlflow` extra and is imported only when a source reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from specengine.source.sources import SourceConfig
from specengine.traces.jsonl import message_of
from specengine.traces.model import AgentRun, Message, ModelCall, ToolRun, TraceParts, Unreadable
from specengine.traces.values import parsed
from specengine.untrusted_json import MAX_DEPTH
from specengine.usage import token_count

SESSION = "mlflow.trace.session"
TOKEN_USAGE = "mlflow.chat.tokenUsage"
MODEL_TYPES = frozenset({"CHAT_MODEL", "LLM"})
PAGE_SIZE = 200


def _messages(value: Any) -> tuple[Message, ...]:
    value = parsed(value)
    if isinstance(value, Mapping):
        value = value.get("messages")
    if not isinstance(value, list):
        return ()
    return tuple(message_of(raw, number) for number, raw in enumerate(value, 1))


def _answer(value: Any) -> tuple[Message, ...]:
    """What a model call wrote: a chat completion's choices, a message, or a text."""
    value = parsed(value)
    if isinstance(value, str):
        return (Message("assistant", value),)
    if not isinstance(value, Mapping):
        return ()
    choices = value.get("choices")
    if isinstance(choices, list):
        return tuple(
            message_of(choice["message"], number)
            for number, choice in enumerate(choices, 1)
            if isinstance(choice, Mapping) and isinstance(choice.get("message"), Mapping)
        )
    if isinstance(value.get("message"), Mapping):
        return (message_of(value["message"], 1),)
    return ()


def _tokens(span: Any) -> tuple[int | None, int | None]:
    usage = parsed(span.get_attribute(TOKEN_USAGE))
    if not isinstance(usage, Mapping):
        return None, None
    counts = [usage.get(key) for key in ("input_tokens", "output_tokens")]
    return token_count(counts[0]), token_count(counts[1])


def parts_of(trace: Any, experiment: str) -> TraceParts:
    """One MLflow trace as trace parts; ValueError when a span cannot be read."""
    info = trace.info
    metadata = info.trace_metadata or {}
    session = metadata.get(SESSION)
    parts = TraceParts(info.trace_id, f"mlflow:{experiment}", conversation=session or None)
    spans = list(trace.data.spans)
    agents = [span for span in spans if span.span_type == "AGENT"]
    roots = [span for span in spans if span.parent_id is None]
    for span in spans:
        start, end = span.start_time_ns or 0, span.end_time_ns or span.start_time_ns or 0
        parts.saw(start)
        if span.span_type in MODEL_TYPES:
            input_tokens, output_tokens = _tokens(span)
            parts.calls.append(
                ModelCall(
                    start,
                    end,
                    _messages(span.inputs),
                    _answer(span.outputs),
                    input_tokens,
                    output_tokens,
                    span.parent_id,
                )
            )
        elif span.span_type == "TOOL":
            inputs = parsed(span.inputs)
            result = parsed(span.outputs)  # bounded as inputs are: a deeper value breaks what walks it
            parts.tools.append(ToolRun(start, span.name, inputs if inputs is not None else {}, result))
        if span in agents or (not agents and span in roots):
            attributes = {key: value for key, value in metadata.items() if not key.startswith("mlflow.")}
            parts.agents.append(AgentRun(span.span_id, start, end, span.name, attributes))
    return parts


def read_trace(trace: Any, experiment: str) -> TraceParts | Unreadable:
    """One trace as trace parts, or why not: a span that cannot be read, or one nested so deep that
    reading it ran out of stack (MLflow parses a span's JSON before we see it), makes the trace
    Unreadable, reported while the rest are scored."""
    try:
        return parts_of(trace, experiment)
    except (ValueError, TypeError, AttributeError) as exc:
        return Unreadable(f"mlflow:{experiment}", trace.info.trace_id, f"cannot be read: {exc}")
    except RecursionError:
        problem = f"cannot be read: a span is nested deeper than {MAX_DEPTH} levels"
        return Unreadable(f"mlflow:{experiment}", trace.info.trace_id, problem)


def read_mlflow(source: SourceConfig) -> Iterator[TraceParts | Unreadable]:
    """Every trace of the source's experiment, oldest first, as trace parts (or why not)."""
    from specengine.errors import UsageError
    from specengine.mlflow.target import require_client, shown_uri
    from specengine.mlflow.tracking_client import use_short_http_defaults

    require_client(f"source '{source.name}'")
    use_short_http_defaults()
    import logging

    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    client = MlflowClient(tracking_uri=source.tracking_uri)
    where = shown_uri(str(client.tracking_uri))
    experiment = str(source.experiment)
    try:
        found = client.get_experiment_by_name(experiment)
    except MlflowException as exc:
        problem = f"source '{source.name}': MLflow at {where} could not be read: {exc.message}"
        raise UsageError([problem]) from None
    if found is None:
        raise UsageError([f"source '{source.name}': no experiment named '{experiment}' in MLflow at {where}"])
    token: str | None = None
    while True:
        page = client.search_traces(
            locations=[found.experiment_id],
            max_results=PAGE_SIZE,
            order_by=["timestamp_ms ASC"],
            page_token=token,
        )
        for trace in page:
            yield read_trace(trace, experiment)
        token = page.token
        if not token:
            return
