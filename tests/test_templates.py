"""templates.undeclared_names: the names a template reads; every Jinja2 failure a located TemplateError."""

from __future__ import annotations

import pytest

from specengine.templates import TemplateError, undeclared_names


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
