"""`source: prod`: an eval whose cases are recorded conversations, graded as they happened.

Each conversation the source gives (and the eval's filters keep: `agent`, `tool`, `label`) is one
case: a `send` step per user message (the eval's checks on the last, `scope: conversation` for
all of them) and a `Recording` holding the turns as recorded, which the runner grades instead of
sending anything. A trace that could not be read is a skipped case that says which file, which
trace and why. Templates read the conversation under `trace` (templates.py's TRACE_NAMES, documented in
docs/spec-format.md).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from specengine.errors import MissingVariable, UsageError
from specengine.plan import Case, Check, Recording, Source, Step
from specengine.source.loader import as_text
from specengine.source.sources import SourceConfig, source_config
from specengine.traces.model import Conversation, Elsewhere, Unreadable
from specengine.traces.read import Shard, conversations
from specengine.transcript import ToolCall, Turn, TurnRecord


@dataclass(frozen=True)
class SourceFilter:
    """Which of a source's conversations an eval grades: `source: {name, agent, tool, label}`."""

    name: str
    agent: str | None = None
    tool: str | None = None
    label: str | None = None

    def keeps(self, conversation: Conversation) -> bool:
        if self.agent is not None and conversation.agent != self.agent:
            return False
        if self.tool is not None and self.tool not in conversation.tools_called():
            return False
        return self.label is None or self.label in conversation.labels


def source_filter(value: Any) -> SourceFilter:
    """`source: prod` or `source: {name: prod, agent: ..., tool: ..., label: ...}`."""
    if isinstance(value, Mapping):
        return SourceFilter(
            str(value["name"]),
            *(str(value[key]) if value.get(key) is not None else None for key in ("agent", "tool", "label")),
        )
    return SourceFilter(str(value))


@dataclass(frozen=True)
class RecordedEval:
    """What every case of a `source:` eval shares."""

    base_id: str
    suite: str
    spec: str
    name: str
    line: int
    checks: tuple[Check, ...]
    source: Source
    variables: Mapping[str, Any]
    labels: tuple[str, ...]
    timeout: float
    skip: str | None = None


def _started(start_ns: int) -> str | None:
    if not start_ns:
        return None
    moment = datetime.fromtimestamp(start_ns / 1e9, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def trace_variables(conversation: Conversation, started: str | None) -> dict[str, Any]:
    """The conversation as templates read it, under `trace` (`started`: its start as text)."""
    users = conversation.user_messages
    return {
        "id": conversation.trace_ids[0] if conversation.trace_ids else None,
        "ids": list(conversation.trace_ids),
        "conversation_id": conversation.key,
        "source": conversation.source,
        "file": conversation.file,
        "agent": conversation.agent,
        "labels": list(conversation.labels),
        "started": started,
        "first_user_message": users[0] if users else "",
        "last_user_message": users[-1] if users else "",
        "user_messages": users,
        "attributes": dict(conversation.attributes),
    }


def _records(conversation: Conversation) -> tuple[TurnRecord, ...]:
    return tuple(
        TurnRecord(
            number,
            turn.user,
            Turn(
                reply=turn.reply,
                tool_calls=tuple(
                    ToolCall(call.name, call.args, call.id, result=call.result) for call in turn.tool_calls
                ),
                session_id=conversation.key,
                latency_s=turn.latency_s,
                usage=turn.usage,
            ),
            0,
        )
        for number, turn in enumerate(conversation.turns, 1)
    )


def _labels(*groups: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(label for group in groups for label in group))


def recorded_cases(
    spec: RecordedEval,
    chosen: SourceFilter,
    config: SourceConfig,
    found: Iterator[Conversation | Unreadable | Elsewhere],
    first_index: int,
) -> Iterator[Case]:
    """One case per conversation the filter keeps (and one skipped case per unreadable trace); a
    conversation of another `--shard` a case that this shard plans and never runs (its checks and
    turns unknown here: the selection leaves it to its own shard before anything reads them)."""
    index = first_index
    # what every case of this eval shares, read or unreadable
    eval_case = functools.partial(
        Case,
        suite=spec.suite,
        spec=spec.spec,
        eval_name=spec.name,
        line=spec.line,
        endpoint=f"source:{config.name}",
    )
    for item in found:
        if isinstance(item, Elsewhere):
            yield eval_case(
                id=f"{spec.base_id}[{item.key}]",
                index=index,
                steps=(),
                variables=spec.variables,
                labels=spec.labels,
                row=item.key,
                skip="a conversation of another shard",
                recording=Recording(config.name, item.key, shard_key=item.key),
            )
            index += 1
            continue
        if isinstance(item, Unreadable):
            key = f"unreadable {item.file}:{item.line}" if item.line else f"unreadable {item.trace_id}"
            yield eval_case(
                id=f"{spec.base_id}[{key}]",
                index=index,
                steps=(Step("send", "", spec.checks, spec.source),),
                variables=spec.variables,
                labels=spec.labels,
                row=key,
                skip=f"unreadable trace: {item}",
                recording=Recording(
                    config.name,
                    key,
                    (item.trace_id,) if item.trace_id else (),
                    item.file,
                    shard_key=item.conversation,
                ),
            )
            index += 1
            continue
        if not chosen.keeps(item):
            continue
        records = _records(item)
        last = len(records) - 1
        started = _started(item.start_ns)
        yield eval_case(
            id=f"{spec.base_id}[{item.key}]",
            index=index,
            steps=tuple(
                Step("send", record.message, spec.checks if number == last else (), spec.source)
                for number, record in enumerate(records)
            ),
            variables={**spec.variables, "trace": trace_variables(item, started)},
            labels=_labels(spec.labels, item.labels),
            row=item.key,
            timeout=spec.timeout,
            skip=spec.skip,
            recording=Recording(
                source=config.name,
                conversation=item.key,
                trace_ids=item.trace_ids,
                file=item.file,
                turns=records,
                turn_traces=tuple(turn.trace_id for turn in item.turns),
                trace_url=config.trace_url,
                started=started,
                shard_key=item.key,
            ),
        )
        index += 1


def source_cases(template: Any, base_case_id: str, index: int, shard: Shard | None = None) -> Iterator[Case]:
    """A `source:` eval's cases, from the compiler's eval (its `_EvalTemplate`): the source's
    recorded conversations, read anew on each pass over the plan (with `--shard`, only this
    shard's are decoded)."""
    chosen = source_filter(template.source)
    project = template.spec.project
    try:
        config = source_config(chosen.name, (project.data.get("sources") or {})[chosen.name])
    except MissingVariable as exc:  # a nightly job's `since: "${SINCE}"` that was not set
        where = ("sources", chosen.name, *exc.path)
        line, column = project.document.position(where) if project.document else (1, 1)
        located = MissingVariable(exc.names, exc.where, exc.path, f"{project.display}:{line}:{column}")
        raise UsageError([str(located)]) from None
    key = ("evals", template.index, "source")
    shared = RecordedEval(
        base_case_id,
        template.suite,
        template.spec.display,
        template.name,
        template.line,
        template.checks_by_turn[0],
        Source(template.spec.document.path, template.spec.document.line(key)),
        template.variables,
        template.labels,
        template.timeout,
        as_text(template.raw["skip"]) if "skip" in template.raw else None,
    )
    return recorded_cases(shared, chosen, config, conversations(config, project.folder, shard), index)
