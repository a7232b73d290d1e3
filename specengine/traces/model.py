"""What a recorded trace says, once read from whichever convention wrote it: plain frozen data.

Each format's reader (`genai.py`, `openinference.py`, `jsonl.py`, `mlflow.py`) turns its own shape
into these few records: the messages a model call read and wrote (`ModelCall`), the tools the
application ran (`ToolRun`), the agent spans around them (`AgentRun`), gathered per trace
(`TraceParts`). `turns.py` builds the conversation from them the same way for every format, so a
convention is one small module that reads attributes, and the rules (what a turn is, a tool call
counted once) live in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallMade:
    """A tool call a model asked for: its id (when the convention records one), name and arguments."""

    name: str
    args: Any
    id: str | None = None


@dataclass(frozen=True)
class Message:
    """One chat message: `role` (system, user, assistant, tool), its text, the calls an assistant
    asked for, and for a tool message the call it answers and what the tool returned."""

    role: str
    text: str = ""
    calls: tuple[CallMade, ...] = ()
    call_id: str | None = None


@dataclass(frozen=True)
class ModelCall:
    """One call to a model (a GenAI `chat` span, an OpenInference LLM span): what it read, what it
    wrote, when, and the tokens it reports."""

    start_ns: int
    end_ns: int
    input: tuple[Message, ...]
    output: tuple[Message, ...]
    input_tokens: int | None = None
    output_tokens: int | None = None
    parent: str | None = None
    span_id: str | None = None  # set when the messages are still to come from log records (event form)


@dataclass(frozen=True)
class ToolRun:
    """A tool the application ran (an `execute_tool` span, an OpenInference TOOL span)."""

    start_ns: int
    name: str
    args: Any
    result: Any = None
    id: str | None = None


@dataclass(frozen=True)
class AgentRun:
    """An agent span (`invoke_agent`, an OpenInference AGENT span): who answered and how long it took."""

    span_id: str
    start_ns: int
    end_ns: int
    name: str | None
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class TraceParts:
    """Everything one trace holds that a conversation is made of, gathered as its spans are read
    (mutable while a file is read; `turns.py` reads it once it is whole)."""

    trace_id: str
    file: str
    conversation: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    agents: list[AgentRun] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    events: dict[str, list[Any]] = field(default_factory=dict)  # log records by span id (event form)
    start_ns: int = 0
    problem: str | None = None

    def saw(self, start_ns: int) -> None:
        """Note a span's start: the trace starts at its earliest."""
        if start_ns and (not self.start_ns or start_ns < self.start_ns):
            self.start_ns = start_ns


@dataclass(frozen=True)
class ToolUse:
    """A tool call as a recorded turn holds it: counted once, with its arguments and what it returned."""

    name: str
    args: Any
    id: str | None = None
    result: Any = None


@dataclass(frozen=True)
class RecordedTurn:
    """One user message and what the agent did with it: its reply, tool calls, time and tokens."""

    user: str
    reply: str
    tool_calls: tuple[ToolUse, ...] = ()
    latency_s: float = 0.0
    usage: Mapping[str, int] | None = None
    trace_id: str | None = None


@dataclass(frozen=True)
class Conversation:
    """A recorded conversation: its key (conversation or session id, else its trace id), where it
    was read, its traces, its turns in order, and what filters and templates read of it."""

    key: str
    source: str
    file: str | None
    trace_ids: tuple[str, ...]
    turns: tuple[RecordedTurn, ...]
    start_ns: int = 0
    agent: str | None = None
    labels: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def user_messages(self) -> list[str]:
        return [turn.user for turn in self.turns]

    def tools_called(self) -> set[str]:
        return {call.name for turn in self.turns for call in turn.tool_calls}


@dataclass(frozen=True)
class Elsewhere:
    """A conversation of another `--shard`: its key only, never decoded. It still counts in the plan
    (every shard plans the whole source), so the shards' plans agree."""

    key: str


@dataclass(frozen=True)
class Unreadable:
    """A trace (or a line of a file) that could not be read as a conversation, and why."""

    file: str
    trace_id: str | None
    why: str
    line: int | None = None
    conversation: str | None = None  # the conversation it was to be part of, when grouped already

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        trace = f" trace {self.trace_id}:" if self.trace_id else ""
        return f"{where}:{trace} {self.why}"
