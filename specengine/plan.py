"""The eval plan: plain frozen data that says what will be sent, where, and what will be checked.

The compiler builds it from valid specs; the runner executes it; `specengine plan` prints it. Every
object carries its source position so that a failed check points at its YAML line. Cases are
produced lazily (`Plan.cases()`), so a dataset of 100,000 rows never sits in memory at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from specengine.transcript import TurnRecord

Scope = Literal["turn", "conversation"]


@dataclass(frozen=True)
class Source:
    """A position in a spec file (1-based line and column)."""

    path: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Threshold:
    """The range a score must fall in to pass: `op` is one of gte, gt, lte, lt."""

    op: str
    value: float

    def passes(self, score: float) -> bool:
        if self.op == "gte":
            return score >= self.value
        if self.op == "gt":
            return score > self.value
        if self.op == "lte":
            return score <= self.value
        return score < self.value

    def as_dict(self) -> dict[str, float]:
        return {self.op: self.value}

    def __str__(self) -> str:
        symbol = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<"}[self.op]
        return f"{symbol} {self.value:g}"


PASS_AT_ONE = Threshold("gte", 1.0)
JUDGE_DEFAULT = Threshold("gte", 0.5)


@dataclass(frozen=True)
class JudgeExample:
    """A reply graded before, shown to the judge ahead of the one it grades (a few-shot example).

    The verdict is a `choice` of the judge, or a `score` that names the choices scoring it. The texts
    are plain text, never templates: an example is the same for every case.
    """

    output: str
    choice: str | None = None
    score: float | None = None
    input: str | None = None
    expected: str | None = None
    why: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields that are set, in the order the spec writes them."""
        fields = {
            "input": self.input,
            "output": self.output,
            "expected": self.expected,
            "choice": self.choice,
            "score": self.score,
            "why": self.why,
        }
        return {name: value for name, value in fields.items() if value is not None}


@dataclass(frozen=True)
class JudgeSpec:
    """What a judge check asks, as written: the kind, its rubric (templates unrendered), examples.

    `kind` is one of judge.kinds.KINDS: closed_qa, factuality, custom, or a conversation judge
    (goal_completed with `goal`, role_adherence with `role`, …). With `judge: NAME` the rubric,
    model, samples and examples come from the named judge of the project file (`name`), the check's
    own examples added after its. `samples` None means the project's `judge.samples`; `model` None
    means the run's judge model.
    """

    kind: str
    criteria: Any = None
    expected: Any = None
    prompt: Any = None
    choices: Mapping[str, float] | None = None
    examples: tuple[JudgeExample, ...] = ()
    samples: int | None = None
    model: str | None = None
    name: str | None = None
    goal: Any = None  # goal_completed: what the user wanted (None: the case's goal)
    role: Any = None  # role_adherence: the role the agent must keep


@dataclass(frozen=True)
class Check:
    """One check of a turn's reply: a matcher with its (unrendered) argument and modifiers.

    `argument` and `options` hold template strings exactly as written; they render per case at grade
    time, when `reply`, `tool_calls` and the rest are known. `options` are the matcher's own (`times`
    of called_tool, `mode` of tool_calls_in_order); a judge check's rubric is its `judge`.
    """

    matcher: str
    argument: Any
    name: str
    source: Source
    gate: bool = True
    threshold: Threshold = PASS_AT_ONE
    negate: bool = False
    scope: Scope = "turn"
    value: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    named: bool = False  # `name` is final: set in the spec, or made from an argument with no template
    is_judge: bool = False  # scored by the judge model, not by a deterministic matcher
    judge: JudgeSpec | None = None  # set exactly when is_judge


DEFAULT_MAX_TURNS = 10  # a simulated user's messages at most, unless `max_turns` says otherwise


@dataclass(frozen=True)
class Simulation:
    """A `simulate:` step as a case runs it: who the simulated user is and what they want (rendered
    for the case's row), the opening sent as written, how many messages they may send, and which
    simulator plays them (`simulator` None: the project's `simulator:`; else a named one)."""

    user: str
    goal: str
    first_message: str | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    simulator: str | None = None


@dataclass(frozen=True)
class Step:
    """A turn to send (with its checks), a `reset` that opens a new conversation, or a `simulate`
    step whose messages a simulated user writes as the conversation goes (its checks read the
    simulated part's last turn; `scope: conversation` all of it)."""

    kind: Literal["send", "reset", "simulate"]
    message: str = ""
    checks: tuple[Check, ...] = ()
    source: Source | None = None
    simulation: Simulation | None = None  # set exactly when kind is "simulate"


DEFAULT_MAX_REPLY_BYTES = 10_000_000


class RequestAuth(Protocol):
    """Credentials that sign every request of an endpoint or the judge (`auth: databricks`): fresh
    headers for each one, since tokens expire (specengine.databricks_auth.DatabricksAuth)."""

    def headers(self) -> dict[str, str]: ...

    def token(self) -> str: ...

    async def bearer_token(self) -> str: ...

    def url(self, value: str | None, default_path: str = "") -> str: ...

    def describe(self) -> str: ...

    @property
    def secrets(self) -> frozenset[str]: ...


