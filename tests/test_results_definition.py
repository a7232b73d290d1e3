"""What defined a check, as the results record it (results/definition.py), on plain values."""

from __future__ import annotations

from specengine.plan import Case, Check, Recording, Source, Step, Threshold
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


def test_a_recorded_case_keeps_what_reads_the_recording_as_written_and_renders_the_rest():
    by_trace = Check(
        "called_tool_with", {"name": "refund", "args": {"order": "{{ trace.id }}"}}, "refund", HERE
    )
    by_vars = Check("includes", "{{ vars.word }}", "includes word", HERE)
    both = Check("includes", "{{ vars.word }} {{ trace.id }}", "includes both", HERE)
    step = Step("send", "hi", (by_trace, by_vars, both), HERE)

    def definitions(trace_id: str, word: str = "sorry") -> list[str]:
        variables = {"vars": {"word": word}, "trace": {"id": trace_id}}
        recording = Recording("prod", f"conv-{trace_id}", (trace_id,))
        case = Case(
            "s.yaml::e", 0, "s", "s.yaml", "e", 3, "source:prod", (step,), variables, recording=recording
        )
        data = add_definitions({"checks": [{}, {}, {}]}, case)
        return [check["definition"] for check in data["checks"]]

    written = [
        "{called_tool_with: {name: refund, args: {order: '{{ trace.id }}'}}}",
        "{includes: sorry}",
        "{includes: '{{ vars.word }} {{ trace.id }}'}",
    ]
    assert definitions("t1") == written
    assert definitions("t2") == written  # the same text for every recorded conversation
    assert definitions("t3", word="oops")[1] == "{includes: oops}"  # other variables: rendered anew
