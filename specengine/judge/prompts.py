"""What a judge check asks: autoevals' judge prompts and `select_choice` tool, as one chat request.

autoevals owns the judge prompts: the ClosedQA and Factuality templates, the chain-of-thought suffix,
the forced `select_choice` tool with the choices as an enum, and the score of each choice. We read
them from its scorers and render them with chevron, its mustache renderer, exactly as autoevals does;
then client.py sends the request. We do not let autoevals send it: its request path sends every
gpt-5* model to the Responses API whatever `use_responses_api` says, retries openai.RateLimitError up
to 100 times with no cap, and falls back to a third-party gateway when no client reaches it. Sending
the request ourselves keeps one wire format (chat completions, which every OpenAI-compatible server
speaks) and one retry policy (specengine.retry).

Our Jinja2-rendered texts reach mustache only as variable values, never as template text, so `{{ }}`
in a reply or a custom prompt survives; a custom prompt is the value of autoevals' `{{__prompt}}`.
autoevals and chevron load inside `judge_prompt`: `validate` and `--help` never import them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KINDS = ("closed_qa", "factuality", "custom")
SELECT_CHOICE = "select_choice"


@dataclass(frozen=True)
class JudgeRequest:
    """What one judge check asks, with every template already rendered by us.

    `question` is the last user message, or with `scope: conversation` the transcript since the last
    reset (see `transcript`). `reply` is the reply or the rendered `value:`.
    """

    kind: str  # "closed_qa" | "factuality" | "custom"
    question: str
    reply: str
    criteria: str | None = None  # closed_qa
    expected: str | None = None  # factuality: the reference answer
    prompt: str | None = None  # custom: the full rendered prompt
    choices: Mapping[str, float] | None = None  # custom: choice letter -> score in [0, 1]
    use_cot: bool = True


@dataclass(frozen=True)
class JudgePrompt:
    """The rendered request of one judge check, and what each choice the judge may pick scores."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    choice_scores: Mapping[str, float]

    @property
    def choices(self) -> list[str]:
        return list(self.choice_scores)

    def body(self, model: str) -> dict[str, Any]:
        """The chat completion request, with `select_choice` forced as autoevals forces it."""
        return {
            "model": model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": {"type": "function", "function": {"name": SELECT_CHOICE}},
        }


def transcript(messages: Iterable[tuple[str, str]]) -> str:
    """A conversation as the judge sees it with `scope: conversation`: `role: text` per line."""
    return "\n".join(f"{role}: {text}" for role, text in messages)


def judge_text(value: Any) -> str:
    """Judge inputs are always strings: structures as JSON (never Python repr), None as empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def request_problem(request: JudgeRequest) -> str | None:
    """Why this request cannot be sent (a missing input, a choice score outside 0..1), or None."""
    if request.kind not in KINDS:
        return f"unknown judge {request.kind!r} (use one of: {', '.join(KINDS)})"
    if request.kind == "closed_qa" and request.criteria is None:
        return "judge closed_qa needs `criteria`"
    if request.kind == "factuality" and request.expected is None:
        return "judge factuality needs `expected` (the reference answer)"
    if request.kind == "custom":
        if request.prompt is None:
            return "judge custom needs `prompt`"
        if not request.choices:
            return "judge custom needs `choices`, e.g. {A: 1.0, B: 0.0}"
        for name, value in request.choices.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                return f"choice {name!r} has score {value!r}; choice scores must be numbers from 0 to 1"
    return None


def judge_prompt(request: JudgeRequest) -> JudgePrompt:
    """The request autoevals' scorer for this kind would send, rendered the way it renders it.

    `request` must have no `request_problem`.
    """
    import chevron  # autoevals' renderer; importing autoevals (in _scorer) turns its HTML escaping off

    scorer, variables = _scorer(request)
    values = {**variables, **scorer.render_args}  # autoevals' order: its own render args win
    messages = [
        {**message, "content": chevron.render(message["content"].strip(), values)}
        for message in scorer.messages
    ]
    scores = {str(name): float(score) for name, score in scorer.choice_scores.items()}
    return JudgePrompt(messages=messages, tools=scorer.classification_tools, choice_scores=scores)


def _scorer(request: JudgeRequest) -> tuple[Any, dict[str, str]]:
    """The autoevals scorer for this kind and its template variables; every value a plain string."""
    from autoevals import LLMClassifier

    use_cot = bool(request.use_cot)
    question, reply = judge_text(request.question), judge_text(request.reply)
    if request.kind == "closed_qa":
        variables = {"input": question, "output": reply, "criteria": judge_text(request.criteria)}
        return _template_scorer(request.kind, use_cot), variables
    if request.kind == "factuality":
        variables = {"input": question, "output": reply, "expected": judge_text(request.expected)}
        return _template_scorer(request.kind, use_cot), variables
    choices = {str(name): float(score) for name, score in (request.choices or {}).items()}
    scorer = LLMClassifier(
        name="custom", prompt_template="{{__prompt}}", choice_scores=choices, use_cot=use_cot
    )
    return scorer, {"output": reply, "__prompt": judge_text(request.prompt)}


@functools.cache
def _template_scorer(kind: str, use_cot: bool) -> Any:
    """autoevals' ClosedQA or Factuality, built once: each build parses its YAML template again.

    Only read from (its prompt, tool and choice scores), never called, so sharing it is safe.
    """
    from autoevals import ClosedQA, Factuality

    return (ClosedQA if kind == "closed_qa" else Factuality)(use_cot=use_cot)
