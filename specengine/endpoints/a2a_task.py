"""What an A2A answer adds up to: one fold for `message/send` results, `tasks/get` results and the
events of a `message/stream`, so a streamed and a plain answer are read the same way.

A2A answers with a task (status, history, artifacts), a message, or, when streamed, status and
artifact updates about a task: 0.3 names each by its `kind` (`task`, `message`, `status-update`,
`artifact-update`), 1.0 wraps each in its kind (`{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`,
`{"artifactUpdate": …}`) and writes roles and states as enum names (`ROLE_AGENT`,
`TASK_STATE_COMPLETED`); the fold reads both, and notes 1.0 when it sees it. The fold keeps:

- the agent's messages of this turn: those in the task's history after the last user message, and
  the messages that status updates carry (a failed task's status message is its error instead);
- the artifacts, by id: an update with `append` extends an artifact's parts, any other update of the
  same id (a last chunk that repeats the whole artifact, the task's final snapshot) replaces them,
  so no text is doubled;
- the context id, the task id and the task's state.

The reply is the text parts of the artifacts (one artifact's parts joined, artifacts one per line),
else, when the artifacts hold only data, that data as JSON (LangGraph's interrupt question comes
this way), else the text of the agent's last message. Tool calls are what the agent's data parts
report under `tool_calls` / `tool_results` (or their camelCase forms): the tool's name, and its
arguments only when the server sends them; a call reported without arguments carries a note that
says so, which an argument check shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from specengine.endpoints.a2a_card import V1, wrong_version
from specengine.endpoints.base import StreamFold, error_text, invalid, parse_arguments
from specengine.transcript import ToolCall

FAILED_STATES = frozenset({"failed", "rejected", "canceled", "auth-required", "unknown"})
WAITING_STATES = frozenset({"input-required", "auth-required"})
SETTLED_STATES = FAILED_STATES | WAITING_STATES | {"completed"}
TOOL_KEYS = ("tool_calls", "toolCalls", "tool_results", "toolResults")
V1_KINDS = {
    "task": "task",
    "message": "message",
    "statusUpdate": "status-update",
    "artifactUpdate": "artifact-update",
}
NO_ARGUMENTS = (
    "this a2a endpoint reported the call without its arguments (A2A servers such as LangGraph's send"
    " only the tool's name and result): check the name with called_tool"
)


def state_name(value: Any) -> str | None:
    """A task state as A2A 0.3 writes it (`input-required`), also from 1.0's `TASK_STATE_INPUT_REQUIRED`."""
    if not isinstance(value, str) or not value:
        return None
    name = value.lower()
    name = name.removeprefix("task_state_")
    return name.replace("_", "-")


def _role(message: Mapping[str, Any]) -> str:
    return str(message.get("role") or "").lower().removeprefix("role_")


def _parts(container: Any) -> list[Mapping[str, Any]]:
    parts = container.get("parts") if isinstance(container, Mapping) else None
    return [part for part in parts if isinstance(part, Mapping)] if isinstance(parts, list) else []


def _text_of(part: Mapping[str, Any]) -> str | None:
    kind = part.get("kind") or part.get("type")
    text = part.get("text")
    return text if isinstance(text, str) and kind in (None, "text") else None


def _data_of(part: Mapping[str, Any]) -> Any:
    kind = part.get("kind") or part.get("type")
    return part.get("data") if kind in (None, "data") else None


def parts_text(container: Any) -> str:
    """The text parts of a message or artifact, joined."""
    return "".join(text for part in _parts(container) if (text := _text_of(part)) is not None)


