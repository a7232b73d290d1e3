"""A results file read back: the run, its cases and their checks as typed, frozen values.

A run writes `CaseResult`s (model.py); every command that starts from a results file (report,
compare, merge, regrade, serve, the index, the GitHub comment, the pytest plugin, the Python API)
reads the file into these. A trial and its checks come back as the very `TrialResult` and
`CheckResult` the run wrote; a case comes back as `Case`, which holds what the results file keeps of
the plan's case (a plan cannot be rebuilt from a results file). Fields that older or hand-made files
lack are filled in once, in decode.py and decode_trials.py, so no reader of these values guesses at
a missing key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.results.decode_trials import (
    built,
    case_check_fields,
    check_marks,
    read_trial,
    trial_latencies,
    trials_latency,
)
from specengine.results.decode_trials import error_text as error_text  # where every report finds it
from specengine.results.model import CheckResult, Status, TrialResult, pass_rate
from specengine.transcript import SimulationEnd, ToolCall
from specengine.usage import TokenUsage

if TYPE_CHECKING:
    import pandas


_ALWAYS = frozenset(("name", "matcher", "line", "turn", "gate", "status", "score"))  # a CaseCheck's


@dataclass(frozen=True)
class CaseCheck:
    """One check of a case over its trials (the case's `checks`): the mean score over the trials
    that scored it, the status the case's pass rate gives it, a judge's spread across trials."""

    name: str
    matcher: str
    line: int
    turn: int
    gate: bool
    status: Status
    score: float | None
    spread: float | None = None
    uncertain: bool = False
    fingerprint: str | None = None  # of the check's definition, gate and threshold (results/definition.py)

    def as_dict(self) -> dict[str, Any]:
        """The check as the results file holds it: `spread`, `uncertain` and `fingerprint` when set."""
        data = asdict(self)
        return {
            key: value
            for key, value in data.items()
            if key in _ALWAYS or (value is not None and value is not False)
        }


@dataclass(frozen=True)
class JudgePin:
    """Who judged a judge check (a check's `judge`, read by decode.judge_pin): the named judge and its
    kind, the model, the prompt's hash and the autoevals version; temperature and seed when set."""

    name: str | None = None
    kind: str | None = None
    model: str | None = None
    prompt_hash: str | None = None
    autoevals: str | None = None
    temperature: Any = None
    seed: Any = None


@dataclass(frozen=True)
class Sample:
    """One sample of a judge check judged several times (decode.samples): what it chose, its score."""

    choice: str | None
    score: float | None


@dataclass(frozen=True)
class Message:
    """One message of a trial's transcript as transcript.py writes it: a user's (a simulated user's
    marked, with its step and the model that wrote it), an assistant's (its tool calls, error,
    timing, usage and state), or a reset that starts a new conversation. `messages(trial)` reads
    them (decode.py); regrade rebuilds the trial's turns from them (`turn_records`)."""

    role: str
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    simulated: bool = False
    simulator: str | None = None
    error: str | None = None
    latency_s: float | None = None
    ttft_s: float | None = None
    session_id: str | None = None
    step: int | None = None  # a simulated user's message: the index of its `simulate` step
    usage: TokenUsage | None = None  # an assistant's: the tokens its server reported
    state: Any = None  # an assistant's: the agent's state after the turn, when its protocol carries one


@dataclass(frozen=True)
class Case:
    """A case as its run finished it: where it is declared, its outcome, its trials and checks.

    `line` and a check's `line`/`turn` are 0 when a file does not say; `extra` keeps the keys this
    version does not know, so a file rewritten from these values (merge) keeps them. `trials` and
    `checks` are read from the file's lists when first asked for: a run of 100,000 cases loads in
    the time its JSON takes to parse, and a page that shows fifty cases builds fifty cases' trials.
    """

    id: str
    status: Status
    suite: str
    spec: str
    eval: str
    line: int
    labels: tuple[str, ...] = ()
    row: str | None = None
    index: int | None = None
    endpoint: str | None = None
    error: Mapping[str, str] | None = None
    passed_trials: int = 0
    n_trials: int = 0
    pass_at_k: bool = False
    pass_hat_k: bool = False
    cell: str | None = None
    row_line: int | None = None
    expected: Mapping[str, Any] | None = None
    skip_reason: str | None = None
    usage: TokenUsage | None = None
    simulation: SimulationEnd | None = None
    goal: str | None = None
    duration_s: float | None = None
    recorded: Mapping[str, Any] | None = None  # a `source:` eval's case: the conversation it graded
    fingerprint: str | None = None  # of what the case sends and how it passes (results/definition.py)
    extra: Mapping[str, Any] = field(default_factory=dict, repr=False)
    trial_data: Sequence[Mapping[str, Any]] = field(default=(), repr=False)  # the file's `trials`
    check_data: Sequence[Mapping[str, Any]] = field(default=(), repr=False)  # the file's `checks`

    @cached_property
    def trials(self) -> tuple[TrialResult, ...]:
        """The case's trials, in the order they ran."""
        return tuple(read_trial(trial) for trial in self.trial_data if isinstance(trial, dict))

    @cached_property
    def checks(self) -> tuple[CaseCheck, ...]:
        """The case's checks over its trials (a file without trials may hold only these)."""
        return tuple(
            built(CaseCheck, case_check_fields(check)) for check in self.check_data if isinstance(check, dict)
        )

    @cached_property
    def marks(self) -> frozenset[str]:
        """`uncertain` (some trial's check), `skipped` (some check), `soft failed` (a case's check):
        read without building the trials, so a report passes over a case with none of them cheaply."""
        return check_marks(self.trial_data, self.check_data)

    @property
    def title(self) -> str:
        """The eval name plus its row id (`sunny[paris]`), the short name a person recognises."""
        row = self.row
        return f"{self.eval}[{row}]" if row and f"[{row}]" not in self.eval else self.eval

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def elapsed_s(self) -> float:
        """Seconds spent on the case: its own duration when recorded, else its trials' latency summed."""
        if self.duration_s is not None:
            return self.duration_s
        return trials_latency(self.trial_data)  # without building the trials

    @property
    def trial_latencies(self) -> tuple[float, ...]:
        """Each trial's latency that its trial recorded, read without building the trials."""
        return trial_latencies(self.trial_data)

    @property
    def first_error(self) -> Mapping[str, str] | None:
        """The error of an errored case: its own, else its first trial's."""
        if self.error:
            return self.error
        return next((trial.error for trial in self.trials if trial.error), None)

    @property
    def why_skipped(self) -> str:
        """Why the case was skipped: its skip reason, else its error, else its skipped checks' reasons."""
        if self.skip_reason and self.skip_reason.strip():
            return self.skip_reason.strip()
        if self.error:
            return error_text(self.error)
        reasons: list[str] = []
        checks: Iterator[CheckResult | CaseCheck] = self.trial_checks() if self.trials else iter(self.checks)
        for check in checks:
            reason = getattr(check, "reason", "")
            if check.status == "skipped" and reason and reason not in reasons:
                reasons.append(reason)
        return "; ".join(reasons) or "skipped"

    def trial_checks(self) -> Iterator[CheckResult]:
        """Every check of every trial, in order."""
        for trial in self.trials:
            yield from trial.checks

    def as_dict(self) -> dict[str, Any]:
        """The case as the results file holds it (what `CaseResult.as_dict` wrote)."""
        data: dict[str, Any] = {"id": self.id}
        if self.index is not None:
            data["index"] = self.index
        data.update(suite=self.suite, spec=self.spec, eval=self.eval, line=self.line, row=self.row)
        data["labels"] = list(self.labels)
        if self.endpoint is not None:
            data["endpoint"] = self.endpoint
        data.update(
            status=self.status,
            error=dict(self.error) if self.error else None,
            passed_trials=self.passed_trials,
            n_trials=self.n_trials,
            pass_at_k=self.pass_at_k,
            pass_hat_k=self.pass_hat_k,
            trials=[trial.as_dict() for trial in self.trials],
            checks=[check.as_dict() for check in self.checks],
        )
        optional = (
            ("cell", self.cell),
            ("row_line", self.row_line),
            ("expected", dict(self.expected) if self.expected else None),
            ("skip_reason", self.skip_reason),
            ("usage", self.usage.as_dict() if self.usage is not None else None),
            ("simulation", self.simulation.as_dict() if self.simulation is not None else None),
            ("goal", self.goal),
            ("duration_s", self.duration_s),
            ("recorded", dict(self.recorded) if self.recorded is not None else None),
            ("fingerprint", self.fingerprint),
        )
        data.update((key, value) for key, value in optional if value is not None)
        data.update(self.extra)
        return data


@dataclass(frozen=True)
class Shard:
    """Which part of a split run a results file holds (`run --shard INDEX/COUNT`), and the plan it
    was cut from: shards merge only with shards of the same plan and split."""

    index: int
    count: int
    plan_hash: Any


@dataclass(frozen=True)
class Settings:
    """What a run was run with, as its header records it: the config chosen (`settings.config`; a
    top-level `config` in older files and in those the app rebuilds, JSON text when it is not text),
    the judge's model, and the git commit and branch; None each where the file does not say."""

    config: str | None = None
    judge_model: str | None = None
    commit: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class Price:
    """An endpoint's `price:` per million tokens, what a case's reported usage costs."""

    input_per_million: float
    output_per_million: float


@dataclass(frozen=True)
class Endpoint:
    """An endpoint the run's cases talked to, as its header names it (`endpoints`)."""

    name: str
    protocol: str
    url: str | None
    price: Price | None = None


@dataclass(frozen=True)
class CellFigures:
    """One cell's figures (a run without a matrix is one row, cell None): results/cells.py counts
    them as the run writes its cases, a summary keeps them in `cells`, budgets are held to them."""

    cell: str | None
    cases: int
    passed: int
    failed: int
    errored: int
    skipped: int
    pass_rate: float | None
    pass_rate_95: tuple[float, float] | None = None  # Wilson's 95% interval
    judge_score: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    usage: TokenUsage | None = None
    cost: float | None = None  # of the priced cases, when any
    priced_cases: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pass_rate_95"] = list(self.pass_rate_95) if self.pass_rate_95 else None
        for key, kept in (("usage", self.usage), ("cost", self.cost), ("priced_cases", self.cost)):
            if kept is None:
                del data[key]
        return data


@dataclass(frozen=True)
class BudgetOutcome:
    """A budget held to one cell's figures (results/budgets.py), kept in a summary like a check."""

    name: str
    limit: float
    cell: str | None
    value: float | None  # None when the figure could not be measured (status error)
    status: str  # passed, failed or error
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Summary:
    """A run's counts (a file's taken from its cases, so they always agree with them), what its
    judge and simulated users cost, its cells' figures and its budgets; `stored` is the summary as
    the file holds it. A count the file does not keep is None where 0 would say it was kept."""

    cases: int
    passed: int
    failed: int
    errored: int
    skipped: int
    gates_skipped: int = 0
    duration_s: float | None = None
    usage: TokenUsage | None = None
    cost: float | None = None
    judge_calls: int | None = None
    judge_cache_hits: int = 0
    judge_tokens: int = 0
    simulator_calls: int | None = None
    simulator_cache_hits: int = 0
    simulator_tokens: int = 0
    cells: tuple[CellFigures, ...] = ()
    budgets: tuple[BudgetOutcome, ...] = ()
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def broken_budgets(self) -> tuple[BudgetOutcome, ...]:
        """The budgets that did not pass: each fails the run."""
        return tuple(budget for budget in self.budgets if budget.status != "passed")

    @property
    def counts(self) -> dict[str, Any]:
        """The counts taken from the cases, by the names a results file's summary gives them."""
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "gates_skipped": self.gates_skipped,
            "duration_s": self.duration_s,
        }

    @property
    def pass_rate(self) -> float | None:
        """The rate `--min-pass-rate` gates on (model.py's rule); None if nothing ran."""
        return pass_rate(self.passed, self.failed, self.errored)


@dataclass(frozen=True)
class Run:
    """A results file: the run's id, start, name and summary, its cases in plan order, and what
    else its header says (`header`: settings, endpoints, git, matrix, selection, shard, budgets)."""

    run_id: str
    started_at: str | None
    name: str | None
    summary: Summary
    cases: tuple[Case, ...]
    header: Mapping[str, Any] = field(default_factory=dict, repr=False)
    path: Path | None = None  # the file it was read from (None for a run built in memory)

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def case(self, case_id: str) -> Case:
        """The case with this id; KeyError names it when the run has none."""
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    @property
    def pass_rate(self) -> float | None:
        return self.summary.pass_rate

    @property
    def failed(self) -> tuple[Case, ...]:
        """The cases that failed or errored, in plan order."""
        return tuple(case for case in self.cases if case.status in ("failed", "error"))

    def as_dict(self) -> dict[str, Any]:
        """The run as its results file holds it (the summary as stored)."""
        data: dict[str, Any] = {"run_id": self.run_id, "started_at": self.started_at}
        if self.name is not None:
            data["name"] = self.name
        data.update(self.header)
        data["summary"] = dict(self.summary.stored)
        data["cases"] = [case.as_dict() for case in self.cases]
        return data

    def to_pandas(self) -> pandas.DataFrame:
        """One row per case (id, eval, status, trials, latency, tokens, why it did not pass); needs
        pandas, which specengine does not install."""
        from specengine.results.tables import data_frame

        return data_frame(self)

    def _repr_html_(self) -> str:
        """A notebook shows a run as its summary and a table of its cases (agent text escaped)."""
        from specengine.results.tables import run_html

        return run_html(self)
