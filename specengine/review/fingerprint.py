"""The fingerprint of what a reviewer read: a case's transcripts, normalised.

Reviews must follow a reply wherever it goes (`regrade` re-grades the stored transcripts, `merge`
and `--resume` copy cases verbatim) and must never attach to a different reply. The fingerprint keeps
only what a person sees (each message's role, text and tool calls), in a canonical JSON form, so the
extra fields a writer adds (latencies, key order) do not change it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def _message(message: Any) -> list[Any]:
    if not isinstance(message, Mapping):
        return [None, str(message), []]
    calls = message.get("tool_calls")
    tools = [
        [call.get("name"), call.get("args")]
        for call in (calls if isinstance(calls, list) else [])
        if isinstance(call, Mapping)
    ]
    return [message.get("role"), message.get("content"), tools]


def transcript_fingerprint(case: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the case's transcripts (every trial, in order) as a person reads them."""
    trials = case.get("trials")
    shown = []
    for trial in trials if isinstance(trials, list) else []:
        transcript = trial.get("transcript") if isinstance(trial, Mapping) else None
        shown.append([_message(m) for m in (transcript if isinstance(transcript, list) else [])])
    text = json.dumps(shown, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
