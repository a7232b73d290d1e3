"""`specengine validate`: one test per class of mistake, asserting the exact file:line:col and the hint.

Each test writes a small project (a `demo` endpoint as the default) and a spec, runs the real CLI
in-process, and compares the printed diagnostics line by line.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cli import run_cli

PROJECT = """\
endpoints:
  demo:
    protocol: demo
  weather-agent:
    protocol: openai-chat
    url: http://127.0.0.1:9/v1/chat/completions
defaults:
  endpoint: demo
"""


def problems(folder: Path, spec: str, *, name: str = "s.yaml", project: str | None = PROJECT) -> list[str]:
    """Validate one spec in a fresh project; the diagnostics printed (exit 1 asserted when any)."""
    (folder / ".git").mkdir(exist_ok=True)  # stop the project-file search here
    if project is not None:
        (folder / "specengine.yaml").write_text(project, encoding="utf-8")
    specs = folder / "specs"
    specs.mkdir(exist_ok=True)
    (specs / name).write_text(textwrap.dedent(spec).lstrip("\n"), encoding="utf-8")
    result = run_cli(["validate", "specs"], cwd=folder)
    lines = [line for line in result.stdout.splitlines() if line]
    assert "Traceback" not in result.output
    assert result.exit_code == (1 if lines else 0), result.output
    return lines


def one_problem(folder: Path, spec: str, **kwargs) -> str:
    found = problems(folder, spec, **kwargs)
    assert len(found) == 1, found
    return found[0]


VALID = """
    evals:
      - name: sunny
        send: hello
        expect: [succeeded]
"""


def test_a_valid_spec_has_no_problems(tmp_path):
    assert problems(tmp_path, VALID) == []


# --- YAML -----------------------------------------------------------------------------------------


def test_duplicate_key_names_both_lines(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            send: again
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:4:5: duplicate key 'send' (first defined on line 3)"


def test_tab_in_indentation(tmp_path):
    spec = "evals:\n  - name: a\n\tsend: hi\n"
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:3:1: a tab is used for indentation here: YAML needs spaces"
    )


def test_yaml_syntax_error_is_located(tmp_path):
    spec = """
        evals:
          - name: a: b
            send: hi
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:2:11: a colon and a space inside text start a new key in YAML: put the text in quotes:"
        ' - name: "a: b"'
    )


def test_empty_file(tmp_path):
    assert one_problem(tmp_path, "# only a comment\n") == "specs/s.yaml:1:1: the file is empty"


def test_a_list_is_not_a_spec(tmp_path):
    message = one_problem(tmp_path, "- name: a\n  send: hi\n")
    assert message.startswith(
        "specs/s.yaml:1:1: a spec must be a mapping with evals: (a list of evals), not a list"
    )
    assert "dataset" in message


