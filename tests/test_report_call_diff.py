"""What changed in a regressed case's tool calls: one readable line per change, DeepDiff's traps avoided."""

from __future__ import annotations

from typing import Any

import pytest

from specengine.report.call_diff import call_changes
from specengine.results.decode import read_case


def case(status: str, *turns: list[dict[str, Any]]) -> dict[str, Any]:
    """A case with one trial whose turns made these tool calls."""
    transcript: list[dict[str, Any]] = []
    for calls in turns:
        transcript.append({"role": "user", "content": "hi"})
        transcript.append({"role": "assistant", "content": "ok", "tool_calls": calls})
    return {"status": status, "trials": [{"status": status, "transcript": transcript}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def changes(base_turns: list[list[dict[str, Any]]], head_turns: list[list[dict[str, Any]]]) -> list[str]:
    return [
        str(change)
        for change in call_changes(
            read_case(case("passed", *base_turns)), read_case(case("failed", *head_turns))
        )
    ]


@pytest.mark.parametrize(
    ("base", "head", "expected"),
    [
        pytest.param(
            [[call("get_weather", city="Paris")]],
            [[call("get_weather", city="paris")]],
            ['turn 1: get_weather args.city changed from "Paris" to "paris"'],
            id="argument changed",
        ),
        pytest.param(
            [[call("get_weather", city="Paris")], []],
            [[call("get_weather", city="Paris")], [call("book_table", people=2)]],
            ["turn 2: book_table call added"],
            id="call added",
        ),
        pytest.param(
            [[call("a"), call("b", x=1), call("c")]],
            [[call("a"), call("c")]],
            ["turn 1: b call removed"],
            id="call removed from the middle, not every later call renamed",
        ),
        pytest.param(
            [[call("get_weather", city="Paris")]],
            [[call("get_forecast", city="Paris")]],
            ["turn 1: get_weather call replaced by get_forecast"],
            id="call replaced",
        ),
        pytest.param(
            [[call("a"), call("b")]],
            [[call("b"), call("a")]],
            ["turn 1: calls in another order: a, b -> b, a"],
            id="order",
        ),
        pytest.param(
            [[call("f", days=3, hourly=True)]],
            [[call("f", days=3.0, hourly=1)]],
            ["turn 1: f args.hourly changed from true to 1"],
            id="1.0 is 1 but true is not 1",
        ),
        pytest.param(
            [[call("f", units="metric", city="Oslo")]],
            [[call("f", city="Oslo", wind=True)]],
            ['turn 1: f args.units removed (was "metric")', "turn 1: f args.wind added: true"],
            id="one of few keys changed is not the whole object",
        ),
        pytest.param(
            [[call("f", stops=[{"id": 1}])]],
            [[call("f", stops=[{"id": 1}, {"id": 2}])]],
            ['turn 1: f args.stops[1] added: {"id": 2}'],
            id="nested list",
        ),
        pytest.param(
            [[call("a")], [call("b")]],
            [[call("a")]],
            ["turn 2: b call removed"],
            id="turn missing in head",
        ),
        pytest.param(
            [[call("f", city="Oslo", days=2)]],
            [[call("f", days=2.0, city="Oslo")]],
            [],
            id="same calls",
        ),
    ],
)
def test_changes_are_worded_per_call_and_argument(base, head, expected):
    assert changes(base, head) == expected


def test_the_passed_base_trial_meets_the_failed_head_trial():
    def trial(status: str, n: int) -> dict[str, Any]:
        return case(status, [call("f", n=n)])["trials"][0]

    base = {"status": "passed", "trials": [trial("failed", 9), trial("passed", 1)]}
    head = {"status": "failed", "trials": [trial("passed", 1), trial("failed", 2)]}
    assert [str(change) for change in call_changes(read_case(base), read_case(head))] == [
        "turn 1: f args.n changed from 1 to 2"
    ]


def test_long_values_are_cut_short():
    [line] = changes([[call("f", text="a")]], [[call("f", text="b" * 500)]])
    assert line.startswith('turn 1: f args.text changed from "a" to "bbb')
    assert line.endswith("…") and len(line) < 120


def test_a_case_without_trials_has_no_changes():
    no_trials = (
        read_case({"id": "a.yaml::x", "status": "passed"}),
        read_case({"id": "a.yaml::x", "status": "error", "trials": []}),
    )
    assert call_changes(*no_trials) == ()
