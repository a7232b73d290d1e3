"""`specengine run`'s command line read without typer (commands/run_argv.py) holds to typer's reading.

Whenever the fast reader accepts a command line, typer must build the same RunRequest from it; the
reader's table must name every option typer declares for `run`, as a switch or with a value alike;
and the command lines people write every day must not fall back to typer (or the reader buys
nothing).
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command
from typer.testing import CliRunner

from specengine.cli import app
from specengine.commands.run_argv import OPTIONS, read_run_argv
from specengine.run.session import RunRequest

RUN = get_command(app).commands["run"]  # type: ignore[attr-defined]


def typer_request(argv: list[str]) -> tuple[int, RunRequest | None]:
    """Typer's exit code for `run ARGV` and the request it would have run (None when it stopped)."""
    seen: list[RunRequest] = []

    def record(request: RunRequest) -> int:
        seen.append(request)
        return 0

    with mock.patch("specengine.run.session.execute_run", record):
        result = CliRunner().invoke(app, ["run", *argv], catch_exceptions=False)
    return result.exit_code, (seen[0] if seen else None)


def test_the_table_names_every_option_typer_declares() -> None:
    declared = {}
    for param in RUN.params:
        if param.param_type_name != "option" or param.name == "help":
            continue
        flags = frozenset(param.opts + param.secondary_opts)
        declared[flags] = (param.is_flag, param.multiple)
    table = {frozenset(option.flags): (option.read is None, option.repeatable) for option in OPTIONS}
    assert table == declared


EVERYDAY = [
    ["specs/"],
    ["specs/", "-j", "16"],
    ["bench.yaml", "--output", "out.json", "-j", "50"],
    ["specs/a.yaml::sunny in paris", "--label", "smoke", "--label", "fast", "-k", "paris"],
    ["specs/", "--html", "report.html", "--junit", "junit.xml", "--json", "--strict"],
    ["specs/", "--format", "github", "--min-pass-rate", "0.9", "--timeout", "30"],
    ["specs/", "--shard", "2/4", "--trials", "3", "--limit", "10", "--name", "nightly run"],
    ["specs/", "--output=out.json", "--concurrency=4", "--baseline", "last", "--no-cache"],
    ["specs/", "--project", "specengine.yaml", "--config", "ci", "--judge-model", "gpt-4o-mini"],
    ["specs/", "--rerun-failed", "last", "--resume", "--max-connection-failures", "0", "--require-judge"],
    ["specs/", "--md", "summary.md", "--github", "--judge-base-url", "http://127.0.0.1:9/v1"],
]


@pytest.mark.parametrize("argv", EVERYDAY, ids=" ".join)
def test_everyday_command_lines_are_read_as_typer_reads_them(argv: list[str]) -> None:
    fast = read_run_argv(argv)
    assert fast is not None, "the reader fell back to typer"
    assert typer_request(argv) == (0, fast)


@pytest.mark.parametrize(
    "argv",
    [
        [],  # typer: missing PATH
        ["specs/", "--help"],
        ["specs/", "-j", "0"],  # out of range: typer's message
        ["specs/", "-j", "08"],
        ["specs/", "-j8"],
        ["specs/", "--concurency", "8"],  # misspelt: typer's suggestion
        ["specs/", "--shard", "5/4"],
        ["specs/", "--format", "GitHub"],
        ["specs/", "--strict=yes"],
        ["specs/", "--name", "--strict"],
        ["specs/", "--", "-x"],
        ["specs/", "--output"],
        ["-"],
    ],
    ids=repr,
)
def test_anything_unusual_is_left_to_typer(argv: list[str]) -> None:
    assert read_run_argv(argv) is None


FLAGS = sorted({flag for option in OPTIONS for flag in option.flags} | {"--help", "--", "-x", "-j8"})
VALUES = [
    "0",
    "1",
    "3",
    "08",
    "-1",
    "1.5",
    "0.5",
    "0.0001",
    "1e3",
    "abc",
    "",
    " 2",
    "github",
    "GitHub",
    "text",
    "1/4",
    "4/4",
    "5/4",
    "out.json",
    "last",
    "-",
    "a b",
    "x\ty",
]
PATHS = ["specs/", "a.yaml::an eval", "b.yaml", "ünïcode.yaml"]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    argv: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["path", "option", "option=value", "value"]))
        if kind == "path":
            argv.append(draw(st.sampled_from(PATHS)))
        elif kind == "option":
            argv.append(draw(st.sampled_from(FLAGS)))
            if draw(st.booleans()):
                argv.append(draw(st.sampled_from(VALUES)))
        elif kind == "option=value":
            argv.append(f"{draw(st.sampled_from(FLAGS))}={draw(st.sampled_from(VALUES))}")
        else:
            argv.append(draw(st.sampled_from(VALUES)))
    return argv


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_whatever_the_reader_accepts_typer_reads_the_same(argv: list[str]) -> None:
    fast = read_run_argv(argv)
    if fast is not None:
        assert typer_request(argv) == (0, fast)
