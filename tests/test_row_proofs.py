"""validate's row proofs (validation.row_checks) held to the renderer the run uses.

A text-and-lookups template is proven by looking its keys up in each row instead of rendering it
(bench/validate_dataset_bench.py shows what that buys); any other template is rendered when a key
it reads is missing. Generated rows and templates check that a template fails a row's proof exactly
when templates.render fails with that row's values over the eval's, and that a CSV file's rows (the
same keys, text values: proven from one row) count the same as when each row is proven.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from specengine.errors import TemplateError
from specengine.source.loader import parse_yaml
from specengine.templates import render
from specengine.validation.file_report import Report
from specengine.validation.row_checks import EvalProver, EvalTemplates, TemplateUse
from specengine.validation.row_messages import gap_message

ROOTS = ("input", "expected", "metadata")
_keys = st.sampled_from(["city", "items", "n", "get", "upper", "_x", "0"])
_leaf = st.one_of(st.text(alphabet="ab", max_size=2), st.integers(-2, 2), st.none(), st.booleans())
_values = st.recursive(
    _leaf,
    lambda inner: st.dictionaries(_keys, inner, max_size=3) | st.lists(inner, max_size=2),
    max_leaves=6,
)
_mappings = st.dictionaries(_keys, _values, max_size=3)
_rows = st.fixed_dictionaries({}, optional={root: _mappings for root in ROOTS})
_bases = st.fixed_dictionaries({root: _mappings for root in ROOTS})


@st.composite
def _lookup(draw: st.DrawFn) -> str:
    """`input.city`, `expected['items'][0].n`: a lookup into a row variable, in Jinja2's spellings."""
    text = draw(st.sampled_from(ROOTS))
    for _ in range(draw(st.integers(1, 3))):
        way = draw(st.sampled_from(["dot", "item", "index"]))
        if way == "dot":
            text += f".{draw(_keys.filter(str.isidentifier))}"
        elif way == "item":
            text += f"['{draw(_keys)}']"
        else:
            text += f"[{draw(st.integers(-1, 1))}]"
    return text


@st.composite
def _templates(draw: st.DrawFn) -> str:
    """Text-and-lookups templates, and templates with filters and conditions around lookups."""
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        lookup = draw(_lookup())
        form = draw(
            st.sampled_from(
                [
                    "{{ %s }}",
                    "{{ %s | default('-') }}",
                    "{{ %s | string }}",
                    "{%% if %s is defined %%}x{%% endif %%}",
                    "{{ %s is defined }}",
                ]
            )
        )
        parts.append(draw(st.sampled_from(["", "Total: ", " "])) + form % lookup)
    return "".join(parts)


REPORT = Report(parse_yaml("send: x\n", "s.yaml"), "send: x\n")


def _prover(text: str, base: dict) -> EvalProver:
    use = TemplateUse(text, REPORT, ("send",), "send")
    return EvalProver(EvalTemplates("e", REPORT, (), base, [use]))


def _renders(text: str, base: dict, row: dict) -> bool:
    variables = {root: {**base[root], **(row.get(root) or {})} for root in ROOTS}
    try:
        render(text, variables)
    except TemplateError:
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(text=_templates(), base=_bases, row=_rows)
@example(  # after 'ab' (whose [1] is 'b') rendered, a render with '' was taken as remembered
    text="{{ expected['get'][1].get | default('-') }}",
    base={"input": {}, "expected": {"city": None, "get": ""}, "metadata": {}},
    row={},
)
def test_a_template_fails_its_proof_exactly_when_it_fails_to_render(text, base, row):
    prover = _prover(text, base)
    prover.check(row, 2)
    assert (not prover.failures) == _renders(text, base, row), (text, base, row, prover.failures)


def test_a_text_is_indexed_as_jinja2_indexes_it_so_a_remembered_render_is_not_taken_for_another():
    text = "{{ expected.word[1].get | default('-') }}"
    worded = {"input": {}, "expected": {"word": "ab"}, "metadata": {}}
    short = {"input": {}, "expected": {"word": "a"}, "metadata": {}}
    assert _renders(text, worded, {}) and not _renders(text, short, {})
    first, second = _prover(text, worded), _prover(text, short)
    first.check({}, 2)
    second.check({}, 2)
    assert not first.failures
    assert [failure.path for failure in second.failures.values()] == [("expected", "word", 1, "get")]
    (failure,) = second.failures.values()
    assert gap_message(failure.path, failure.gap) == (
        "undefined variable expected.word[1]: expected.word is a text of 1, it has no item 1"
    )


_csv_values = st.dictionaries(_keys, st.text(alphabet="ab1", max_size=2), max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    text=_templates(),
    base=_bases,
    columns=st.fixed_dictionaries({}, optional={root: _csv_values for root in ROOTS}),
    count=st.integers(1, 4),
)
def test_rows_of_the_same_keys_and_text_values_are_proven_from_one(text, base, columns, count):
    rows = [
        {root: {key: f"{value}{n}" for key, value in keys.items()} for root, keys in columns.items()}
        for n in range(count)
    ]
    one_by_one, uniform = _prover(text, base), _prover(text, base)
    for line, row in enumerate(rows, 2):
        one_by_one.check(row, line)
        uniform.check(row, line, uniform=True)
    counts = {key: failure.count for key, failure in one_by_one.failures.items()}
    assert {key: failure.count for key, failure in uniform.failures.items()} == counts
    assert sum(1 for row in rows if not _renders(text, base, row)) == (count if counts else 0)