class TaskFold(StreamFold):
    """Folds JSON-RPC responses about one turn's task; `feed` them in arrival order."""

    def __init__(self, started: float):
        super().__init__(started)
        self.events = 0
        self.context_id: str | None = None
        self.task_id: str | None = None
        self.state: str | None = None
        self.error: str | None = None
        self.finished = False
        self.version: str | None = None  # "1.0" once an answer showed 1.0's shapes
        self.wrong_version = False  # the server does not speak the version asked in
        self.status_message: Mapping[str, Any] | None = None
        self._messages: dict[str, Mapping[str, Any]] = {}
        self._artifacts: dict[str, dict[str, Any]] = {}

    # --- reading answers ---

    def response(self, data: Any) -> None:
        """One JSON-RPC response: its `error`, or its `result` (a task, message or update)."""
        self.events += 1
        if not isinstance(data, Mapping):
            raise invalid("the A2A answer is not a JSON object", data)
        if data.get("error") is not None:
            self.wrong_version = wrong_version(data)
            self.error = error_text(data["error"]) or "the agent answered with a JSON-RPC error"
            self.finished = True
            return
        result = data.get("result")
        if not isinstance(result, Mapping):
            raise invalid('the A2A answer has neither "result" nor "error"', data)
        kind, result = self._unwrap(result)
        self._ids(result, kind)
        if kind == "task":
            self._task(result)
        elif kind == "message":
            self._message(result)
            self.state = self.state or "completed"
            self.finished = True
        elif kind == "status-update":
            self._status(result.get("status"))  # 1.0 has no `final`: a settled state ends the stream
            self.finished = bool(result.get("final")) or self.state in SETTLED_STATES or self.finished
        elif kind == "artifact-update":
            self._artifact(result.get("artifact"), bool(result.get("append")))
        else:
            raise invalid("the A2A result is not a task, message or update", data)

    def _unwrap(self, result: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
        """(kind, object) of a result: 1.0's `{"task": {…}}` unwrapped, 0.3's `kind` read."""
        if len(result) == 1:
            (key, inner), *_ = result.items()
            if key in V1_KINDS and isinstance(inner, Mapping):
                self.version = V1
                return V1_KINDS[key], inner
        kind = result.get("kind")
        if not kind and _enum_named(result):
            self.version = V1
        return (kind if isinstance(kind, str) else None) or _guess_kind(result), result

    def _ids(self, result: Mapping[str, Any], kind: str | None) -> None:
        if isinstance(result.get("contextId"), str):
            self.context_id = result["contextId"]
        task_id = result.get("id") if kind == "task" else result.get("taskId")
        if isinstance(task_id, str) and task_id:
            self.task_id = task_id

    def _task(self, task: Mapping[str, Any]) -> None:
        history = task.get("history")
        history = [item for item in history if isinstance(item, Mapping)] if isinstance(history, list) else []
        start = 0
        for index, message in enumerate(history):
            if _role(message) == "user":
                start = index + 1
        for message in history[start:]:
            self._message(message)
        artifacts = task.get("artifacts")
        for artifact in artifacts if isinstance(artifacts, list) else ():
            self._artifact(artifact, append=False)
        self._status(task.get("status"))
        self.finished = self.state in SETTLED_STATES

    def _status(self, status: Any) -> None:
        if not isinstance(status, Mapping):
            return
        self.state = state_name(status.get("state")) or self.state
        message = status.get("message")
        if isinstance(message, Mapping):
            self.status_message = message
            if self.state not in FAILED_STATES:
                self._message(message)

    def _message(self, message: Mapping[str, Any]) -> None:
        if _role(message) == "user":
            return
        key = str(message.get("messageId") or f"#{len(self._messages)}")
        self._messages[key] = message
        if _parts(message):
            self.first_token()

    def _artifact(self, artifact: Any, append: bool) -> None:
        if not isinstance(artifact, Mapping):
            return
        key = str(artifact.get("artifactId") or f"#{len(self._artifacts)}")
        parts = _parts(artifact)
        if append and key in self._artifacts:
            self._artifacts[key]["parts"] = [*self._artifacts[key]["parts"], *parts]
        else:
            self._artifacts[key] = {**artifact, "parts": parts}
        if parts:
            self.first_token()

    # --- the turn ---

    def reply(self) -> str:
        artifacts = list(self._artifacts.values())
        texts = [text for artifact in artifacts if (text := parts_text(artifact))]
        if texts:
            return "\n".join(texts)
        data = [_data_of(part) for artifact in artifacts for part in _parts(artifact)]
        shown = [json.dumps(item, ensure_ascii=False, default=str) for item in data if item is not None]
        if shown:
            return "\n".join(shown)
        for message in reversed(list(self._messages.values())):
            text = parts_text(message)
            if text:
                return text
        return ""

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls: dict[str, ToolCall] = {}
        for item in self._reported_calls():
            name = item.get("name") or item.get("toolName")
            if not isinstance(name, str) or not name:
                continue
            call_id = item.get("toolCallId") or item.get("tool_call_id") or item.get("id")
            key = str(call_id) if call_id else f"#{len(calls)}"
            raw = next((item[k] for k in ("args", "arguments", "input") if k in item), None)
            if raw is None:
                call = ToolCall(name, {}, str(call_id) if call_id else None, NO_ARGUMENTS)
            else:
                args, note = parse_arguments(raw)
                call = ToolCall(name, args, str(call_id) if call_id else None, note)
            known = calls.get(key)
            if known is None or known.note == NO_ARGUMENTS:  # a call's result after the call adds nothing
                calls[key] = call
        return tuple(calls.values())

    def _reported_calls(self) -> Iterator[Mapping[str, Any]]:
        for message in self._messages.values():
            for part in _parts(message):
                data = _data_of(part)
                if not isinstance(data, Mapping):
                    continue
                for key in TOOL_KEYS:
                    items = data.get(key)
                    for item in items if isinstance(items, list) else ():
                        if isinstance(item, Mapping):
                            yield item

    def failure(self) -> str | None:
        """The error of the turn: a JSON-RPC error, or a task that ended failed/rejected/canceled."""
        if self.error is not None:
            return self.error
        if self.state in FAILED_STATES:
            text = parts_text(self.status_message)
            return f"task {self.state}: {text}" if text else f"task {self.state}"
        return None


def _enum_named(result: Mapping[str, Any]) -> bool:
    """True when an object writes its state or role as 1.0's enum names (a 1.0 `GetTask` result)."""
    status = result.get("status")
    state = status.get("state") if isinstance(status, Mapping) else None
    role = result.get("role")
    return any(isinstance(v, str) and v.startswith(("TASK_STATE_", "ROLE_")) for v in (state, role))


def _guess_kind(result: Mapping[str, Any]) -> str | None:
    """The kind of a result that does not name it (older servers)."""
    if "artifact" in result:
        return "artifact-update"
    if "status" in result:
        return "task" if "id" in result and "taskId" not in result else "status-update"
    if "parts" in result:
        return "message"
    return None
