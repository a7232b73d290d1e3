"""Judge samples, few-shot examples, per-judge models and the judge pin, against a scripted judge.

The real httpx, openai and autoevals code runs against the loopback judge of support.judge_server;
end-to-end runs through the CLI are in test_cli_judge_samples.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from autoevals import ClosedQA, Factuality
from support.judge_server import JudgeServer, choose

from specengine.judge.judge import Judge, JudgeRequest, JudgeVerdict
from specengine.judge.kinds import BUILTIN_CHOICES
from specengine.judge.prompts import EXAMPLES_INTRO, judge_prompt, prompt_hash, request_problem
from specengine.judge.samples import Sample, combine, method_for
from specengine.plan import JudgeConfig, JudgeExample, JudgeSpec

KEY = "sk-test-SECRET-0123456789"
ENV = {"OPENAI_API_KEY": KEY}
QA = JudgeRequest(kind="closed_qa", question="Weather in Paris?", reply="Sunny.", criteria="Gives weather?")


def make(server: JudgeServer, tmp_path: Path, **overrides) -> Judge:
    values = {"model": "judge-m", "base_url": server.judge_url, "timeout": 5.0, **overrides}
    return Judge(JudgeConfig(**values), cache_dir=tmp_path / "cache", environ=ENV, backoff_base=0.001)


def ask(judge: Judge, request: JudgeRequest, samples: int = 1) -> list[JudgeVerdict]:
    async def go() -> list[JudgeVerdict]:
        try:
            return list(await asyncio.gather(*(judge.verdict(request, n) for n in range(1, samples + 1))))
        finally:
            await judge.aclose()

    return asyncio.run(go())


# -- samples: each its own cache entry ---------------------------------------------------------------


def test_each_sample_asks_the_judge_and_a_rerun_asks_none(tmp_path):
    with JudgeServer(lambda call, hit: choose("Y" if hit != 2 else "N", f"answer {hit}")) as server:
        first = ask(make(server, tmp_path), QA, samples=3)
        assert server.hits() == 3  # identical requests, yet three answers: never one cache entry
        judge = make(server, tmp_path)
        again = ask(judge, QA, samples=3)
        assert server.hits() == 3
    assert sorted(v.choice or "" for v in first) == ["N", "Y", "Y"]
    assert [v.choice for v in again] == [v.choice for v in first]  # each sample kept its own answer
    assert all(v.cached for v in again) and not any(v.cached for v in first)
    assert (judge.stats.cache_hits, judge.stats.calls) == (3, 0)


def test_sample_one_is_the_entry_of_a_check_without_samples(tmp_path):
    """Raising samples from 1 to 3 keeps the verdict already paid for and asks for two more."""
    with JudgeServer() as server:
        ask(make(server, tmp_path), QA, samples=1)
        verdicts = ask(make(server, tmp_path), QA, samples=3)
        assert server.hits() == 3
    assert [v.cached for v in verdicts] == [True, False, False]


# -- combining samples ------------------------------------------------------------------------------


def samples(*pairs: tuple[float, str]) -> list[Sample]:
    return [Sample(score, choice, f"why {n}") for n, (score, choice) in enumerate(pairs, 1)]


@pytest.mark.parametrize(
    ("given", "method", "score", "choice", "rationale", "spread", "uncertain"),
    [
        (samples((1, "Y"), (0, "N"), (1, "Y")), "majority", 1.0, "Y", "why 1", 1.0, True),
        (samples((0, "N"), (1, "Y"), (0, "N")), "majority", 0.0, "N", "why 1", 1.0, True),
        (samples((1, "Y"), (0, "N")), "majority", 0.0, "N", "why 2", 1.0, True),  # a tie fails
        (samples((1, "Y"), (1, "Y"), (1, "Y")), "majority", 1.0, "Y", "why 1", 0.0, False),
        (samples((1, "C"), (1, "E"), (0.4, "A")), "mean", 0.8, "C", "why 1", 0.6, True),
        (samples((0.5, "B"), (0.5, "B")), "mean", 0.5, "B", "why 1", 0.0, False),
        (samples((1, "C"), (1, "E")), "mean", 1.0, "C", "why 1", 0.0, False),  # same score: certain
    ],
)
def test_samples_combine_by_vote_or_mean(given, method, score, choice, rationale, spread, uncertain):
    combined = combine(given, method)
    assert combined.score == pytest.approx(score)
    assert (combined.choice, combined.rationale, combined.method) == (choice, rationale, method)
    assert (combined.spread, combined.uncertain) == (pytest.approx(spread), uncertain)


@pytest.mark.parametrize(
    ("scores", "spread", "uncertain"),
    [
        ((0.0, 1 / 3), 0.3333, True),  # the spread is rounded to 4 places
        ((0.0, 1e-9), 0.0, False),  # closer than 1e-9 is the same score
        ((0.5, 0.5), 0.0, False),
    ],
)
def test_the_spread_of_samples_and_whether_they_disagree(scores, spread, uncertain):
    combined = combine([Sample(score, "c", None) for score in scores], "mean")
    assert (combined.spread, combined.uncertain) == (spread, uncertain)


@pytest.mark.parametrize(
    ("scores", "method"),
    [
        (BUILTIN_CHOICES["closed_qa"], "majority"),
        (BUILTIN_CHOICES["factuality"], "mean"),
        ({"A": 1.0, "B": 0.5, "C": 0.0}, "mean"),
        ({"PASS": 1, "FAIL": 0, "SKIP": 0}, "majority"),
    ],
)
def test_pass_fail_judges_vote_and_graded_judges_average(scores, method):
    assert method_for(scores) == method


# -- few-shot examples ------------------------------------------------------------------------------

EXAMPLES = (
    JudgeExample(output="It is {{ sunny }}.", choice="Y", input="Weather?", why="It answers."),
    JudgeExample(output="No idea.", score=0.0, why="It gives no weather."),
)


def test_examples_come_before_autoevals_prompt_verbatim():
    request = replace(QA, examples=EXAMPLES)
    content = judge_prompt(request).messages[0]["content"]
    plain = judge_prompt(QA).messages[0]["content"]
    block, rest = content.split("\n\n", 1)
    assert rest == plain  # autoevals' prompt itself is untouched
    assert block.splitlines() == [
        EXAMPLES_INTRO,
        "[BEGIN EXAMPLES]",
        "***",
        "[Example 1]",
        "[Input]: Weather?",
        "[Output]: It is {{ sunny }}.",  # never through mustache: braces survive
        "[Right choice]: Y",
        "[Why]: It answers.",
        "***",
        "[Example 2]",
        "[Output]: No idea.",
        "[Right choice]: N",  # a score names the choices that give it
        "[Why]: It gives no weather.",
        "***",
        "[END EXAMPLES]",
    ]


def test_a_score_shared_by_choices_names_them_all():
    request = JudgeRequest(
        kind="factuality",
        question="q",
        reply="r",
        expected="e",
        examples=(JudgeExample(output="o", expected="ref", score=1),),
    )
    content = judge_prompt(request).messages[0]["content"]
    assert "[Reference answer]: ref\n[Right choice]: C or E\n" in content


@pytest.mark.parametrize(
    ("example", "problem"),
    [
        (
            JudgeExample(output="o", choice="Q"),
            "example 1: choice 'Q' is not one of the judge's choices (Y, N)",
        ),
        (JudgeExample(output="o", score=0.5), "example 1: no choice of this judge scores 0.5 (Y = 1, N = 0)"),
        (JudgeExample(output="o"), "example 1: an example needs `choice` or `score`"),
    ],
)
def test_an_example_the_judge_cannot_read_is_refused_before_any_request(tmp_path, example, problem):
    request = replace(QA, examples=(example,))
    assert request_problem(request) == problem
    with JudgeServer() as server:
        [verdict] = ask(make(server, tmp_path), request)
    assert verdict.error == problem
    assert server.hits() == 0


def test_examples_reach_the_judge_and_are_in_the_cache_key(tmp_path):
    with JudgeServer() as server:
        ask(make(server, tmp_path), QA)
        ask(make(server, tmp_path), replace(QA, examples=EXAMPLES))
        ask(make(server, tmp_path), replace(QA, examples=EXAMPLES[:1]))
        assert server.hits() == 3
        [cached] = ask(make(server, tmp_path), replace(QA, examples=EXAMPLES))
        assert server.hits() == 3
    assert cached.cached
    assert "[Why]: It gives no weather." in server.calls[1].prompt
    assert "[BEGIN EXAMPLES]" not in server.calls[0].prompt


# -- a named judge's own model ----------------------------------------------------------------------


def test_a_request_with_its_own_model_is_sent_and_cached_under_it(tmp_path):
    with JudgeServer() as server:
        ask(make(server, tmp_path), QA)
        ask(make(server, tmp_path), replace(QA, model="judge-big"))
        [again] = ask(make(server, tmp_path), replace(QA, model="judge-big"))
    assert [call.body["model"] for call in server.calls] == ["judge-m", "judge-big"]
    assert again.cached


# -- the pin: model, prompt hash, autoevals version -------------------------------------------------


def test_the_pin_names_model_prompt_hash_and_autoevals_version(tmp_path):
    from autoevals.version import VERSION

    judge = Judge(JudgeConfig(model="judge-m"), cache_dir=tmp_path / "cache", environ=ENV)
    spec = JudgeSpec("closed_qa", criteria="Polite?")
    assert judge.pin(spec).as_dict() == {
        "model": "judge-m",
        "prompt_hash": prompt_hash(spec),
        "autoevals": VERSION,
        "temperature": 0.0,
    }
    named = replace(spec, model="judge-big", name="tone")
    assert judge.pin(named).as_dict() == {
        "model": "judge-big",
        "prompt_hash": prompt_hash(spec),
        "autoevals": VERSION,
        "name": "tone",
        "temperature": 0.0,
    }


def test_the_prompt_hash_changes_with_the_rubric_and_nothing_else():
    base = JudgeSpec("custom", prompt="Reply: {{ reply }} (A) good (B) bad", choices={"A": 1.0, "B": 0.0})
    same = [base, replace(base, samples=5, model="other", name="tone")]
    changed = [
        replace(base, prompt="Reply: {{ reply }} (A) fine (B) bad"),
        replace(base, choices={"A": 1.0, "B": 0.5}),
        replace(base, examples=EXAMPLES[:1]),
        JudgeSpec("closed_qa", criteria="Reply: {{ reply }} (A) good (B) bad"),
    ]
    hashes = {prompt_hash(spec) for spec in same}
    assert len(hashes) == 1
    assert len({prompt_hash(spec) for spec in changed} | hashes) == len(changed) + 1


def test_the_prompt_hash_follows_autoevals_own_template(monkeypatch):
    import specengine.judge.prompts as prompts

    spec = JudgeSpec("closed_qa", criteria="Polite?")
    before = prompt_hash(spec)
    reworded = ClosedQA(use_cot=True)
    reworded.messages = [{"role": "user", "content": "Is {{output}} good? {{criteria}}"}]
    monkeypatch.setattr(prompts, "_template_scorer", lambda kind, use_cot: reworded)
    assert prompt_hash(spec) != before


def test_builtin_choices_are_autoevals_own():
    assert BUILTIN_CHOICES["closed_qa"] == ClosedQA().choice_scores
    assert BUILTIN_CHOICES["factuality"] == Factuality().choice_scores
