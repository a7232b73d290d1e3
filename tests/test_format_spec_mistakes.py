"""The mistakes `validate` finds in evals, turns, templates and checks: each at its file:line:col,
in plain words, with the fix.

docs/spec-format.md sections: [A spec file](../docs/spec-format.md#a-spec-file),
[Evals, turns and conversations](../docs/spec-format.md#evals-turns-and-conversations),
[Templates](../docs/spec-format.md#templates), [Checks](../docs/spec-format.md#checks),
[Check modifiers](../docs/spec-format.md#check-modifiers), [Judges](../docs/spec-format.md#judges).
"""

from __future__ import annotations

import pytest

VALUE_NEEDS_A_TEMPLATE = (
    'value must be a template such as "{{ session_id }}" (without {{ }} it would check a fixed text)'
)


@pytest.fixture
def check(run_cli, write_project, write_spec, tmp_path):
    """Validate one spec; returns its problem lines (exit 1 expected when there are any)."""
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})

    def validate(text: str) -> list[str]:
        write_spec(tmp_path, "s", text)
        result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
        lines = result.stdout.splitlines()
        assert result.exit_code == (1 if lines else 0), result.output
        assert "Traceback" not in result.output
        return lines

    return validate


# (spec, every problem `validate` prints for it): one row per rule.
MISTAKES = [
    pytest.param("suite: x\n", ["s.yaml:1:1: the spec needs 'evals'"], id="evals is required"),
    pytest.param(
        "evals: []\n", ["s.yaml:1:8: evals is empty: add at least one item"], id="evals is not empty"
    ),
    pytest.param(
        """
        evals:
          - name: both
            send: x
            turns: [{send: "y2"}]
            expect: [succeeded]
          - name: neither
            expect: [succeeded]
        """,
        [
            "s.yaml:2:5: an eval has either send (one turn) or turns (a conversation), not both",
            "s.yaml:6:5: evals[1]: an eval needs send (one turn), turns (a conversation), replay"
            " (a conversation from a dataset row), simulate (a simulated user) or source (recorded"
            " conversations)",
        ],
        id="an eval has exactly one of send or turns",
    ),
    pytest.param(
        """
        evals:
          - name: resets
            turns: [reset, {send: a}, reset]
            expect: [succeeded]
        """,
        [
            "s.yaml:3:13: turns may not start with reset: the first send already opens a new conversation",
            "s.yaml:3:31: turns may not end with reset: nothing is sent after it",
        ],
        id="turns may not start or end with reset",
    ),
    pytest.param(
        """
        evals:
          - name: e
            send: "{{ inptu.city }} {{ reply }}"
            expect:
              - includes: "{{ nope }}"
              - called_tool_with: {name: t, args: {city: "{{ inputs.city }}"}}
              - judge: custom
                prompt: |
                  Grade this.
                  {{ whatever }}
                choices: {A: 1, B: 0}
              - includes: "{{ input.city }} {{ expected.x }} {{ metadata.y }} {{ turn }} {{ session_id }}"
            input: {city: Paris}
            expected: {x: 1}
            metadata: {y: 2}
        """,
        [
            "s.yaml:3:11: send: undefined variable 'inptu' - did you mean 'input'?;"
            " known here: expected, input, metadata",
            "s.yaml:3:11: send: undefined variable 'reply'; known here: expected, input, metadata"
            " (reply, tool_calls, session_id and turn are known only in checks)",
            "s.yaml:5:19: includes: undefined variable 'nope';"
            " known here: expected, input, metadata, reply, session_id, tool_calls, turn",
            "s.yaml:6:50: city: undefined variable 'inputs' - did you mean 'input'?;"
            " known here: expected, input, metadata, reply, session_id, tool_calls, turn",
            "s.yaml:10:11: prompt: undefined variable 'whatever';"
            " known here: expected, input, metadata, reply, session_id, tool_calls, turn",
        ],
        id="undefined template names are found statically with their line",
    ),
    pytest.param(
        """
        evals:
          - name: e
            send: x
            expect:
              - matches: "([a-z"
              - matches: "{{ input.p }}("
            input: {p: a}
        """,
        ["s.yaml:5:18: matches: not a valid regular expression: unterminated character set at position 1"],
        id="a matches pattern is compiled by validate unless it holds a template",
    ),
    pytest.param(
        """
        evals:
          - name: e
            send: x
            expect:
              - {succeeded: null, not: true}
              - {judge: closed_qa, criteria: ok, not: true}
              - {latency_below: 2, not: true}
              - {includes: [a, b], not: true}
              - {includes: [a], not: true}
              - {includes: a, not: true}
              - {matches: "a+", not: true}
              - {called_tool_with: {name: t, args: {a: 1}}, not: true}
        """,
        [
            "s.yaml:5:27: not: true cannot invert succeeded: remove not (a turn that errored never passes)",
            "s.yaml:6:42: not: true cannot invert a judge:"
            " to pass on a low score, write threshold: {lt: 0.5}",
            "s.yaml:7:28: not: true cannot invert latency_below: remove not and set the limit in seconds",
            "s.yaml:8:28: not: true cannot invert a list: to require that none of them appears,"
            " write not_includes: [...]",
            "s.yaml:9:25: not: true cannot invert a list: to require that none of them appears,"
            " write not_includes: [...]",
        ],
        id="not is refused where the format refuses it, with a hint",
    ),
    pytest.param(
        """
        evals:
          - name: e
            send: x
            expect:
              - {equals: x, value: plain}
              - {equals: x, value: 3}
              - {called_tool: t, value: "{{ reply }}"}
              - {equals: x, value: "{{ session_id }}"}
              - {judge: closed_qa, criteria: ok, value: "{{ tool_calls }}"}
        """,
        [
            f"s.yaml:5:28: {VALUE_NEEDS_A_TEMPLATE}",
            f"s.yaml:6:28: {VALUE_NEEDS_A_TEMPLATE}",
            "s.yaml:7:26: value works with text matchers and judges, not with called_tool",
        ],
        id="value must be a template on a text matcher or judge",
    ),
    pytest.param(
        """
        evals:
          - name: e
            turns: [{send: a}, {send: b}]
            expect:
              - {includes: a, scope: conversation}
              - {called_tool: t, scope: conversation}
              - {judge: closed_qa, criteria: ok, scope: conversation}
              - {tokens_below: 100, scope: conversation}
        """,
        [
            "s.yaml:5:23: scope: conversation works with tool checks, tokens_below and judges,"
            " not with includes (a text check looks at one turn's reply)"
        ],
        id="scope conversation only on tool checks, tokens_below and judges",
    ),
    pytest.param(
        """
        evals:
          - name: e
            send: x
            expect:
              - {judge: closed_qa, criteria: ok, threshold: {ge: 0.5}}
              - {judge: closed_qa, criteria: ok, at_least: 0.5, threshold: {gte: 0.6}}
              - {judge: factuality}
        """,
        [
            "s.yaml:5:54: unknown threshold operator 'ge' - did you mean 'gte'?"
            " (use one of gte, gt, lte, lt)",
            "s.yaml:6:9: use either threshold or at_least, not both",
            "s.yaml:7:9: judge: factuality needs 'expected'",
        ],
        id="thresholds take one operator and a typo gets a did you mean",
    ),
]