@dataclass(frozen=True)
class EndpointConfig:
    """A resolved endpoint: protocol, URL and options. `secrets` holds values read from ${VAR} and
    the credentials of `auth`, which signs each request when the endpoint says `auth: databricks`."""

    name: str
    protocol: str
    url: str | None = None
    model: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    max_concurrency: int = 8
    timeout: float = 60.0
    retries: int = 2
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # the most of one answer's body that is read
    options: Mapping[str, Any] = field(default_factory=dict)
    secrets: frozenset[str] = frozenset()
    auth: RequestAuth | None = field(default=None, compare=False, repr=False)
    # a matrix cell's own settings of a project endpoint: the endpoint whose max_concurrency it shares
    pool: str | None = None
    price: Mapping[str, float] | None = None  # `price:` per million input and output tokens
    # where each option is written (`specengine.yaml:9:12`), for errors a file's author must fix
    places: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Cell:
    """One combination of a matrix's values: the endpoint every case of it talks to (None: each
    case's own) and the `vars` its templates and endpoint settings read. `shown` is each var as the
    cell's name shows it (a file's stem for a file's text)."""

    name: str
    endpoint: str | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    shown: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The cell as results files describe it: `vars` as its name shows them, `values` as
        templates read them (so `regrade` renders its checks as the run did)."""
        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "vars": dict(self.shown),
            "values": dict(self.vars),
        }


@dataclass(frozen=True)
class Recording:
    """Where a recorded case's conversation was read (a `source:` eval): the source, the
    conversation's id, its traces (`turn_traces`: each turn's), the file, the link to each trace
    (`trace_url` with `{trace_id}`), and its turns as they happened. `problem` says why a trace
    could not be read (the case is then skipped with it). Such a case sends nothing: its turns are
    graded as recorded."""

    source: str
    conversation: str
    trace_ids: tuple[str, ...] = ()
    file: str | None = None
    turns: tuple[TurnRecord, ...] = field(default=(), repr=False)
    turn_traces: tuple[str | None, ...] = ()
    trace_url: str | None = None
    started: str | None = None
    shard_key: str | None = None  # the conversation's key, which `--shard` splits a source by

    def as_dict(self) -> dict[str, Any]:
        """What a results file says of it (`recorded`), for reports and the case page's links."""
        data: dict[str, Any] = {
            "source": self.source,
            "conversation": self.conversation,
            "trace_ids": list(self.trace_ids),
            "turn_traces": list(self.turn_traces),
        }
        if self.file is not None:
            data["file"] = self.file
        if self.trace_url is not None:
            data["trace_url"] = self.trace_url
        if self.started is not None:
            data["started"] = self.started
        return data


@dataclass(frozen=True)
class Case:
    """One runnable case: an eval, or an eval × one dataset row, with everything rendered but checks."""

    id: str
    index: int
    suite: str
    spec: str
    eval_name: str
    line: int
    endpoint: str
    steps: tuple[Step, ...]
    variables: Mapping[str, Any]
    labels: tuple[str, ...] = ()
    row: str | None = None
    row_line: int | None = None
    trials: int = 1
    pass_rate: float = 1.0
    timeout: float = 60.0
    skip: str | None = None
    goal: str | None = None  # what the user wants: the rendered `simulate.goal`, for goal judges
    cell: str | None = None  # the matrix cell the case runs in; its id ends with ` @ <cell>`
    recording: Recording | None = None  # a `source:` eval's case: the recorded conversation it grades
    tools: Mapping[str, Any] = field(default_factory=dict)  # the eval's `tools:`: results replaced

    @property
    def shard_key(self) -> str:
        """What `--shard` splits by: a recorded conversation's key, so that a source is split by
        conversation and its reader can drop other shards' conversations before decoding them;
        else the case id."""
        if self.recording is not None and self.recording.shard_key is not None:
            return self.recording.shard_key
        return self.id

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(check for step in self.steps for check in step.checks)

    @property
    def simulations(self) -> tuple[Simulation, ...]:
        """The case's `simulate:` steps (most cases have none)."""
        return tuple(step.simulation for step in self.steps if step.simulation is not None)


@dataclass(frozen=True)
class JudgeConfig:
    """The judge model named in the project file or on the command line; None model = no judge.

    `secrets` holds values read from ${VAR} in the project's `judge:` block (never written anywhere).
    `auth` replaces the key of `api_key_env` when the block says `auth: databricks`: it signs in when
    the judge is first needed (its preflight), and `base_url` is then a path on the workspace (default
    `/serving-endpoints`) or a whole URL.
    """

    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    max_concurrency: int = 4
    timeout: float = 60.0
    retries: int = 2
    samples: int = 1  # judge calls per judge check, unless the check or its named judge says otherwise
    temperature: float = 0.0  # sent with every request: a server's own default (often 0.8) flips verdicts
    seed: int | None = None  # sent when set, for servers that honour it
    secrets: frozenset[str] = frozenset()
    auth: RequestAuth | None = field(default=None, compare=False, repr=False)

    role: ClassVar[str] = "judge"  # how messages name the model (the simulator says "simulator")


@dataclass(frozen=True)
class SimulatorConfig(JudgeConfig):
    """The model that plays simulated users (`simulator:` in the project file, `--simulator-model`,
    or a named one under `simulators:`): configured like the judge, and called through the judge's
    client (the same transport, key rules and retry policy). None model = no simulator. `name` is
    the named simulator's name (None for the project's `simulator:`)."""

    role: ClassVar[str] = "simulator"
    name: str | None = None
    demo: bool = False  # `demo: true`: the demo agent's simulated user, served with it for the run


@dataclass(frozen=True)
class Plan:
    """Everything a run needs: endpoints, judge settings, and a factory that streams the cases.

    `simulators` holds the project's simulator under the key None and each named one by its name.
    """

    endpoints: Mapping[str, EndpointConfig]
    judge: JudgeConfig
    case_factory: Callable[[], Iterator[Case]] = field(repr=False, compare=False)
    specs: tuple[str, ...] = ()
    simulators: Mapping[str | None, SimulatorConfig] = field(default_factory=dict)

    cells: tuple[Cell, ...] = ()  # a matrix run's cells, in order; empty for a plain run

    def cases(self) -> Iterator[Case]:
        """Cases in plan order; datasets are re-read on each call, so memory stays flat."""
        return self.case_factory()
