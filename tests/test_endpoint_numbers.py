"""An endpoint's number settings as a matrix cell renders them: read, range-checked and worded
(source/endpoint_numbers.py), and declared as the endpoint schema declares them."""

from __future__ import annotations

import pytest

from specengine.plan import Cell
from specengine.source.endpoint_numbers import (
    NUMBER_SETTINGS,
    cell_number_problems,
    number_problems,
    rendered_problem,
    with_numbers,
)
from specengine.validation.schema import load_schema

SETTING = {setting.label: setting for setting in NUMBER_SETTINGS}


@pytest.mark.parametrize(
    ("label", "value", "read"),
    [
        ("timeout", 30, 30),
        ("timeout", 0.5, 0.5),
        ("timeout", "30", 30),
        ("timeout", " 2.5\n", 2.5),  # a file's text, with its newline
        ("timeout", "1e1", 10.0),
        ("timeout", 0, None),  # above 0
        ("timeout", "-1", None),
        ("timeout", "fast", None),
        ("timeout", "", None),
        ("timeout", "nan", None),
        ("timeout", "inf", None),
        ("timeout", True, None),
        ("timeout", None, None),
        ("timeout", [30], None),
        ("retries", 0, 0),  # 0 or more
        ("retries", "3", 3),
        ("retries", 2.0, 2),
        ("retries", "2.0", 2),
        ("retries", 2.5, None),
        ("retries", -1, None),
        ("max_concurrency", 1, 1),
        ("max_concurrency", 0, None),
        ("max_reply_bytes", "1e6", 1_000_000),
        ("price.input_per_million", 0, 0),
        ("price.output_per_million", "0.25", 0.25),
        ("price.output_per_million", -0.1, None),
    ],
)
def test_a_rendered_value_is_read_as_its_number_or_refused(label, value, read):
    got = SETTING[label].read(value)
    assert got == read
    assert type(got) is type(read)  # a whole setting is an int, not 2.0


def test_the_fix_says_the_kind_and_range_of_number_with_an_example():
    assert SETTING["timeout"].fix() == "write a number of seconds above 0, e.g. 30"
    assert SETTING["retries"].fix() == "write a whole number of retries, 0 or more, e.g. 2"
    assert SETTING["max_concurrency"].fix() == "write a whole number of requests in flight, 1 or more, e.g. 8"


def test_with_numbers_reads_text_and_leaves_the_rest():
    settings = {
        "timeout": "30",
        "retries": "x",
        "model": "7",
        "price": {"input_per_million": "2.5", "output_per_million": 1},
    }
    assert with_numbers(settings) == {
        "timeout": 30,
        "retries": "x",
        "model": "7",  # not a number setting
        "price": {"input_per_million": 2.5, "output_per_million": 1},
    }
    assert settings["price"]["input_per_million"] == "2.5"  # not changed in place
    assert [(setting.label, value) for setting, value in number_problems(settings)] == [("retries", "x")]


def test_a_problem_names_the_value_and_the_cell_or_says_a_cell_is_missing():
    timeout = SETTING["timeout"]
    assert rendered_problem(timeout, "fast", "agent-a · fast") == (
        'timeout renders to "fast" in cell agent-a · fast: write a number of seconds above 0, e.g. 30'
    )
    assert (
        rendered_problem(timeout, 0, "0")
        == "timeout renders to 0 in cell 0: write a number of seconds above 0, e.g. 30"
    )
    assert rendered_problem(timeout, "{{ vars.t }}", None) == (
        "timeout reads {{ vars.t }}, which only a matrix cell gives: run with --matrix, or write a number"
        " of seconds above 0, e.g. 30"
    )
    assert (
        rendered_problem(timeout, "x", None) == 'timeout is "x": write a number of seconds above 0, e.g. 30'
    )


def test_every_cell_is_rendered_and_a_wrong_value_named_once_with_its_first_cell():
    cells = [
        Cell(name=f"{t} · {r}", endpoint=None, vars={"t": t, "r": r}, shown={})
        for t in (5, "fast", 0)
        for r in ("1", "1.5")
    ]
    settings = {
        "timeout": "{{ vars.t }}",
        "retries": "{{ vars.r }}",
        "max_concurrency": 0,
        "model": "{{ vars.t }}",
    }
    assert list(cell_number_problems(settings, cells)) == [
        (
            ("retries",),
            'retries renders to "1.5" in cell 5 · 1.5: write a whole number of retries, 0 or more, e.g. 2',
        ),
        (
            ("timeout",),
            'timeout renders to "fast" in cell fast · 1: write a number of seconds above 0, e.g. 30',
        ),
        (("timeout",), "timeout renders to 0 in cell 0 · 1: write a number of seconds above 0, e.g. 30"),
    ]  # max_concurrency reads no var: the schema words it; model is no number setting
    assert list(cell_number_problems({"timeout": 30}, cells)) == []


def _numbers(schema, path=()):
    """(path, schema) of each number or integer in the endpoint schema's fields, and of each number
    setting's `else` branch (the number it takes when it is not a template)."""
    if not isinstance(schema, dict):
        return
    if "else" in schema and "then" in schema:
        yield path, schema["else"], schema["then"]
        return
    for key, sub in schema.get("properties", {}).items():
        yield from _numbers(sub, (*path, key))


def test_the_settings_are_the_schemas_numbers_with_its_ranges():
    fields = load_schema("endpoint")["$defs"]["fields"]
    found = {path: (branch, then) for path, branch, then in _numbers(fields)}
    assert set(found) == {setting.path for setting in NUMBER_SETTINGS}
    for setting in NUMBER_SETTINGS:
        branch, then = found[setting.path]
        assert then == {"$ref": "#/$defs/vars_number"}
        assert branch["type"] == ("integer" if setting.whole else "number")
        bound = "exclusiveMinimum" if setting.exclusive else "minimum"
        assert branch == {"type": branch["type"], bound: setting.minimum}
    # and no number setting is left typed as a plain number
    plain = [key for key, sub in fields["properties"].items() if sub.get("type") in ("number", "integer")]
    assert plain == []
