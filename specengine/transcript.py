"""The transcript of a conversation as plain data: what endpoints produce and what grading reads.

Endpoints turn HTTP into `Turn`s; the scheduler numbers them into `TurnRecord`s; grading, judges,
results and regrading read them. None of those need to know a protocol exists, so these records
live here, apart from both sides. `transcript` writes records as the results file stores them;
results/decode.py reads them back (`turn_records`, `trial_run`: regrade).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from specengine.redact import redact, redact_value
from specengine.usage import TokenUsage, read_usage


@dataclass(frozen=True)
class ToolCall:
    """A tool call the agent made; `args` parsed from the JSON string the protocol carries."""

    name: str
    args: Any = field(default_factory=dict)
    id: str | None = None
    note: str | None = None  # e.g. "arguments were not valid JSON: ..."
    result: Any = None  # what the tool returned, when a trace, the protocol or a declared tool says

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args}


@dataclass(frozen=True)
class Turn:
    """What one user message produced: the reply text, tool calls, session and timing."""

    reply: str
    tool_calls: tuple[ToolCall, ...] = ()
    session_id: str | None = None
    latency_s: float = 0.0
    error: str | None = None
    ttft_s: float | None = None
    usage: Mapping[str, Any] | None = None  # as the server reported it (see `tokens`)
    state: Any = None  # the agent's state after the turn, when the protocol carries one (ag-ui)

    @property
    def tokens(self) -> TokenUsage | None:
        """The token usage the server reported for this turn, in one shape; None when it gave none."""
        return read_usage(self.usage)

    def redacted(self, secrets: Collection[str]) -> Turn:
        """This turn with every secret masked in what the agent wrote (reply, error, tool calls):
        done as the turn arrives, so every excerpt, diff and summary made of it later is cut from
        text already redacted, never cut through a secret that redaction would then miss."""
        if not secrets:
            return self
        calls = tuple(
            replace(
                call,
                name=redact(call.name, secrets),
                args=redact_value(call.args, secrets),
                note=None if call.note is None else redact(call.note, secrets),
            )
            for call in self.tool_calls
        )
        error = None if self.error is None else redact(self.error, secrets)
        return replace(self, reply=redact(self.reply, secrets), tool_calls=calls, error=error)


@dataclass(frozen=True)
class TurnRecord:
    """A sent message and what came back, with the turn number and the conversation it belongs to."""

    number: int
    message: str
    turn: Turn
    conversation: int
    step: int | None = None  # a simulated user's message: the index of the `simulate` step it belongs to
    simulator: str | None = None  # the model that wrote it (None for a `first_message`, sent as written)

    @property
    def simulated(self) -> bool:
        return self.step is not None


STOP_REASONS = ("goal_reached", "gave_up", "max_turns", "timeout", "agent_error", "simulator_error")


@dataclass(frozen=True)
class SimulationEnd:
    """How a simulated conversation ended in one trial: the `simulate` step it ran (its index among
    the case's steps), why it stopped (one of STOP_REASONS), how many messages the simulated user
    sent, who they were and what they wanted, and the simulator model that played them."""

    step: int
    stop_reason: str
    turns: int
    user: str
    goal: str
    simulator: str | None
    detail: str | None = None  # what went wrong, for agent_error and simulator_error

    def as_dict(self) -> dict[str, Any]:
        """The ending as results store it (decode_trials.read_simulation reads it back)."""
        data = asdict(self)
        if not self.detail:
            del data["detail"]
        return data


@dataclass(frozen=True)
class TrialRun:
    """One trial as the scheduler ends it, before grading: its turns, the transport fault that
    ended it (if any) and how many attempts it took: what grading reads."""

    records: tuple[TurnRecord, ...]
    error: Mapping[str, str] | None
    attempts: int
    simulations: tuple[SimulationEnd, ...] = ()  # how each simulated conversation of it ended


def transcript(records: Sequence[TurnRecord]) -> list[dict[str, Any]]:
    """The results transcript: user and assistant messages, tool calls with parsed arguments, and
    the token usage of each reply whose server reported one."""
    out: list[dict[str, Any]] = []
    conversation = records[0].conversation if records else 0
    for record in records:
        if record.conversation != conversation:
            out.append({"role": "reset", "content": None})  # the results schema requires content
            conversation = record.conversation
        user: dict[str, Any] = {"role": "user", "content": record.message}
        if record.step is not None:  # written by a simulated user, not by the spec
            user["simulated"] = True
            user["step"] = record.step
            if record.simulator is not None:
                user["simulator"] = record.simulator
        out.append(user)
        assistant: dict[str, Any] = {"role": "assistant", "content": record.turn.reply}
        if record.turn.tool_calls:
            assistant["tool_calls"] = [call_entry(call) for call in record.turn.tool_calls]
        if record.turn.error:
            assistant["error"] = record.turn.error
        if record.turn.session_id:
            assistant["session_id"] = record.turn.session_id
        if record.turn.state is not None:
            assistant["state"] = record.turn.state
        assistant["latency_s"] = round(record.turn.latency_s, 4)
        if record.turn.ttft_s is not None:
            assistant["ttft_s"] = round(record.turn.ttft_s, 4)
        tokens = record.turn.tokens
        if tokens is not None:
            assistant["usage"] = tokens.as_dict()
        out.append(assistant)
    return out


def call_entry(call: ToolCall) -> dict[str, Any]:
    """A tool call as the transcript stores it: name and arguments, and the result when known."""
    entry = call.as_dict()
    if call.result is not None:
        entry["result"] = call.result
    return entry
