"""What a judge check asks: autoevals' judge prompts and `select_choice` tool, as one chat request.

autoevals owns the judge prompts: the ClosedQA and Factuality templates, the chain-of-thought suffix,
the forced `select_choice` tool with the choices as an enum, and the score of each choice. We read
them from its scorers and render them with chevron, its mustache renderer, exactly as autoevals does;
then model_client.py sends the request. We do not let autoevals send it: its request path sends every
gpt-5* model to the Responses API whatever `use_responses_api` says, retries openai.RateLimitError up
to 100 times with no cap, and falls back to a third-party gateway when no client reaches it. Sending
the request ourselves keeps one wire format (chat completions, which every OpenAI-compatible server
speaks) and one retry policy (specengine.retry). The conversation judges' prompts are ours
(conversation.py), rendered and sent the same way.

Our Jinja2-rendered texts reach mustache only as variable values, never as template text, so `{{ }}`
in a reply or a custom prompt survives; a custom prompt is the value of autoevals' `{{__prompt}}`.
Few-shot examples are ours: a block of graded examples put before autoevals' prompt, in plain text
(never through mustache). autoevals and chevron load inside `judge_prompt` and `prompt_hash`:
`validate` and `--help` never import them (validate reads judge/kinds.py, whose BUILTIN_CHOICES a
test holds to autoevals' scorers).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.judge.conversation import conversation_scorer
from specengine.judge.fences import unfenced
from specengine.judge.kinds import (
    BUILTIN_CHOICES,
    CONVERSATION_KINDS,
    GOAL,
    KINDS,
    choice_scores,
    choices_scoring,
)
from specengine.plan import JudgeExample, JudgeSpec

SELECT_CHOICE = "select_choice"
EXAMPLES_INTRO = (
    "Here are submissions that were graded before, each with the right choice and why."
    " Grade the data that follows in the same way."
)


@dataclass(frozen=True)
class JudgeRequest:
    """What one judge check asks, with every template already rendered by us.

    `question` is the last user message, or with `scope: conversation` the transcript since the last
    reset (see `transcript`; a conversation judge's is `conversation.conversation_text`). `reply` is
    the reply or the rendered `value:`.
    """

    kind: str  # one of kinds.KINDS
    question: str
    reply: str
    criteria: str | None = None  # closed_qa
    expected: str | None = None  # factuality: the reference answer
    prompt: str | None = None  # custom: the full rendered prompt
    choices: Mapping[str, float] | None = None  # custom: choice letter -> score in [0, 1]
    use_cot: bool = True
    examples: tuple[JudgeExample, ...] = ()  # few-shot examples, shown before the prompt
    model: str | None = None  # a named judge's own model, instead of the run's
    goal: str | None = None  # goal_completed: what the user wanted
    role: str | None = None  # role_adherence: the role the agent must keep

    @property
    def choice_scores(self) -> dict[str, float]:
        """The choices the judge may pick and what each scores."""
        return choice_scores(self.kind, self.choices)


@dataclass(frozen=True)
class JudgePrompt:
    """The rendered request of one judge check, and what each choice the judge may pick scores."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    choice_scores: Mapping[str, float]

    @property
    def choices(self) -> list[str]:
        return list(self.choice_scores)

    def body(self, model: str, temperature: float | None = None, seed: int | None = None) -> dict[str, Any]:
        """The chat completion request, with `select_choice` forced as autoevals forces it, and the
        judge's sampling settings (a server's default temperature would make verdicts flip)."""
        body: dict[str, Any] = {
            "model": model,
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": {"type": "function", "function": {"name": SELECT_CHOICE}},
        }
        if temperature is not None:
            body["temperature"] = temperature
        if seed is not None:
            body["seed"] = seed
        return body


def transcript(messages: Iterable[tuple[str, str]]) -> str:
    """A conversation as the judge sees it with `scope: conversation`: `role: text` per line."""
    return "\n".join(f"{role}: {text}" for role, text in messages)


def judge_text(value: Any) -> str:
    """Judge inputs are always strings: structures as JSON (never Python repr), None as empty; no
    fence marker stands in them (`unfenced`)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return unfenced(value)
    return unfenced(json.dumps(value, ensure_ascii=False, default=str))


def example_problem(example: JudgeExample, scores: Mapping[str, float]) -> str | None:
    """Why an example cannot be shown to this judge (its verdict is none of its choices), or None."""
    if example.choice is not None and example.choice not in scores:
        return f"choice {example.choice!r} is not one of the judge's choices ({', '.join(scores)})"
    if example.choice is None and example.score is None:
        return "an example needs `choice` or `score`"
    if example.choice is None and example.score is not None and not choices_scoring(example.score, scores):
        listed = ", ".join(f"{name} = {value:g}" for name, value in scores.items())
        return f"no choice of this judge scores {example.score:g} ({listed})"
    return None


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
    if request.kind == GOAL and not request.goal:
        return f"judge {GOAL} needs a goal: write goal: on the check, or simulate a user with a goal"
    needs = CONVERSATION_KINDS[request.kind].needs if request.kind in CONVERSATION_KINDS else None
    if needs is not None and not getattr(request, needs):
        return f"judge {request.kind} needs `{needs}`"
    scores = request.choice_scores
    for number, example in enumerate(request.examples, 1):
        problem = example_problem(example, scores)
        if problem is not None:
            return f"example {number}: {problem}"
    return None


def examples_text(examples: Sequence[JudgeExample], scores: Mapping[str, float]) -> str:
    """The few-shot block: each example's input, output, reference, right choice and why.

    A verdict given as a score shows the choices that score it. Every example must have no
    `example_problem`.
    """
    lines = [EXAMPLES_INTRO, "[BEGIN EXAMPLES]"]
    for number, example in enumerate(examples, 1):
        if example.choice is not None:
            verdict = example.choice
        else:
            verdict = " or ".join(choices_scoring(float(example.score or 0), scores))
        lines += ["***", f"[Example {number}]"]
        if example.input is not None:
            lines.append(f"[Input]: {unfenced(example.input)}")
        lines.append(f"[Output]: {unfenced(example.output)}")
        if example.expected is not None:
            lines.append(f"[Reference answer]: {unfenced(example.expected)}")
        lines.append(f"[Right choice]: {verdict}")
        if example.why:
            lines.append(f"[Why]: {unfenced(example.why)}")
    lines += ["***", "[END EXAMPLES]"]
    return "\n".join(lines)


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
    if request.examples and messages:
        block = examples_text(request.examples, scores)
        messages[0] = {**messages[0], "content": f"{block}\n\n{messages[0]['content']}"}
    return JudgePrompt(messages=messages, tools=scorer.classification_tools, choice_scores=scores)


def prompt_hash(spec: JudgeSpec, use_cot: bool = True) -> str:
    """A short fingerprint of what a judge check asks, before any case fills it in.

    It covers the prompt template for the kind (autoevals', so an upgrade that rewords it shows; ours
    for a conversation judge),
    the choices and their scores, the check's rubric as written and its examples; never a reply, so
    two runs of an unchanged rubric agree however the agent answered.
    """
    if spec.kind in BUILTIN_CHOICES:
        scorer = _template_scorer(spec.kind, use_cot)
    elif spec.kind in CONVERSATION_KINDS:
        scorer = conversation_scorer(spec.kind, use_cot)
    else:
        scorer = _custom_scorer(use_cot)
    rubric = {key: getattr(spec, key) for key in ("goal", "role") if getattr(spec, key) is not None}
    fields = {
        **rubric,  # only a conversation judge's: the hashes of other judges stay as they were
        "kind": spec.kind,
        "messages": [message["content"] for message in scorer.messages],
        "choices": [[name, score] for name, score in choice_scores(spec.kind, spec.choices).items()],
        "criteria": spec.criteria,
        "expected": spec.expected,
        "prompt": spec.prompt,
        "examples": [example.as_dict() for example in spec.examples],
    }
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


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
    if request.kind in CONVERSATION_KINDS:
        variables = {
            "conversation": question,
            "goal": judge_text(request.goal),
            "role": judge_text(request.role),
        }
        return conversation_scorer(request.kind, use_cot), variables
    choices = {str(name): float(score) for name, score in (request.choices or {}).items()}
    scorer = LLMClassifier(
        name="custom", prompt_template="{{__prompt}}", choice_scores=choices, use_cot=use_cot
    )
    return scorer, {"output": reply, "__prompt": judge_text(request.prompt)}


@functools.cache
def _custom_scorer(use_cot: bool) -> Any:
    """A custom judge's scorer before its prompt is known: its messages are autoevals' template."""
    from autoevals import LLMClassifier

    return LLMClassifier(name="custom", prompt_template="{{__prompt}}", choice_scores={}, use_cot=use_cot)


@functools.cache
def _template_scorer(kind: str, use_cot: bool) -> Any:
    """autoevals' ClosedQA or Factuality, built once: each build parses its YAML template again.

    Only read from (its prompt, tool and choice scores), never called, so sharing it is safe.
    """
    from autoevals import ClosedQA, Factuality

    return (ClosedQA if kind == "closed_qa" else Factuality)(use_cot=use_cot)
