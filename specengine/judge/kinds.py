"""The kinds of judge and the choices each may pick: declarations that validation and grading share.

Validation checks a judge check's choices, examples and keys against these without loading autoevals
(a test holds BUILTIN_CHOICES to autoevals' own scorers); the judge package builds its prompts from
them. Three kinds grade a reply with autoevals' prompts; the conversation kinds grade a whole
conversation with ours (judge/conversation.py), and read it by default (`scope: conversation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ConversationKind:
    """A judge kind that reads the whole conversation: the rubric keys it takes (templates), the one
    it cannot do without (None: none), and what it asks, in the words of the docs."""

    name: str
    takes: tuple[str, ...] = ()
    needs: str | None = None
    asks: str = ""


PASS_FAIL = {"Y": 1.0, "N": 0.0}
GOAL = "goal_completed"  # reads the case's goal (a simulated user's) when the check has no `goal:`
CONVERSATION_KINDS: Mapping[str, ConversationKind] = {
    kind.name: kind
    for kind in (
        ConversationKind(GOAL, ("goal",), None, "did the user get what the goal asked for"),
        ConversationKind("role_adherence", ("role",), "role", "did the assistant stay in its role"),
        ConversationKind(
            "knowledge_retention", (), None, "did the assistant keep what the user told it earlier"
        ),
        ConversationKind("conversation_relevance", (), None, "was every reply relevant to what was asked"),
    )
}
KINDS = ("closed_qa", "factuality", "custom", *CONVERSATION_KINDS)
NO_JUDGE = "no judge configured (--judge-model)"  # why a judge check was skipped: no judge model
# The choices of autoevals' own judges and their scores (custom judges bring theirs).
BUILTIN_CHOICES: Mapping[str, Mapping[str, float]] = {
    "closed_qa": PASS_FAIL,
    "factuality": {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0},
}


def choice_scores(kind: str, choices: Mapping[str, float] | None = None) -> dict[str, float]:
    """The choices of a judge of this kind and their scores: autoevals' own, a conversation judge's
    (Y or N), or a custom judge's."""
    if kind in BUILTIN_CHOICES:
        return dict(BUILTIN_CHOICES[kind])
    if kind in CONVERSATION_KINDS:
        return dict(PASS_FAIL)
    return {str(name): float(score) for name, score in (choices or {}).items()}


def choices_scoring(score: float, scores: Mapping[str, float]) -> list[str]:
    """The choices that score `score` (an example may name its verdict by its score)."""
    return [name for name, value in scores.items() if abs(value - score) < 1e-9]


RUBRIC_OF = {
    "closed_qa": "criteria",
    "factuality": "expected",
    "custom": "prompt",
    **{kind.name: kind.needs for kind in CONVERSATION_KINDS.values() if kind.needs},
}
"""The text each kind cannot judge without (a conversation kind's from its declaration)."""

_RUBRIC_FIX = {
    "criteria": "write the question the judge answers yes or no about the reply, e.g."
    " `criteria: Does the reply give the order's delivery date?`",
    "expected": "write the reference answer the reply is compared with, e.g."
    ' `expected: The order ships on Monday` (or `expected: "{{ expected.answer }}"`)',
    "prompt": "write the whole grading prompt, with {{ reply }} where the reply goes and the choices"
    ' at its end, e.g. `prompt: "Reply: {{ reply }} Is it (A) polite or (B) rude?"`',
    "role": "write the role the agent must keep all through the conversation, e.g."
    " `role: a support agent for Acme who only talks about Acme orders`",
}


def blank_rubric(key: str) -> str:
    """What a judge check with an empty `criteria`, `expected`, `prompt` or `role` must write there:
    the text itself, never an empty pair of quotes."""
    return f"{key} is empty, and the judge has nothing to judge by: {_RUBRIC_FIX[key]}"