@pytest.mark.parametrize(("spec", "problems"), MISTAKES)
def test_validate_reports_every_mistake_at_its_place(check, spec, problems):
    assert check(spec) == problems


def test_an_eval_with_nothing_to_check_is_an_error_unless_skipped(check):
    lines = check(
        """
        evals:
          - name: nothing
            send: x
          - name: conversation without checks
            turns: [{send: a}, reset, {send: b}]
          - name: skipped
            skip: not ready
            send: x
          - name: a turn checks
            turns: [{send: a, expect: [succeeded]}, {send: b}]
        """
    )
    assert [line.split(": ", 1)[0] for line in lines] == ["s.yaml:2:5", "s.yaml:4:5"]
    assert all("this eval checks nothing: add expect:" in line and 'skip: "reason"' in line for line in lines)


def test_eval_names_are_unique_and_may_not_hold_id_separators(check):
    lines = check(
        """
        evals:
          - {name: a, send: x, expect: [succeeded]}
          - {name: a, send: x, expect: [succeeded]}
          - {name: "x::y", send: x, expect: [succeeded]}
          - {name: "x[1]", send: x, expect: [succeeded]}
        """
    )
    assert lines[0] == "s.yaml:3:12: eval name 'a' is used twice in this file (first on line 2)"
    assert lines[1].startswith("s.yaml:4:12: name: a name may not be empty or contain '::', '[' or ']'")
    assert lines[2].startswith("s.yaml:5:12: name:")


def test_one_matcher_per_check_and_a_check_needs_a_matcher(check):
    lines = check(
        """
        evals:
          - name: e
            send: x
            expect:
              - includes: a
                equals: b
              - {soft: true}
              - includez: a
        """
    )
    assert (
        lines[0]
        == "s.yaml:5:9: use one matcher per check (found: includes, equals); write each as its own - item"
    )
    assert lines[1].startswith("s.yaml:7:9: this check has no matcher: add one of succeeded, includes,")
    assert lines[2] == "s.yaml:8:9: unknown matcher 'includez' - did you mean 'includes'?"


def test_called_tool_with_args_is_a_mapping_and_its_values_are_templates(check):
    lines = check(
        """
        evals:
          - name: e
            send: x
            expect:
              - called_tool_with: {name: t, args: "{{ input.a }}"}
              - called_tool_with: {name: t, args: [1]}
              - called_tool_with: {name: t, arg: {}}
              - called_tool_with: {name: t, args: {deep: [1, {x: "{{ replly }}"}]}}
        """
    )
    assert lines[0] == "s.yaml:5:43: args must be a mapping (key: value), not text"
    assert lines[1] == "s.yaml:6:43: args must be a mapping (key: value), not a list"
    assert lines[2] == "s.yaml:7:37: unknown key 'arg' in 'called_tool_with' - did you mean 'args'?"
    assert lines[3].startswith("s.yaml:8:58: x: undefined variable 'replly' - did you mean 'reply'?")
    assert len(lines) == 4
