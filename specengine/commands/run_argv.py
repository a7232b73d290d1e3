"""`specengine run`'s command line read without typer, when it is plainly well formed.

Importing typer and building the pydantic validators it checks each option with takes longer than
a one-case run's request (bench/run_bench.py, start-up). So entry.py hands `run`'s arguments here
first. This reader takes only what it is sure of: paths, the options `run --help` lists, each once
or repeated, as `--option value` or `--option=value`, with values typer would accept and read the
same way. Anything else (`--help`, an unknown or misspelt option, a value out of range or in an
unusual spelling, `--`, shell completion) returns None, and typer reads the command line as always,
with its own messages. tests/test_run_argv.py holds both readers to the same RunRequest on generated
command lines, and this table to typer's declaration of the command.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.report.formats import FORMATS, ReportRequest, report_request

if TYPE_CHECKING:
    from specengine.run.session import RunRequest


class RunFormat(str, Enum):
    """--format: a typo must be an error, not a run that silently prints no annotations."""

    text = "text"
    github = "github"


def run_request(
    paths: Sequence[str],
    *,
    reports: ReportRequest = ReportRequest(),
    concurrency: int = 8,
    label: Sequence[str] | None = None,
    keyword: str | None = None,
    limit: int | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    strict: bool = False,
    config: str | None = None,
    project: Path | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    no_cache: bool = False,
    require_judge: bool = False,
    output: Path | None = None,
    baseline: Path | None = None,
    output_format: RunFormat = RunFormat.text,
    shard: tuple[int, int] | None = None,
    resume: bool = False,
    rerun_failed: Path | None = None,
    min_pass_rate: float | None = None,
    name: str | None = None,
    max_connection_failures: int = 5,
) -> RunRequest:
    """What `run` was asked to do, from its options (keyword names as `run_command`'s parameters;
    `shard` already read by parse_shard)."""
    from specengine.run.prepare import PrepareOptions
    from specengine.run.recording import SessionOptions
    from specengine.run.session import RunRequest

    return RunRequest(
        paths=tuple(paths),
        prepare=PrepareOptions(
            project=project,
            config=config,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            trials=trials,
            timeout=timeout,
            labels=tuple(label or ()),
            keyword=keyword,
            limit=limit,
            shard=shard,
        ),
        options=SessionOptions(
            reports=reports.adding("github") if output_format is RunFormat.github else reports,
            concurrency=concurrency,
            strict=strict,
            output=output,
            min_pass_rate=min_pass_rate,
            use_cache=not no_cache,
            require_judge=require_judge,
        ),
        resume=resume,
        rerun_failed=rerun_failed,
        baseline=baseline,
        name=name,
        connection_failures=max_connection_failures,
    )


# --- reading values as typer would, or not at all ------------------------------------------------


class _Unsure(Exception):
    """A value or option this reader leaves to typer."""


_WHOLE_NUMBER = re.compile(r"0|[1-9][0-9]{0,17}")
_DECIMAL = re.compile(r"[0-9]{1,18}(?:\.[0-9]{1,18})?")


def _text(value: str) -> str:
    return value


def _path(value: str) -> Path:
    if not value:
        raise _Unsure
    return Path(value)


def _number(low: float | None = None, high: float | None = None, whole: bool = True) -> Callable[[str], Any]:
    """A reader of plainly written numbers within [low, high]; typer words every other case."""

    def read(value: str) -> int | float:
        if not (_WHOLE_NUMBER if whole else _DECIMAL).fullmatch(value):
            raise _Unsure
        number = int(value) if whole else float(value)
        if (low is not None and number < low) or (high is not None and number > high):
            raise _Unsure
        return number

    return read


def _run_format(value: str) -> RunFormat:
    try:
        return RunFormat(value)
    except ValueError:
        raise _Unsure from None


def _shard(value: str) -> tuple[int, int]:
    from specengine.run.select import parse_shard

    try:
        return parse_shard(value)
    except ValueError:  # typer's path prints the error
        raise _Unsure from None


@dataclass(frozen=True)
class _Option:
    """One option of `run`: its flags, the keyword of run_request (or of the report options) it sets,
    and how its value is read (None: a switch)."""

    flags: tuple[str, ...]
    keyword: str
    read: Callable[[str], Any] | None
    repeatable: bool = False
    report: bool = False  # one of the report formats' options, gathered into `reports`


OPTIONS: tuple[_Option, ...] = (
    _Option(("-j", "--concurrency"), "concurrency", _number(low=1)),
    _Option(("--label",), "label", _text, repeatable=True),
    _Option(("-k",), "keyword", _text),
    _Option(("--limit",), "limit", _number(low=1)),
    _Option(("--trials",), "trials", _number(low=1)),
    _Option(("--timeout",), "timeout", _number(low=0.001, whole=False)),
    _Option(("--strict",), "strict", None),
    _Option(("--config",), "config", _text),
    _Option(("--project",), "project", _path),
    _Option(("--judge-model",), "judge_model", _text),
    _Option(("--judge-base-url",), "judge_base_url", _text),
    _Option(("--no-cache",), "no_cache", None),
    _Option(("--require-judge",), "require_judge", None),
    _Option(("--output", "-o"), "output", _path),
    *(
        _Option(
            (report.option.flag,),
            report.option.parameter,
            None if report.option.metavar is None else _text if report.option.text else _path,
            report=True,
        )
        for report in FORMATS
        if report.option is not None
    ),
    _Option(("--baseline",), "baseline", _path),
    _Option(("--format",), "output_format", _run_format),
    _Option(("--shard",), "shard", _shard),
    _Option(("--resume",), "resume", None),
    _Option(("--rerun-failed",), "rerun_failed", _path),
    _Option(("--min-pass-rate",), "min_pass_rate", _number(low=0.0, high=1.0, whole=False)),
    _Option(("--name",), "name", _text),
    _Option(("--max-connection-failures",), "max_connection_failures", _number(low=0)),
)
_BY_FLAG: Mapping[str, _Option] = {flag: option for option in OPTIONS for flag in option.flags}


def _plain(token: str) -> bool:
    """A token whose reading cannot depend on the parser: printable, no option look-alike as a value."""
    return token.isprintable() and not token.startswith("-")


def read_run_argv(argv: Sequence[str]) -> RunRequest | None:
    """The request `run ARGV` makes, or None when typer should read the command line."""
    values: dict[str, Any] = {}
    reports: dict[str, Any] = {}
    paths: list[str] = []
    tokens = iter(argv)
    try:
        for token in tokens:
            if _plain(token):
                paths.append(token)
                continue
            flag, equals, attached = token.partition("=")
            option = _BY_FLAG.get(flag)
            if option is None:
                return None
            if option.read is None:  # a switch takes no value
                if equals:
                    return None
                value: Any = True
            else:
                given = attached if equals else next(tokens, None)
                if given is None or not _plain(given) or (equals and not flag.startswith("--")):
                    return None
                value = option.read(given)
            target = reports if option.report else values
            if option.repeatable:
                target.setdefault(option.keyword, []).append(value)
            else:
                target[option.keyword] = value
    except _Unsure:
        return None
    if not paths:
        return None
    return run_request(paths, reports=report_request(reports), **values)


def _completing() -> bool:
    """The shell is asking for completions (typer answers those)."""
    return any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ)


def run_without_typer(argv: Sequence[str]) -> None:
    """Run `specengine run ARGV` and exit as typer would, when this reader is sure of ARGV; else
    return, for typer to read it."""
    request = None if _completing() else read_run_argv(argv)
    if request is None:
        return
    from specengine.run.session import execute_run

    try:
        code = execute_run(request)
    except KeyboardInterrupt:  # as typer: Ctrl-C before the run's own handler is installed
        sys.exit(130)
    except EOFError:
        print(file=sys.stderr)
        print("Aborted!", file=sys.stderr)
        sys.exit(1)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _silence_stdout()
        sys.exit(1)
    sys.exit(code)


def _silence_stdout() -> None:
    """After a closed pipe (`specengine run … | head`) nothing more can be shown, and the flush at
    exit must not complain about it: stdout goes to the null device, as typer's reader also makes
    sure."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