def test_unquoted_yes_where_text_is_expected(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - includes: yes
    """
    assert one_problem(tmp_path, spec) == (
        'specs/s.yaml:5:19: the value yes is read as the text "yes" here, but YAML 1.1 tools read it as'
        ' true/false: quote it ("yes") for text, or write true or false'
    )


def test_unquoted_time_and_date_in_labels(tmp_path):
    spec = """
        labels: [12:30, 2024-01-02, "no"]
        evals:
          - name: a
            send: hi
            expect: [succeeded]
    """
    assert problems(tmp_path, spec) == [
        'specs/s.yaml:1:10: the value 12:30 is read as the number 750 by YAML 1.1 tools: quote it ("12:30")',
        "specs/s.yaml:1:17: the value 2024-01-02 is read as a date by YAML 1.1 tools:"
        ' quote it ("2024-01-02")',
    ]


def test_unquoted_yes_as_a_mapping_key(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: custom
                prompt: "Is it polite? {{ reply }}"
                choices: {Yes: 1, "No": 0}
    """
    assert one_problem(tmp_path, spec) == (
        'specs/s.yaml:7:19: the key Yes is read as the text "Yes" here, but YAML 1.1 tools read it as'
        ' true/false: quote it ("Yes") for text, or write true or false'
    )


def test_soft_yes_says_write_true_or_false_once(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - includes: hi
                soft: yes
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:6:15: soft: write true or false, not 'yes'"


# --- schema: unknown keys and names, with "did you mean" ------------------------------------------


def test_unknown_top_level_key_points_at_the_key(tmp_path):
    spec = """
        suite: x
        evls:
          - name: a
            send: hi
            expect: [succeeded]
    """
    # the typo's hint silences the "missing evals" it causes
    assert one_problem(tmp_path, spec) == "specs/s.yaml:2:1: unknown key 'evls' - did you mean 'evals'?"


def test_unknown_eval_key_from_another_tool(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            assert: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:4:5: unknown key 'assert' in this eval - did you mean 'expect'?"
    )


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("expect:\n  - includs: Sunny", "5:9: unknown matcher 'includs' - did you mean 'includes'?"),
        ("expect: [suceeded]", "4:14: unknown matcher 'suceeded' - did you mean 'succeeded'?"),
        (
            "expect:\n  - includes",
            "5:9: 'includes' needs a value after a colon, e.g. 'includes: ...'"
            " (only succeeded and is_json stand alone)",
        ),
        (
            "expect:\n  - judge: closed_q\n    criteria: Is it polite?",
            "5:16: unknown judge 'closed_q' - did you mean 'closed_qa'?"
            " (use one of closed_qa, factuality, custom, goal_completed, role_adherence, knowledge_retention,"
            " conversation_relevance)",
        ),
        (
            "expect:\n  - judge: closed_qa\n    criteria: Is it polite?\n    threshold: {gtee: 0.5}",
            "7:21: unknown threshold operator 'gtee' - did you mean 'gte'? (use one of gte, gt, lte, lt)",
        ),
    ],
    ids=["matcher", "bare matcher", "bare matcher needing a value", "judge", "threshold operator"],
)
def test_misspelt_or_misused_names(tmp_path, expect, message):
    spec = "evals:\n  - name: a\n    send: hi\n" + textwrap.indent(expect, "    ") + "\n"
    assert one_problem(tmp_path, spec) == f"specs/s.yaml:{message}"


def test_two_matchers_in_one_check(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - includes: a
                equals: b
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:5:9: use one matcher per check (found: includes, equals); write each as its own - item"
    )


