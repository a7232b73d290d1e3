"""templates.undeclared_names: the names a template reads; every Jinja2 failure a located TemplateError."""

from __future__ import annotations

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


# Lookup-only templates render without Jinja2; the output must be exactly Jinja2's.
_names = st.sampled_from(["input", "expected", "metadata", "city", "items", "n", "k", "get"])
_leaf = st.one_of(
    st.text(max_size=5),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers()),
)
_values = st.recursive(_leaf, lambda inner: st.dictionaries(_names, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(
    variables=st.dictionaries(_names, _values, max_size=3),
    paths=st.lists(st.lists(_names, min_size=1, max_size=3), min_size=1, max_size=3),
    texts=st.lists(st.text(alphabet="ab {}%#.", max_size=4), min_size=4, max_size=4),
)
def test_lookup_templates_render_exactly_as_jinja(variables, paths, texts):
    from specengine.errors import TemplateError
    from specengine.templates import _compiled, render

    source = texts[0] + "".join(f"{{{{ {'.'.join(p)} }}}}{t}" for p, t in zip(paths, texts[1:], strict=False))
    try:
        expected = _compiled(source).render(variables)
    except Exception as exc:  # Jinja2 refuses it (undefined, syntax): so must we, as a TemplateError
        with pytest.raises(TemplateError):
            render(source, variables)
        assert exc is not None
        return
    assert render(source, variables) == expected


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
