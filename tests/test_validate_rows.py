"""Every template is proven against every dataset row before anything is sent.

Through the real CLI: `validate` reports a lookup that a row cannot satisfy at the template's
file:line:col, with the keys that do exist, the row and how many rows share it; `plan` and `run`
stop on it with exit 2, and `run` sends nothing to the agent or the judge. Templates that are not
plain lookups (filters, conditions) are rendered, with the variables known only during the run
(`reply`, `tool_calls`, `turn`, …) standing in as empty values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec
from support.judge_server import JudgeServer, choose
from support.runs import run_spec

ORDERS_CSV = "id,order,expected.total\nr1,A-1,45.00\nr2,A-2,12.00\n"
AMOUNT_SPEC = """
dataset: data/orders.csv
evals:
  - name: totals
    send: "What is the total of order {{ input.order }}?"
    expect:
      - includes: "{{ expected.amount }}"
      - judge: closed_qa
        criteria: Does the reply give the order's total?
"""
AMOUNT_PROBLEM = (
    "spec.yaml:6:19: includes: undefined variable expected.amount: expected has no key 'amount'"
    " (for all 2 rows of data/orders.csv, first the row 'r1' at data/orders.csv:2); it has: total"
)


def _data(folder: Path, name: str, text: str) -> None:
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / name).write_text(text, encoding="utf-8")


def _validate(folder: Path, spec: str, name: str = "spec.yaml") -> list[str]:
    """The diagnostics validate prints for one spec (exit 1 asserted when there are errors)."""
    write_spec(folder, name, spec)
    result = run_cli(["validate", name], cwd=folder)
    assert "Traceback" not in result.output
    lines = result.stdout.splitlines()
    errors = [line for line in lines if ": warning: " not in line]
    assert result.exit_code == (1 if errors else 0), result.output
    return lines


@pytest.fixture
def demo_project(tmp_path):
    (tmp_path / ".git").mkdir()
    write_project(tmp_path, endpoints={"agent": {"protocol": "demo"}})
    return tmp_path


# --- the filed case: a CSV column that is not the key the check reads ----------------------------


def test_validate_names_the_keys_a_row_has(demo_project):
    _data(demo_project, "orders.csv", ORDERS_CSV)
    assert _validate(demo_project, AMOUNT_SPEC) == [AMOUNT_PROBLEM]


def test_plan_stops_on_it_with_exit_2(demo_project):
    _data(demo_project, "orders.csv", ORDERS_CSV)
    write_spec(demo_project, "spec.yaml", AMOUNT_SPEC)
    result = run_cli(["plan", "spec.yaml"], cwd=demo_project)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == AMOUNT_PROBLEM


def test_run_exits_2_without_a_request_to_the_agent_or_the_judge(agent_server, tmp_path):
    (tmp_path / ".git").mkdir()
    with JudgeServer(lambda call, hit: choose("Y", "Fine.")) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": "m", "base_url": judge.judge_url},
        )
        _data(tmp_path, "orders.csv", ORDERS_CSV)
        run = run_spec(tmp_path, AMOUNT_SPEC, env={"OPENAI_API_KEY": "sk-test"})
        assert run.exit_code == 2, run.cli.output
        assert AMOUNT_PROBLEM in run.cli.stderr.splitlines()
        assert run.results is None
        assert agent_server.hits() == 0
        assert judge.requests == []


# --- every template an eval renders, against every row ---------------------------------------------

ROWS_JSONL = (
    '{"id": "a", "input": {"city": "Paris"}, "expected": {"total": 3}}\n'
    '{"id": "b", "input": {"town": "Oslo"}, "expected": {"total": 4}}\n'
    '{"id": "c", "input": {"city": "Rome", "vip": "yes"}, "expected": {"total": 5}}\n'
)
EVERY_CSV = "id,order,customer,expected.status,expected.total,metadata.region\nr1,A-1,Ann,shipped,45,eu\n"
ROW = "(for the dataset row 'r1', data/rows.csv:2)"

PROOFS = [
    pytest.param(
        {"rows.csv": EVERY_CSV},
        """
        dataset: data/rows.csv
        evals:
          - name: every kind
            send: "Order {{ input.ordr }}"
            expect:
              - includes: ["{{ expected.status }}", "{{ expected.totl }}"]
              - called_tool_with: {name: refund, args: {amount: {$approx: "{{ expected.amout }}"}}}
              - name: the value
                matches: '^A-'
                value: "{{ metadata.regoin }}"
              - judge: factuality
                expected: "{{ expected.answr }}"
              - judge: custom
                prompt: |
                  Grade the reply.
                  The customer is {{ input.custmer }}.
                choices: {A: 1, B: 0}
        """,
        [
            f"spec.yaml:4:11: send: undefined variable input.ordr: input has no key 'ordr' {ROW};"
            " it has: order, customer - did you mean 'order'?",
            f"spec.yaml:6:45: includes: undefined variable expected.totl: expected has no key 'totl' {ROW};"
            " it has: status, total - did you mean 'total'?",
            f"spec.yaml:7:67: $approx: undefined variable expected.amout: expected has no key 'amout' {ROW};"
            " it has: status, total",
            f"spec.yaml:10:16: value: undefined variable metadata.regoin: metadata has no key 'regoin' {ROW};"
            " it has: region - did you mean 'region'?",
            f"spec.yaml:12:19: expected: undefined variable expected.answr: expected has no key 'answr'"
            f" {ROW}; it has: status, total",
            f"spec.yaml:16:11: prompt: undefined variable input.custmer: input has no key 'custmer' {ROW};"
            " it has: order, customer - did you mean 'customer'?",
        ],
        id="every kind of template, at its line",
    ),
    pytest.param(
        {"rows.jsonl": ROWS_JSONL},
        """
        dataset: data/rows.jsonl
        evals:
          - name: weather
            send: "Weather in {{ input.city }}"
            expect: [succeeded]
        """,
        [
            "spec.yaml:4:11: send: undefined variable input.city: input has no key 'city'"
            " (for the dataset row 'b', data/rows.jsonl:2; the other 2 rows have it); it has: town",
        ],
        id="a row that lacks a key the others have",
    ),
    pytest.param(
        {"rows.jsonl": ROWS_JSONL},
        """
        dataset: data/rows.jsonl
        evals:
          - name: weather
            input: {city: Anywhere}
            metadata: {team: ops}
            send: "Weather in {{ input.city }} for {{ metadata.team }}"
            expect: [{includes: "{{ expected.total }}"}]
        """,
        [],
        id="the eval's own values fill what rows lack",
    ),
    pytest.param(
        {},
        """
        evals:
          - name: inline
            dataset:
              - {id: one, input: {city: Paris}}
              - {id: two, input: {town: Oslo}}
            send: "Weather in {{ input.city }}"
            expect: [succeeded]
          - name: alone
            expected: {total: 3}
            send: hi
            expect: [{includes: "{{ expected.amount }}"}]
          - name: skipped evals are never rendered
            skip: not yet
            send: "{{ input.anything }}"
        """,
        [
            "spec.yaml:6:11: send: undefined variable input.city: input has no key 'city'"
            " (for the dataset row 'two', spec.yaml:5; the other row has it); it has: town",
            "spec.yaml:11:25: includes: undefined variable expected.amount: expected has no key 'amount';"
            " it has: total",
        ],
        id="inline rows, an eval without a dataset, a skipped eval",
    ),
    pytest.param(
        {},
        """
        evals:
          - name: nested
            input: {customer: {name: Ann}, city: Paris, items: [pen]}
            send: "{{ input.customer.nme }}"
            expect:
              - includes: "{{ input.city.name }}"
              - includes: "{{ input['items'][3] }}"
        """,
        [
            "spec.yaml:4:11: send: undefined variable input.customer.nme: input.customer has no key 'nme';"
            " it has: name - did you mean 'name'?",
            "spec.yaml:6:19: includes: undefined variable input.city.name: input.city is text, not a mapping"
            " with the key 'name'",
            "spec.yaml:7:19: includes: undefined variable input['items'][3]: input['items'] is a list of 1,"
            " it has no item 3",
        ],
        id="a deeper lookup names what it found",
    ),
    pytest.param(
        {"rows.jsonl": ROWS_JSONL},
        """
        dataset: data/rows.jsonl
        evals:
          - name: tolerant
            send: "{{ input.city | default('x') }}{% if input.town is defined %}{{ input.town }}{% endif %}"
            expect:
              - equals: "{{ tool_calls[0].args.city if tool_calls else input.city | default('?') }}"
              - includes: "{{ reply | length }} {{ tool_calls | map(attribute='name') | join(',') }}"
              - includes: "{{ (turn + 1) }} {{ session_id | upper }}"
        """,
        [],
        id="templates that allow a missing key, and run-time variables",
    ),
    pytest.param(
        {"rows.jsonl": ROWS_JSONL},
        """
        dataset: data/rows.jsonl
        evals:
          - name: vip discount
            send: hi
            expect:
              - includes: "{% if input.vip is defined %}{{ input.discount }}{% else %}none{% endif %}"
                value: "{{ reply }}"
        """,
        [
            "spec.yaml:6:19: includes: undefined variable input.discount: input has no key 'discount'"
            " (for the dataset row 'c', data/rows.jsonl:3; the other 2 rows render); it has: city, vip",
        ],
        id="a condition on row values, proven row by row",
    ),
    pytest.param(
        {"orders.csv": ORDERS_CSV},
        """
        dataset: data/orders.csv
        evals:
          - name: arithmetic on text
            send: hi
            expect:
              - includes: "{{ expected.total + 1 }}"
        """,
        [
            'spec.yaml:6:19: includes: template error: TypeError: can only concatenate str (not "int") to str'
            " (for all 2 rows of data/orders.csv, first the row 'r1' at data/orders.csv:2)",
        ],
        id="a template that cannot render with a row's values",
    ),
    pytest.param(
        {"orders.csv": "id,order\n" + "".join(f"r{n},A-{n}\n" for n in range(1, 2001))},
        """
        dataset: data/orders.csv
        evals:
          - name: e
            send: "{{ input.ordr }}"
            expect: [succeeded]
        """,
        [
            "spec.yaml:4:11: send: undefined variable input.ordr: input has no key 'ordr'"
            " (for all 2,000 rows of data/orders.csv, first the row 'r1' at data/orders.csv:2); it has:"
            " order - did you mean 'order'?",
        ],
        id="many failing rows make one line",
    ),
    pytest.param(
        {"orders.csv": ORDERS_CSV},
        """
        dataset: data/orders.csv
        evals:
          - name: block
            send: hi
            expect:
              - judge: closed_qa
                criteria: |
                  Does the reply say the total?
                  It is {{ expected.total }} {{ expected.currency | upper }}.
        """,
        [
            "spec.yaml:9:11: criteria: undefined variable expected.currency: expected has no key 'currency'"
            " (for all 2 rows of data/orders.csv, first the row 'r1' at data/orders.csv:2); it has: total",
        ],
        id="a block template's own line",
    ),
]


@pytest.mark.parametrize(("data", "spec", "problems"), PROOFS)
def test_templates_are_proven_against_every_row(demo_project, data, spec, problems):
    for name, text in data.items():
        _data(demo_project, name, text)
    assert _validate(demo_project, spec) == problems


def test_project_file_templates_name_the_eval(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "specengine.yaml").write_text(
        """\