def test_check_without_a_matcher(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - soft: true
    """
    message = one_problem(tmp_path, spec)
    assert message.startswith("specs/s.yaml:5:9: this check has no matcher: add one of succeeded, includes,")


def test_wrong_type_and_range(tmp_path):
    spec = """
        trials: two
        evals:
          - name: a
            send: hi
            timeout: 0
            expect: [succeeded]
    """
    assert problems(tmp_path, spec) == [
        "specs/s.yaml:1:9: trials must be a whole number, not text",
        "specs/s.yaml:5:14: timeout must be greater than 0, not 0",
    ]


def test_missing_required_key_points_at_the_mapping(tmp_path):
    spec = """
        evals:
          - send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:2:5: this eval needs 'name'"


def test_send_and_turns_together(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            turns: [{send: hi}]
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:2:5: an eval has either send (one turn) or turns (a conversation), not both"
    )


def test_judge_choices_scores_between_0_and_1(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: custom
                prompt: "Grade {{ reply }}"
                choices: {A: 1, B: 2}
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:7:28: B must be at most 1, not 2"


def test_option_of_another_judge(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - includes: hi
                criteria: Is it polite?
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:6:9: 'criteria' belongs to a judge check (judge: closed_qa)"
    )


# --- names, ids and datasets -----------------------------------------------------------------------


def test_duplicate_eval_names(tmp_path):
    spec = """
        evals:
          - name: same
            send: hi
            expect: [succeeded]
          - name: same
            send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:5:11: eval name 'same' is used twice in this file (first on line 2)"
    )


def test_eval_name_with_case_id_separators(tmp_path):
    spec = """
        evals:
          - name: "a [b]"
            send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:2:11: name: a name may not be empty or contain '::', '[' or ']'"
        " (they separate parts of case ids)"
    )


def test_dataset_file_not_found(tmp_path):
    spec = """
        dataset: data/missing.csv
        evals:
          - name: a
            send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:1:10: dataset file not found: specs/data/missing.csv"


def _dataset(tmp_path: Path, name: str, text: str) -> None:
    data = tmp_path / "specs" / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / name).write_text(text, encoding="utf-8")


DATASET_SPEC = """
    dataset: data/{name}
    evals:
      - name: a
        send: "{{{{ input.city }}}}"
        expect: [succeeded]
"""


@pytest.mark.parametrize(
    ("name", "rows", "message"),
    [
        (
            "rows.csv",
            "id,city\nparis,Paris\noslo,Oslo,extra\n",
            "specs/data/rows.csv:3:1: this row has 3 values but the header has 2 columns",
        ),
        (
            "rows.jsonl",
            '{"input": {"city": "Paris"}}\n{"input": {"city": "Oslo"\n',
            "specs/data/rows.jsonl:2:26: not valid JSON: Expecting ',' delimiter",
        ),
        (
            "rows.jsonl",
            '{"inptu": {"city": "Paris"}}\n',
            "specs/data/rows.jsonl:1:1: unknown key 'inptu' in a row - did you mean 'input'?;"
            " a row may hold only id, input, expected, metadata, labels (put template variables under input)",
        ),
        (
            "rows.csv",
            "id,city\nparis,Paris\noslo,Oslo\nparis,Paris again\n",
            "specs/data/rows.csv:4:1: duplicate row id 'paris' (first used on line 2)",
        ),
        (
            "rows.csv",
            "id,city\npar::is,Paris\n",
            "specs/data/rows.csv:2:1: row id 'par::is' may not contain '::':"
            " case ids use '::' and '[...]' as separators",
        ),
        (
            "rows.csv",
            "id,city\n",
            "specs/s.yaml:1:10: the dataset specs/data/rows.csv has no rows:"
            " the evals using it would run zero times",
        ),
    ],
    ids=[
        "short CSV row",
        "bad JSON line",
        "unknown row key",
        "duplicate row ids",
        "separator in an id",
        "no rows",
    ],
)
def test_dataset_file_problems(tmp_path, name, rows, message):
    _dataset(tmp_path, name, rows)
    assert one_problem(tmp_path, DATASET_SPEC.format(name=name)) == message


def test_identical_rows_without_ids_collide(tmp_path):
    _dataset(tmp_path, "rows.csv", "city\nParis\nOslo\nParis\n")
    message = one_problem(tmp_path, DATASET_SPEC.format(name="rows.csv"))
    assert message.startswith(
        "specs/data/rows.csv:4:1: this row has the same input and expected as the row on line 2"
    )


def test_duplicate_inline_row_ids(tmp_path):
    spec = """
        dataset:
          - {id: a, input: {city: Paris}}
          - {id: a, input: {city: Oslo}}
        evals:
          - name: e
            send: "{{ input.city }}"
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == "specs/s.yaml:3:5: duplicate row id 'a' (first used on line 2)"


# --- templates -------------------------------------------------------------------------------------


def test_undefined_variable_in_send_with_hint(tmp_path):
    spec = """
        evals:
          - name: a
            send: "Weather in {{ inputs.city }}?"
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:3:11: send: undefined variable 'inputs' - did you mean 'input'?;"
        " known here: expected, input, metadata"
    )


def test_reply_is_known_in_checks_only(tmp_path):
    spec = """
        evals:
          - name: a
            send: "{{ reply }}"
            expect:
              - equals: "{{ reply }}"
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:3:11: send: undefined variable 'reply'; known here: expected, input, metadata"
        " (reply, tool_calls, session_id and turn are known only in checks)"
    )


