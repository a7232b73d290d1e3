"""The fingerprint of what a reviewer read: a case's transcripts, normalised.

Reviews must follow a reply wherever it goes (`regrade` re-grades the stored transcripts, `merge`
and `--resume` copy cases verbatim) and must never attach to a different reply. The fingerprint keeps
only what a person sees (each message's role, text and tool calls), in a canonical JSON form, so the
extra fields a writer adds (latencies, key order) do not change it.
"""

from __future__ import annotations

import hashlib
import json

from specengine.results.decode import messages
from specengine.results.loaded import Case


def transcript_fingerprint(case: Case) -> str:
    """`sha256:<hex>` of the case's transcripts (every trial, in order) as a person reads them."""
    shown = [
        [
            [message.role, message.content, [[call.name, call.args] for call in message.tool_calls]]
            for message in messages(trial)
        ]
        for trial in case.trials
    ]
    text = json.dumps(shown, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
