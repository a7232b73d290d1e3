"""What defined a check, as the results record it (results/definition.py), on plain values."""

from __future__ import annotations

from specengine.plan import Case, Check, Source, Step, Threshold
from specengine.results.definition import add_definitions, check_fingerprint, check_mapping, definition_text

HERE = Source("spec.yaml", 3)


class Located(float):
    """A number as the spec loader hands it over: a float subclass that carries its place."""


def test_a_template_of_the_row_renders_and_one_of_the_reply_stays_as_written():
    check = Check("includes", "{{ input.city }}", "includes city", HERE)
    assert definition_text(check_mapping(check, {"input": {"city": "Oslo"}})) == "{includes: Oslo}"
    echoed = Check("equals", "{{ reply }}", "equals reply", HERE, negate=True, scope="conversation")
    assert (
        definition_text(check_mapping(echoed, {}))
        == "{equals: '{{ reply }}', not: true, scope: conversation}"
    )


def test_a_located_number_and_a_value_yaml_cannot_write_still_make_a_line():
    check = Check("latency_below", Located(1e-06), "latency_below", HERE)
    assert definition_text(check_mapping(check, {})) == "{latency_below: 1.0e-06}"
    assert definition_text({"a": object()}).startswith('{"a": "<object object')  # JSON when YAML cannot


def test_the_fingerprint_moves_with_gate_threshold_and_definition_only():
    base = check_fingerprint("{includes: a}", True, Threshold("gte", 1.0).as_dict())
    assert base == check_fingerprint("{includes: a}", True, {"gte": 1.0})
    assert base != check_fingerprint("{includes: a}", False, {"gte": 1.0})
    assert base != check_fingerprint("{includes: a}", True, {"gte": 0.8})
    assert base != check_fingerprint("{includes: b}", True, {"gte": 1.0})


def test_a_check_reading_the_row_renders_for_every_case_and_one_reading_nothing_is_written_once():
    by_row = Check("includes", "{{ input.city }}", "includes city", HERE)
    fixed = Check("latency_below", 30, "latency_below", HERE)
    step = Step("send", "hi", (by_row, fixed), HERE)

    def definitions(city: str) -> list[str]:
        case = Case("s.yaml::e", 0, "s", "s.yaml", "e", 3, "agent", (step,), {"input": {"city": city}})
        data = add_definitions({"checks": [{}, {}]}, case)
        return [check["definition"] for check in data["checks"]]

    assert definitions("Oslo") == ["{includes: Oslo}", "{latency_below: 30}"]
    assert definitions("Lima") == ["{includes: Lima}", "{latency_below: 30}"]
    assert definitions("Oslo") == ["{includes: Oslo}", "{latency_below: 30}"]