def test_template_error_in_a_block_scalar_points_at_its_line(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: custom
                prompt: |
                  Grade the reply.
                  Reply: {{ reply }
                choices: {A: 1, B: 0}
    """
    message = one_problem(tmp_path, spec)
    assert message.startswith("specs/s.yaml:8:11: prompt: template syntax error:")


def test_undefined_variable_on_a_later_template_line(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - judge: custom
                prompt: |
                  Grade the reply.
                  Question: {{ input.question }}
                  Reply: {{ replie }}
                choices: {A: 1, B: 0}
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:9:11: prompt: undefined variable 'replie' - did you mean 'reply'?;"
        " known here: expected, input, metadata, reply, session_id, tool_calls, turn"
    )


def test_unknown_filter(tmp_path):
    spec = """
        evals:
          - name: a
            send: "{{ input.city | uper }}"
            expect: [succeeded]
    """
    assert (
        one_problem(tmp_path, spec)
        == "specs/s.yaml:3:11: send: unknown filter 'uper' - did you mean 'upper'?"
    )


def test_template_inside_called_tool_with_args(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - called_tool_with:
                  name: get_weather
                  args: {city: "{{ input.cty }}", day: "{{ day }}"}
    """
    assert problems(tmp_path, spec) == [
        "specs/s.yaml:7:24: city: undefined variable input.cty: input has no key 'cty'; it is empty",
        "specs/s.yaml:7:48: day: undefined variable 'day'; known here: expected, input, metadata, reply,"
        " session_id, tool_calls, turn",
    ]


# --- evals, turns and checks -----------------------------------------------------------------------


def test_eval_without_checks(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:2:5: this eval checks nothing: add expect: with at least one check"
        ' (an eval with nothing to check would always pass), or skip: "reason"'
    )


def test_skipped_eval_needs_no_checks_and_turn_checks_count(tmp_path):
    spec = """
        evals:
          - name: skipped
            send: hi
            skip: not ready
          - name: conversation
            turns:
              - send: hi
              - send: again
                expect: [succeeded]
    """
    assert problems(tmp_path, spec) == []


def test_turns_may_not_start_or_end_with_reset(tmp_path):
    spec = """
        evals:
          - name: a
            turns:
              - reset
              - send: hi
                expect: [succeeded]
              - reset
    """
    assert problems(tmp_path, spec) == [
        "specs/s.yaml:4:9: turns may not start with reset: the first send already opens a new conversation",
        "specs/s.yaml:7:9: turns may not end with reset: nothing is sent after it",
    ]


def test_misspelt_reset(tmp_path):
    spec = """
        evals:
          - name: a
            turns:
              - send: hi
                expect: [succeeded]
              - rest
              - send: again
    """
    message = one_problem(tmp_path, spec)
    assert message.startswith("specs/s.yaml:6:9: a step is send: TEXT")
    assert message.endswith("did you mean 'reset'?")


def test_invalid_regular_expression(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - matches: "([0-9]+"
              - matches: "{{ expected.pattern }}("
            expected: {pattern: "[0-9]+"}
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:5:18: matches: not a valid regular expression:"
        " missing ), unterminated subpattern at position 0"
    )


def test_value_without_a_template(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - equals: abc
                value: session_id
    """
    assert one_problem(tmp_path, spec) == (
        'specs/s.yaml:6:16: value must be a template such as "{{ session_id }}"'
        " (without {{ }} it would check a fixed text)"
    )


def test_value_on_a_tool_check(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - called_tool: get_weather
                value: "{{ session_id }}"
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:6:9: value works with text matchers and judges, not with called_tool"
    )


@pytest.mark.parametrize(
    ("check", "hint"),
    [
        ("{judge: closed_qa, criteria: polite?, not: true}", "write threshold: {lt: 0.5}"),
        ("{includes: [a, b], not: true}", "write not_includes: [...]"),
        ("{succeeded: null, not: true}", "cannot invert succeeded"),
        ("{latency_below: 2, not: true}", "cannot invert latency_below"),
        ("{called_tool: get_weather, not: true}", "write not_called_tool: instead"),
    ],
)
def test_not_where_it_cannot_invert(tmp_path, check, hint):
    spec = f"""
        evals:
          - name: a
            send: hi
            expect:
              - {check}
    """
    message = one_problem(tmp_path, spec)
    assert message.startswith("specs/s.yaml:5:")
    assert hint in message


def test_not_on_a_single_text_is_fine(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - {includes: error, not: true}
              - {called_tool_with: {name: t, args: {a: 1}}, not: true}
    """
    assert problems(tmp_path, spec) == []


def test_scope_conversation_on_a_text_check(tmp_path):
    spec = """
        evals:
          - name: a
            send: hi
            expect:
              - includes: hi
                scope: conversation
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:6:9: scope: conversation works with tool checks, tokens_below and judges,"
        " not with includes"
        " (a text check looks at one turn's reply)"
    )


# --- endpoints and the project file ----------------------------------------------------------------


def test_unknown_endpoint_name_with_hint(tmp_path):
    spec = """
        endpoint: weather-agnet
        evals:
          - name: a
            send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:1:11: unknown endpoint 'weather-agnet' - did you mean 'weather-agent'?"
        " (endpoints in specengine.yaml: demo, weather-agent)"
    )


def test_eval_without_any_endpoint(tmp_path):
    project = "endpoints:\n  demo:\n    protocol: demo\n"
    spec = """
        evals:
          - name: a
            send: hi
            expect: [succeeded]
          - name: b
            endpoint: demo
            send: hi
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec, project=project) == (
        "specs/s.yaml:2:5: this eval has no endpoint: set endpoint: on the eval or at the top of the file,"
        " or defaults: {endpoint: NAME} in specengine.yaml"
    )


def test_without_a_project_file_specs_are_still_checked(tmp_path):
    spec = """
        endpoint: demo
        evals:
          - name: a
            send: "{{ inputs }}"
            expect: [succeeded]
          - name: b
            endpoint: {protocol: demo}
            send: hi
            expect: [succeeded]
    """
    found = problems(tmp_path, spec, project=None)
    assert found == [
        "specs/s.yaml:1:11: unknown endpoint 'demo': no specengine.yaml was found at or above this folder to"
        " define it (or write the endpoint inline: endpoint: {protocol: ..., url: ...})",
        "specs/s.yaml:4:11: send: undefined variable 'inputs' - did you mean 'input'?;"
        " known here: expected, input, metadata",
    ]


def test_inline_endpoint_env_syntax_and_literal_elsewhere(tmp_path):
    spec = """
        endpoint:
          protocol: openai-chat
          url: http://127.0.0.1:9/v1/chat/completions
          headers: {Authorization: "Bearer ${TOKEN"}
        evals:
          - name: a
            send: "costs ${5"
            expect: [succeeded]
    """
    assert one_problem(tmp_path, spec) == (
        "specs/s.yaml:4:28: ${ must be followed by an environment variable name and }, e.g. ${API_TOKEN}"
        " (letters, digits and _, not starting with a digit)"
    )


def test_project_file_problems(tmp_path):
    project = textwrap.dedent(
        """\
        endpoints:
          demo:
            protocol: demo
          agent:
            protocol: opena-chat
            url: http://127.0.0.1:9/v1
            headers: {Authorization: "Bearer ${1TOKEN}"}
        defaults:
          endpoint: dem
        configs:
          staging:
            endpoints: {agnet: {url: "https://staging.example/v1"}}
        """
    )
    found = problems(tmp_path, VALID, project=project)
    assert found == [
        "specengine.yaml:5:15: unknown protocol 'opena-chat' - did you mean 'openai-chat'?"
        " (use one of openai-chat, openai-responses, databricks, appkit, langgraph, a2a, adk, ag-ui, ai-sdk,"
        " http, demo)",
        "specengine.yaml:7:30: ${ must be followed by an environment variable name and }, e.g. ${API_TOKEN}"
        " (letters, digits and _, not starting with a digit)",
        "specengine.yaml:9:13: unknown endpoint 'dem' - did you mean 'demo'? (endpoints: demo, agent)",
        "specengine.yaml:12:17: config 'staging' changes endpoint 'agnet', which endpoints: does not define"
        " - did you mean 'agent'?",
    ]


def test_every_problem_in_every_file_in_one_run(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "specengine.yaml").write_text(PROJECT, encoding="utf-8")
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "a.yaml").write_text("evals:\n  - name: a\n    send: hi\n    expect: [includs: x]\n")
    (specs / "b.yaml").write_text("evals:\n  - name: b\n    send: hi\n")
    (specs / "c.yaml").write_text("evals: [\n")
    (specs / "ok.yaml").write_text(textwrap.dedent(VALID))
    result = run_cli(["validate", "specs"], cwd=tmp_path)
    assert result.exit_code == 1
    paths = [line.split(":")[0] for line in result.stdout.splitlines()]
    assert paths == ["specs/a.yaml", "specs/b.yaml", "specs/c.yaml"]
    assert result.stderr.strip().splitlines()[-1] == "3 problems in 3 files"


def test_reset_written_as_a_mapping_says_how_to_write_it(tmp_path):
    spec = (
        "endpoint: {protocol: demo}\n"
        "evals:\n"
        "  - name: a\n"
        "    turns:\n"
        "      - send: hi\n"
        "        expect: [succeeded]\n"
        "      - reset: true\n"
        "      - send: again\n"
        "        expect: [succeeded]\n"
    )
    (tmp_path / "s.yaml").write_text(spec)
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "s.yaml:7:9: a reset is the bare word `- reset` on its own line, not a mapping"
    ]
