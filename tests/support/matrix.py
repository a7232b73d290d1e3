"""Two scripted agents that differ on known cases and report known token usage, for matrix runs.

`gpt` answers every question right and reports 100 input and 20 output tokens per turn; `llama`
answers questions 5 and 6 wrong and reports 50 and 10. With the prices below, a case costs
(100 × 2.5 + 20 × 10) / 1e6 = 0.00045 on gpt and (50 × 0.5 + 10 × 1) / 1e6 = 0.000035 on llama.
`write_matrix_project` writes the project (two endpoints, a matrix of both with two greetings, one
read from prompts/formal.txt) and a spec of six questions; the run has four cells of six cases.
`run_matrix` writes it and runs it once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from support.cli import CliResult, run_cli, write_project, write_spec
from support.servers import AgentServer, Reply, last_user_message

QUESTIONS = 6
WRONG_ON_LLAMA = (5, 6)
GPT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
LLAMA_USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
GPT_PRICE = {"input_per_million": 2.5, "output_per_million": 10}
LLAMA_PRICE = {"input_per_million": 0.5, "output_per_million": 1}
FORMAL = "Good day."
CELLS = ("gpt · formal", "gpt · hi", "llama · formal", "llama · hi")

ROWS = ", ".join(f"{{id: q{n}, input: {{n: {n}}}}}" for n in range(1, QUESTIONS + 1))
SPEC = f"""
evals:
  - name: question
    send: "{{{{ vars.greeting }}}} | question {{{{ input.n }}}}"
    dataset: [{ROWS}]
    expect:
      - includes: right
"""


def _question(messages: list[Any]) -> int:
    found = re.search(r"question (\d+)", last_user_message(messages))
    return int(found.group(1)) if found else 0


def script_agents(gpt: AgentServer, llama: AgentServer, delay: float = 0.0) -> None:
    """gpt right on every question; llama wrong on 5 and 6; each with its usage (and a delay)."""
    gpt.script(lambda messages: Reply(content="right", usage=GPT_USAGE, delay=delay))
    llama.script(
        lambda messages: Reply(
            content="wrong" if _question(messages) in WRONG_ON_LLAMA else "right",
            usage=LLAMA_USAGE,
            delay=delay,
        )
    )


@contextmanager
def two_agents() -> Iterator[tuple[AgentServer, AgentServer]]:
    """The two agents, started and scripted."""
    with ExitStack() as stack:
        gpt = stack.enter_context(AgentServer())
        llama = stack.enter_context(AgentServer())
        script_agents(gpt, llama)
        yield gpt, llama


def write_matrix_project(
    folder: Path, gpt: AgentServer, llama: AgentServer, **more: Any
) -> Mapping[str, Any]:
    """The project of two priced endpoints and a 2 × 2 matrix, the spec, and prompts/formal.txt."""
    (folder / "prompts").mkdir(parents=True, exist_ok=True)
    (folder / "prompts" / "formal.txt").write_text(FORMAL, encoding="utf-8")
    endpoints = {
        "gpt": gpt.endpoint(price=GPT_PRICE),
        "llama": llama.endpoint(price=LLAMA_PRICE),
    }
    matrix = {"endpoint": ["gpt", "llama"], "vars": {"greeting": ["prompts/formal.txt", "hi"]}}
    write_project(folder, endpoints=endpoints, defaults={"endpoint": "gpt"}, matrix=matrix, **more)
    write_spec(folder, "spec.yaml", SPEC)
    return endpoints


def run_matrix(folder: Path, *args: str) -> CliResult:
    """`run spec.yaml --matrix ARGS` in a fresh matrix project in `folder`, against the two agents."""
    with two_agents() as agents:
        write_matrix_project(folder, *agents)
        return run_cli(["run", "spec.yaml", "--matrix", *args], cwd=folder)
