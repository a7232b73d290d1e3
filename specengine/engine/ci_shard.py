"""`--shard auto` and `--shard auto/N`: the share of the cases a parallel CI job runs, read from the
variables its CI engine sets, so a job definition needs no index arithmetic of its own.

Each engine numbers its jobs its own way: GitLab from 1, CircleCI, Buildkite and a Kubernetes
Indexed Job from 0; a Kubernetes pod is told its index but not the Job's completions, which
`auto/N` gives. The first engine whose variables are set wins, and the command says which it used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from specengine.engine.select import parse_shard


@dataclass(frozen=True)
class Engine:
    """A CI engine's parallel-job variables: the index's variable and whether it counts from 1."""

    name: str
    index: str
    total: str | None  # None: the engine does not say (a Kubernetes Job), auto/N must
    from_one: bool = False


ENGINES = (
    Engine("GitLab CI", "CI_NODE_INDEX", "CI_NODE_TOTAL", from_one=True),
    Engine("CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL"),
    Engine("Buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT"),
    Engine("a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", None),
)


@dataclass(frozen=True)
class ShardChoice:
    """Share `index` of `count` (1-based), and where it came from (`None`: written out as i/n)."""

    index: int
    count: int
    source: str | None = None

    @property
    def share(self) -> tuple[int, int]:
        return self.index, self.count

    def said(self) -> str:
        """The line a run prints about it."""
        return f"shard {self.index}/{self.count} from {self.source}" if self.source else ""


def choose_shard(text: str, environ: Mapping[str, str]) -> ShardChoice:
    """`i/n` as written, or `auto` / `auto/N` from the environment; ValueError in plain words."""
    head, _, total = text.strip().partition("/")
    if head.strip().lower() != "auto":
        return ShardChoice(*parse_shard(text))
    given = None
    if total:
        if not total.strip().isdigit() or int(total) < 1:
            raise ValueError(f"--shard auto/N: N is the number of shards, e.g. auto/4 (got {text!r})")
        given = int(total)
    for engine in ENGINES:
        raw_index = environ.get(engine.index, "").strip()
        raw_total = environ.get(engine.total, "").strip() if engine.total else ""
        if raw_index or raw_total:
            return _from_engine(engine, raw_index, raw_total, given)
    names = ", ".join(
        f"{engine.name} ({engine.index}{' and ' + engine.total if engine.total else ''})"
        for engine in ENGINES
    )
    raise ValueError(f"--shard {text}: no CI engine's parallel-job variables are set; looked for {names}")


def _from_engine(engine: Engine, raw_index: str, raw_total: str, given: int | None) -> ShardChoice:
    if engine.total is None:
        if given is None:
            raise ValueError(
                f"--shard auto: {engine.name} gives {engine.index} but not the number of shards; "
                f"use --shard auto/N with N the Job's completions"
            )
        raw_total = str(given)
    if raw_index == "" and raw_total == "1":  # GitLab without parallel: says the total, 1
        raw_index = "1" if engine.from_one else "0"
    for name, raw in ((engine.index, raw_index), (engine.total or "auto/N", raw_total)):
        if not raw.isdigit():
            raise ValueError(f"--shard auto: {engine.name}'s {name} is {raw!r}, not a whole number")
    index, count = int(raw_index) + (0 if engine.from_one else 1), int(raw_total)
    if given is not None and given != count:
        raise ValueError(f"--shard auto/{given}: {engine.name} runs {count} jobs ({engine.total}={count})")
    if count < 1 or not 1 <= index <= count:
        raise ValueError(
            f"--shard auto: {engine.name}'s {engine.index}={raw_index} does not fit {count} shards"
        )
    total_text = f"{engine.total}={raw_total}" if engine.total else f"auto/{raw_total}"
    return ShardChoice(index, count, f"{engine.name} ({engine.index}={raw_index}, {total_text})")
