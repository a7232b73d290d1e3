"""Data quoted in a judge's prompt cannot close the fence it is quoted in.

autoevals' prompts quote the question, the reply and the reference between `[BEGIN DATA]` and
`[END DATA]`, the conversation judges' between `[BEGIN CONVERSATION]` and `[END CONVERSATION]`, and
the examples sit between `[BEGIN EXAMPLES]` and `[END EXAMPLES]`. A reply that writes `[END DATA]`
and then instructions would otherwise read, to the judge, as the prompt's own words after its data.
"""

from __future__ import annotations

import re

# any `[BEGIN …]` or `[END …]`, whatever its case and spacing
_FENCE = re.compile(r"\[(\s*(?:BEGIN|END)\b[^\]\n]{0,60})\]", re.IGNORECASE)


def unfenced(text: str) -> str:
    """`text` with every fence marker in it written with parentheses (`(END DATA)`): a reply that
    writes `[END DATA]` and then instructions must not close the fence its data is quoted in."""
    return _FENCE.sub(r"(\1)", text) if "[" in text else text
