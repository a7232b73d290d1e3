"""Every class given a fast __init__ builds the same object as dataclasses' own __init__ would, and
refuses the same calls."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest

import specengine.plan
import specengine.results.model
import specengine.transport.http1  # noqa: F401 - the modules whose classes register
from specengine.fast_init import DECORATED, fast_init
from specengine.grade import match_result, wanted_call  # noqa: F401
from specengine.transcript import ToolCall, Turn


def build(init: Any, cls: type, *args: Any, **kwargs: Any) -> Any:
    made = object.__new__(cls)
    init(made, *args, **kwargs)
    return made


def outcome(init: Any, cls: type, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("made", vars(build(init, cls, *args, **kwargs)))
    except TypeError as exc:
        return ("refused", str(exc).split("() ", 1)[-1])  # the message past the function's name


def calls_for(cls: type) -> list[tuple[tuple, dict]]:
    """Calls to try: every init field given by keyword, then positionally, the required ones only,
    one missing, one unknown, one too many."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    required = [
        f for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    values = {f.name: f"value of {f.name}" for f in fields}
    positional = [values[f.name] for f in fields if not f.kw_only]
    keyword_only = {f.name: values[f.name] for f in fields if f.kw_only}
    calls: list[tuple[tuple, dict]] = [
        ((), values),
        (tuple(positional), keyword_only),
        ((), {f.name: values[f.name] for f in required}),
        ((), {"surprise": 1, **values}),
        ((*positional, "one too many"), keyword_only),
    ]
    if required:
        calls.append(((), {f.name: values[f.name] for f in required[1:]}))
    return calls


@pytest.mark.parametrize("cls", DECORATED, ids=lambda cls: cls.__qualname__)
def test_a_fast_init_makes_what_the_dataclass_init_makes(cls: type) -> None:
    for args, kwargs in calls_for(cls):
        fast = outcome(cls.__init__, cls, *args, **kwargs)
        slow = outcome(cls.__dataclass_init__, cls, *args, **kwargs)  # type: ignore[attr-defined]
        assert fast == slow, (args, kwargs)


def test_the_classes_a_case_makes_are_decorated() -> None:
    names = {cls.__qualname__ for cls in DECORATED}
    assert {"CheckResult", "TrialResult", "CaseResult", "MatchResult", "Turn", "ToolCall", "Case"} <= names


def test_an_object_stays_frozen_comparable_replaceable_and_picklable() -> None:
    turn = Turn(reply="hi", tool_calls=(ToolCall("get_weather", {"city": "Paris"}),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.reply = "changed"  # type: ignore[misc]
    assert turn == Turn(reply="hi", tool_calls=(ToolCall("get_weather", {"city": "Paris"}),))
    assert dataclasses.replace(turn, reply="other").tool_calls == turn.tool_calls
    assert pickle.loads(pickle.dumps(turn)) == turn
    assert hash(ToolCall("x", id="1", args=())) == hash(ToolCall("x", id="1", args=()))


def test_a_default_factory_gives_each_object_its_own_value() -> None:
    first, second = ToolCall("a"), ToolCall("b")
    assert first.args == {} and first.args is not second.args


def test_what_it_does_not_cover_is_refused_at_once() -> None:
    @dataclass
    class NotFrozen:
        x: int

    @dataclass(frozen=True)
    class WithPostInit:
        x: int

        def __post_init__(self) -> None:
            pass

    for cls in (NotFrozen, WithPostInit):
        with pytest.raises(TypeError):
            fast_init(cls)


def test_fields_outside_init_and_keyword_only_fields_are_covered() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Keyworded:
        a: int
        b: list = field(default_factory=list)
        c: int = field(default=3, init=False)

    before = len(DECORATED)
    fast_init(Keyworded)
    DECORATED.pop(before)  # keep the registry to the project's classes
    made = Keyworded(a=1)
    assert (made.a, made.b, made.c) == (1, [], 3)
    for args, kwargs in calls_for(Keyworded):
        assert outcome(Keyworded.__init__, Keyworded, *args, **kwargs) == outcome(
            Keyworded.__dataclass_init__,
            Keyworded,
            *args,
            **kwargs,  # type: ignore[attr-defined]
        )
