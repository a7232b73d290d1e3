"""The judge is checked before the agent is called: its key, that it answers, and that it is there at
all when the run requires one.

Without this, a missing key or a judge server that is down shows up only after every agent request
was paid for, as one errored check per case. So when the selected cases hold judge checks, `run`
(and `regrade`) first make sure the judge can be asked: a key is set (unless the judge is on this
machine, see judge/key.py), and the judge's server answers a `GET …/models` (a request that costs
nothing) with a success. Any HTTP error stops the run, naming the URL that answered: a refused key,
and just as often a base_url that is not an OpenAI-compatible API's root (an agent's own address, a
missing `/v1`), which would otherwise error every judge check after every agent request was paid
for. A Databricks workspace serves no model list, so there a 404 is taken as an answer. The
simulators are checked the same way. `--require-judge` or `judge.required: true` make judge checks
that would be skipped (no judge model named) a usage error, so CI cannot go green without its
judge. Every problem is a UsageError: exit 2, nothing sent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from specengine.engine.header import shown_url
from specengine.engine.prepare import Census, Prepared
from specengine.engine.recording import SessionOptions
from specengine.errors import UsageError
from specengine.judge.key import judge_base_url, judge_key, key_source
from specengine.plan import JudgeConfig
from specengine.redact import redact
from specengine.words import counted

PROBE_TIMEOUT_S = 5.0
REFUSED = (401, 403)
NOTHING_SENT = "Nothing was sent to the agent."
FLAGS = {"judge": ", or --judge-base-url"}  # the command-line options that set a base_url


def preflight_judge(prepared: Prepared, census: Census, options: SessionOptions) -> None:
    """Check the judge of a session before it starts (see check_judge)."""
    required = _required(prepared, "judge", options.require_judge)
    check_judge(prepared.plan.judge, census, required=required, environ=os.environ)


def _required(prepared: Prepared, role: str, flag: bool) -> bool:
    """--require-judge (--require-simulator), or `judge.required: true` (`simulator.`) in the project file."""
    block = (prepared.project.data if prepared.project is not None else {}).get(role)
    return flag or (isinstance(block, Mapping) and block.get("required") is True)


def check_judge(config: JudgeConfig, census: Census, *, required: bool, environ: Mapping[str, str]) -> None:
    """Raise UsageError when the selected cases' judge checks could not be judged."""
    if census.judge_checks == 0:
        return
    checks = f"{counted(census.judge_checks, 'judge check')} in {counted(census.judged_cases, 'case')}"
    if not config.model:
        if required:
            raise UsageError(
                f"error: judge required, but no judge model is named: {checks} would be skipped. "
                "Name one with judge.model in specengine.yaml or --judge-model. " + NOTHING_SENT
            )
        return
    _probe(config, checks, environ)


def _probe(config: JudgeConfig, would_error: str, environ: Mapping[str, str]) -> None:
    """Its key, then a GET of the model list of the judge (or a simulator): a success means it can be
    asked; `would_error` says what errors without it."""
    import httpx

    role = config.role
    key = judge_key(config, environ)
    url = shown_url(judge_base_url(config), config.secrets) or ""
    if key is None:
        raise UsageError(
            f"error: the {role} at {url} needs a key, and {config.api_key_env} is not set "
            f"({would_error} would error). Set {config.api_key_env}, or name the variable that holds "
            f"the key with {role}.api_key_env in specengine.yaml. " + NOTHING_SENT
        )
    secrets = {*config.secrets, key, *(config.auth.secrets if config.auth is not None else ())}
    try:
        response = httpx.get(
            judge_base_url(config) + "/models",
            headers={"Authorization": f"Bearer {key}"},
            timeout=min(PROBE_TIMEOUT_S, config.timeout),
            follow_redirects=True,
        )
    except httpx.HTTPError as exc:
        detail = redact(f"{type(exc).__name__}: {exc or 'no detail'}", secrets)
        raise UsageError(
            f"error: the {role} at {url} cannot be reached ({detail}). Is it running? "
            f"Check {role}.base_url in specengine.yaml{FLAGS.get(role, '')}. " + NOTHING_SENT
        ) from None
    status = response.status_code
    if status < 400 or (status == 404 and config.auth is not None):
        return
    excerpt = " ".join(redact(response.text, secrets).split())[:200]
    answered = f"HTTP {status}{': ' + excerpt if excerpt else ''}"
    if status in REFUSED:
        raise UsageError(
            f"error: the {role} at {url} refused {key_source(config)} ({answered}). " + NOTHING_SENT
        )
    raise UsageError(
        f"error: the {role} at {url} answered GET {url}/models with {answered}. {role}.base_url must be "
        "the root of an OpenAI-compatible API, the folder that holds /chat/completions and /models "
        "(its /v1: http://127.0.0.1:8080/v1 for llama.cpp, http://localhost:11434/v1 for Ollama), "
        "not an agent's address. " + NOTHING_SENT
    )


def preflight_simulators(prepared: Prepared, census: Census, flag: bool) -> None:
    """The simulators are checked like the judge: with `--require-simulator` or `simulator.required:
    true`, simulated cases that would be skipped (no simulator model) stop the run; a simulator that
    needs a key and has none stops it too. UsageError: exit 2, nothing sent."""
    if census.simulated_cases == 0:
        return
    required = _required(prepared, "simulator", flag)
    configs = prepared.plan.simulators
    cases = counted(census.simulated_cases, "case")
    for name in sorted(census.simulators, key=lambda name: name or ""):
        config = configs.get(name)
        if config is None or not config.model:
            if required:
                which = f"the simulator '{name}' has no model" if name else "no simulator model is named"
                raise UsageError(
                    f"error: simulator required, but {which}: {cases} with simulate: would be skipped. "
                    "Name one with simulator.model in specengine.yaml or --simulator-model. " + NOTHING_SENT
                )
            continue
        if config.demo:
            continue
        _probe(config, f"{cases} with simulate:", os.environ)