endpoints:
  support:
    protocol: http
    url: http://127.0.0.1:9/ask
    body: {question: "{{ message }}", customer: "{{ input.customer_id }}"}
    reply: json.answer
judges:
  grounded:
    criteria: Does the reply state the refund of {{ expected.refund }}?
defaults: {endpoint: support}
""",
        encoding="utf-8",
    )
    _data(tmp_path, "orders.csv", ORDERS_CSV)
    spec = """
    dataset: data/orders.csv
    evals:
      - name: refunds
        send: hi
        expect:
          - judge: grounded
    """
    note = "(in the eval 'refunds', spec.yaml:3, for all 2 rows of data/orders.csv, first the row 'r1' at"
    assert _validate(tmp_path, spec) == [
        f"specengine.yaml:5:49: body: undefined variable input.customer_id: input has no key 'customer_id'"
        f" {note} data/orders.csv:2); it has: order",
        f"specengine.yaml:9:15: criteria: undefined variable expected.refund: expected has no key 'refund'"
        f" {note} data/orders.csv:2); it has: total",
    ]


def test_json_output_holds_the_same_problem(demo_project):
    _data(demo_project, "orders.csv", ORDERS_CSV)
    write_spec(demo_project, "spec.yaml", AMOUNT_SPEC)
    result = run_cli(["validate", "spec.yaml", "--format", "json"], cwd=demo_project)
    assert result.exit_code == 1
    (problem,) = json.loads(result.stdout)
    assert (problem["line"], problem["col"], problem["severity"]) == (6, 19, "error")
    assert f"{problem['path']}:6:19: {problem['message']}" == AMOUNT_PROBLEM
