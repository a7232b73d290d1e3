"""Hostile files: YAML alias bombs, templates that would work forever, datasets of millions of rows.

Each file is made by a fixture here; what it costs is read from the CLI process's own peak memory
and CPU (support/measured.py), as the network bomb tests of test_transport.py do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import write_project, write_spec
from support.measured import run_measured
from support.servers import AgentServer, Reply

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="reads the peak from /proc (Linux)"
)

MAX_RSS_MB = 150
MAX_CPU_S = 5.0


def alias_bomb(indent: str) -> str:
    """Nine anchors, each listing the one before nine times: 9^9 values from a few hundred bytes."""
    lines = [f'{indent}a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for before, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{indent}{name}: &{name} [" + ",".join(f"*{before}" for _ in range(9)) + "]")
    return "\n".join(lines) + "\n"


SPEC = "evals:\n  - name: hi\n    send: Hi\n    expect: [succeeded]\n"


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("where", ["spec metadata", "project x-key"])
def test_a_yaml_alias_bomb_is_refused_at_its_anchor_in_little_memory(tmp_path, command, where):
    bomb = alias_bomb("  ")
    assert len(bomb) < 500
    endpoint = {"agent": "http://127.0.0.1:9/v1"}
    if where == "spec metadata":
        write_project(tmp_path, endpoints=endpoint)
        spec_file = write_spec(tmp_path, "spec", "metadata:\n" + bomb + SPEC)
        shown, anchor_lines = "spec.yaml", range(2, 11)
    else:
        project = write_project(tmp_path, endpoints=endpoint)
        project.write_text("x-bomb:\n" + bomb + project.read_text())
        spec_file = write_spec(tmp_path, "spec", SPEC)
        shown, anchor_lines = "specengine.yaml", range(2, 11)
    measured = run_measured([command, spec_file.name], tmp_path)
    assert measured.result.exit_code != 0
    problem = next(line for line in measured.result.output.splitlines() if "alias bomb" in line)
    file, line, _col, message = problem.split(":", 3)
    assert file == shown and int(line) in anchor_lines, problem
    assert "more than the 100,000 a file may add through aliases" in message
    assert measured.peak_mb < MAX_RSS_MB, measured.peak_mb
    assert measured.cpu_s < MAX_CPU_S, measured.cpu_s


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(tmp_path, "spec", "metadata:\n  loop: &loop [1, *loop]\n" + SPEC)
    measured = run_measured(["validate", "spec.yaml"], tmp_path)
    assert measured.result.exit_code == 1
    assert "spec.yaml:2:" in measured.result.output
    assert "sits inside its own anchor" in measured.result.output


def test_anchors_and_merge_keys_within_the_bound_still_load(tmp_path, run_cli):
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(
        tmp_path,
        "spec",
        """
        x-words: &words [a, b, c]
        x-base: &base {send: Hi, expect: [succeeded]}
        metadata: {lists: [*words, *words, *words]}
        evals:
          - {name: one, <<: *base}
          - {name: two, <<: *base}
        """,
    )
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 0, result.output


TEMPLATE_BOMBS = [
    pytest.param(
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "the loops ran more than 1,000,000 times",
        id="nested-loops",
    ),
    pytest.param("{{ 9**(9**9) }}", "9 ** 387420489 is a number of more than 4,300 digits", id="power"),
    pytest.param(
        "{{ input.m * 10**9 }}", "repeating 2 items 1,000,000,000 times makes more than", id="text-times"
    ),
    pytest.param(
        "{{ '%-999999999s' | format(input.m) }}", "a format width of 999,999,999", id="format-width"
    ),
    pytest.param(
        "{% set ns = namespace(s=input.m) %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "joining text with ~ makes more than 10,000,000 characters",
        id="doubling",
    ),
]


@pytest.mark.parametrize(("template", "reason"), TEMPLATE_BOMBS)
def test_validate_refuses_a_template_past_its_budget_at_its_line(tmp_path, template, reason):
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(
        tmp_path,
        "spec",
        "evals:\n  - name: costly\n    dataset: [{input: {m: ab}}]\n    send: |\n      hello\n"
        f"      {template}\n    expect: [succeeded]\n",
    )
    measured = run_measured(["validate", "spec.yaml"], tmp_path)
    assert measured.result.exit_code == 1
    assert f"spec.yaml:6:7: send: the template goes past its budget: {reason}" in measured.result.output
    assert measured.peak_mb < MAX_RSS_MB, measured.peak_mb
    assert measured.cpu_s < MAX_CPU_S, measured.cpu_s


def test_run_fails_only_the_case_whose_check_template_goes_past_its_budget(tmp_path, run_cli):
    with AgentServer() as agent:
        agent.script(lambda messages: Reply(content="ab"))
        write_project(tmp_path, endpoints={"agent": agent})
        write_spec(
            tmp_path,
            "spec",
            """
            evals:
              - name: costly
                send: Hi
                expect:
                  - includes: "{{ reply * 10**9 }}"
              - name: fine
                send: Hi
                expect:
                  - includes: "{{ reply }}"
            """,
        )
        measured = run_measured(["run", "spec.yaml", "--output", "out.json"], tmp_path)
    results = json.loads((tmp_path / "out.json").read_text())
    outcomes = {case["eval"]: case["status"] for case in results["cases"]}
    assert outcomes == {"costly": "error", "fine": "passed"}, measured.result.output
    assert (
        "spec.yaml:5: the template goes past its budget: repeating 2 items 1,000,000,000 times"
        in measured.result.output
    )
    assert measured.peak_mb < MAX_RSS_MB, measured.peak_mb


# --- datasets: millions of rows, validated in flat memory ------------------------------------------

DATASET_SPEC = (
    'evals:\n  - name: w\n    dataset: rows.csv\n    send: "Weather in {{ input.city }}"\n'
    "    expect: [succeeded]\n"
)


def write_rows(folder: Path, count: int, repeats: dict[int, int] | None = None) -> None:
    """rows.csv with `count` rows, ids r0, r1, ...; `repeats` maps a row to the earlier row whose id
    it takes (a duplicate id)."""
    repeats = repeats or {}
    with (folder / "rows.csv").open("w") as handle:
        handle.write("id,city\n")
        handle.writelines(f"r{repeats.get(index, index)},c{index}\n" for index in range(count))


def test_validating_a_large_dataset_holds_no_row_in_memory(tmp_path):
    # 600,000 rows: holding each row's id (as validate did) peaks at 116 MB, streaming them at 67
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(tmp_path, "spec", DATASET_SPEC)
    write_rows(tmp_path, 600_000)
    measured = run_measured(["validate", "spec.yaml"], tmp_path)
    assert measured.result.exit_code == 0, measured.result.output
    assert measured.peak_mb < 95, measured.peak_mb


def test_duplicate_ids_past_the_exact_part_are_named_with_both_lines(tmp_path, run_cli, monkeypatch):
    from specengine.validation import row_ids

    monkeypatch.setattr(row_ids, "EXACT_ROWS", 10)
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(tmp_path, "spec", DATASET_SPEC)
    # within the exact part, from it to past it, past it twice over, and a third use of an id
    write_rows(tmp_path, 40, repeats={5: 1, 12: 2, 20: 15, 25: 15, 7: 0, 30: 0})
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    duplicates = sorted(line for line in result.output.splitlines() if "duplicate row id" in line)
    assert duplicates == sorted(
        [
            "rows.csv:7:1: duplicate row id 'r1' (first used on line 3)",
            "rows.csv:9:1: duplicate row id 'r0' (first used on line 2)",
            "rows.csv:14:1: duplicate row id 'r2' (first used on line 4)",
            "rows.csv:22:1: duplicate row id 'r15' (first used on line 17)",
            "rows.csv:27:1: duplicate row id 'r15' (first used on line 17)",
            "rows.csv:32:1: duplicate row id 'r0' (first used on line 2)",
        ]
    ), result.output


def test_the_limits_table_states_the_limits_in_force():
    from specengine import template_budget, usage
    from specengine.results import reader
    from specengine.serve import jobs, limits
    from specengine.source import yaml_aliases
    from specengine.traces import otlp, read, store
    from specengine.untrusted_json import MAX_DEPTH
    from specengine.validation import row_ids

    docs = (Path(__file__).parent.parent / "docs" / "spec-format.md").read_text(encoding="utf-8")
    table = docs[docs.index("## Limits") :].split("\n## ")[0]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines() if line.startswith("| ")}

    def row(start: str) -> str:
        return next(line for name, line in rows.items() if name.startswith(start))

    assert f"| {yaml_aliases.MAX_ALIAS_EXPANSION:,} |" in row("YAML aliases")
    assert f"| {template_budget.MAX_LOOP_ITERATIONS:,} |" in row("a template's `{% for %}`")
    assert f"| {template_budget.MAX_OUTPUT_CHARS:,} |" in row("a template's output")
    assert f"| {template_budget.MAX_INTEGER_DIGITS:,} (" in row("a template's whole numbers")
    assert f"first {row_ids.EXACT_ROWS:,} rows and a {row_ids.FILTER_BYTES // 2**20} MB" in row(
        "dataset rows"
    )
    assert (
        f"| {reader.MAX_RESULTS_MB} MB |" in row("a results file") and reader.MAX_RESULTS_MB_VARIABLE in table
    )
    assert f"| {limits.MAX_BODY_BYTES // 2**20} MB |" in row("a request body to `specengine serve`")
    assert f"| {limits.BODY_TIMEOUT_S:g} s |" in row("a request body to `serve`, in time")
    head = f"| {limits.MAX_HEAD_BYTES // 1024} KB, {limits.HEAD_TIMEOUT_S:g} s |"
    assert head in row("a request line and headers")
    assert f"| {limits.MAX_CONNECTIONS}, {limits.KEEP_ALIVE_S} s |" in row("connections to `serve`")
    assert f"| {jobs.MAX_RUNNING} |" in row("reruns started from `serve`")
    assert f"| {MAX_DEPTH} levels |" in row("JSON in an answer") and "recorded trace" in row(
        "JSON in an answer"
    )
    assert f"| {MAX_DEPTH} levels |" in row("a row of a JSON or JSONL dataset")
    assert f"| {usage.MAX_TOKENS:,} (2^63 - 1) |" in row("token counts")
    assert f"| {otlp.MAX_LINE_BYTES // 2**20} MB |" in row("a line of a recorded-trace file")
    assert otlp.MAX_NANOS == 2**63 - 1 and "| 0 to 2^63 - 1 |" in row("a time in a recorded trace")
    assert f"| {store.MAX_CONVERSATION_BYTES // 2**20} MB |" in row("one recorded conversation")
    spans = row("the spans of an `otlp` source")
    assert f"at most {read.FLUSH_SPANS:,} spans" in spans and f"({read.FLUSH_SPANS // 2:,} by each" in spans


@pytest.mark.parametrize(
    ("name", "rows", "where"),
    [
        ("rows.jsonl", '{"input": {"city": "Oslo"}}\n{"input": {"city": DEEP}}\n', "rows.jsonl:2:1"),
        ("rows.json", '[{"input": {"city": "Oslo"}},\n {"input": {"city": DEEP}}]\n', "rows.json:2:2"),
        ("rows.json", '[{"input": {"city": "Oslo"}},\n {"input": {"city": SOME}}]\n', "rows.json:2:2"),
    ],
    ids=["jsonl 100,000 deep", "json 100,000 deep", "json 200 deep"],
)
def test_a_dataset_row_nested_past_the_limit_is_refused_at_its_line(tmp_path, run_cli, name, rows, where):
    deep, some = "[" * 100_000 + "]" * 100_000, "[" * 200 + "]" * 200
    write_project(tmp_path, endpoints={"agent": "http://127.0.0.1:9/v1"})
    write_spec(tmp_path, "spec", DATASET_SPEC.replace("rows.csv", name))
    (tmp_path / name).write_text(rows.replace("DEEP", deep).replace("SOME", some), encoding="utf-8")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1, result.output
    assert f"{where}: not valid JSON: nested deeper than 128 levels" in result.output, result.output
