"""templates.undeclared_names: the names a template reads; every Jinja2 failure a located TemplateError."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specengine.errors import TemplateError
from specengine.templates import undeclared_names


def test_names_a_template_reads():
    assert undeclared_names("{{ input.city }} {% if expected %}{{ reply | upper }}{% endif %}") == {
        "input",
        "expected",
        "reply",
    }
    assert undeclared_names("no template here") == set()


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [
        ("{{ input", 1, "template syntax error: unexpected end of template"),
        ("line one\n{{ reply | uper }}", 2, "template error: No filter named 'uper'."),
        ("{{ x }}\n\n{{ reply is oddd }}", 3, "template error: No test named 'oddd'."),
        ("{% block a %}{% endblock %}\n{% block a %}{% endblock %}", 2, "template error: block 'a' defined"),
    ],
)
def test_every_jinja_failure_is_a_template_error_with_its_line(source, line, message):
    with pytest.raises(TemplateError) as caught:
        undeclared_names(source)
    assert caught.value.line == line
    assert caught.value.message.startswith(message)


# Text-and-lookup templates render by looking the values up; the output must be exactly Jinja2's.
_names = st.sampled_from(["input", "expected", "metadata", "city", "items", "n", "k", "get", "range"])
_leaf = st.one_of(
    st.text(max_size=5),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers()),
)
_values = st.recursive(_leaf, lambda inner: st.dictionaries(_names, inner, max_size=3), max_leaves=8)
_openers = st.sampled_from(["{{ ", "{{", "{{- ", "{{  "])
_closers = st.sampled_from([" }}", "}}", " -}}", "\n}}"])
_texts = st.text(alphabet="ab {}%#.\n", max_size=4) | st.sampled_from(
    ["{# note #}", "{% raw %}{{ x }}{% endraw %}"]
)


@st.composite
def lookup_templates(draw: st.DrawFn) -> str:
    """Text and lookups in Jinja2's spellings: spaces, whitespace control, comments, raw blocks."""
    paths = draw(st.lists(st.lists(_names, min_size=1, max_size=3), min_size=1, max_size=3))
    texts = draw(st.lists(_texts, min_size=len(paths) + 1, max_size=len(paths) + 1))
    lookups = [f"{draw(_openers)}{'.'.join(path)}{draw(_closers)}" for path in paths]
    return texts[0] + "".join(lookup + text for lookup, text in zip(lookups, texts[1:], strict=True))


def test_lookup_templates_render_exactly_as_jinja():
    from specengine.templates import _compiled, lookup_parts, render

    ways: Counter[str] = Counter()

    @settings(max_examples=400, deadline=None)
    @given(variables=st.dictionaries(_names, _values, max_size=3), source=lookup_templates())
    def check(variables, source):
        ways["lookups" if lookup_parts(source) is not None else "Jinja2"] += 1
        try:
            expected = _compiled(source).render(variables)
        except Exception as exc:  # Jinja2 refuses it (undefined, syntax): so must we, as a TemplateError
            with pytest.raises(TemplateError):
                render(source, variables)
            assert exc is not None
            return
        assert render(source, variables) == expected

    check()
    assert ways["lookups"] >= 0.5 * sum(ways.values()), ways  # most take the lookup path


@settings(max_examples=300, deadline=None)
@given(variables=st.dictionaries(_names, _values, max_size=3), path=st.lists(_names, min_size=1, max_size=3))
def test_a_whole_lookup_keeps_its_native_value_as_jinja_gives_it(variables, path):
    from specengine.templates import _compiled_expression, render_native

    expression = ".".join(path)
    try:
        expected = _compiled_expression(expression)(**variables)
        expected._fail_with_undefined_error()  # an Undefined: Jinja2 refuses it, so must we
    except AttributeError:  # a value, not an Undefined
        assert render_native(f" {{{{ {expression} }}}}\n", variables) == (
            list(expected) if isinstance(expected, tuple) else expected
        )
    except Exception:
        with pytest.raises(TemplateError):
            render_native(f"{{{{ {expression} }}}}", variables)


@settings(max_examples=300, deadline=None)
@given(source=lookup_templates() | st.text(alphabet="ab{}%#|. ()", max_size=20))
def test_the_names_read_are_jinja2_metas(source):
    from jinja2 import meta

    from specengine.template_analysis import template_facts
    from specengine.templates import environment

    try:
        expected = meta.find_undeclared_variables(environment().parse(source))
    except Exception:
        names, problems = template_facts(source)
        assert problems and not names
        return
    assert template_facts(source) == (frozenset(expected), ())


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("id={{ input.none }}", "id="),
        ("args={{ input.args }}", 'args={"x": [1, true]}'),
        ("flag={{ input.flag }}", "flag=true"),
        ("{{ input.city | upper }} / {{ input.none }}", "PARIS / "),
    ],
)
def test_values_print_as_the_format_says(source, text):
    from specengine.templates import render

    variables = {"input": {"none": None, "args": {"x": [1, True]}, "flag": True, "city": "Paris"}}
    assert render(source, variables) == text


def test_brace_next_to_a_lookup_is_left_to_jinja():
    from specengine.templates import render

    with pytest.raises(TemplateError):
        render("{{ input }}{{{ input }}", {"input": None})
