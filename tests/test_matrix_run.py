"""`run --matrix` end to end: two scripted agents that differ on known cases, over a 2 × 2 matrix.

The agents (support/matrix.py) make every figure known beforehand: gpt passes all six questions,
llama fails questions 5 and 6; gpt reports 100 + 20 tokens a turn at 2.5 / 10 per million, llama
50 + 10 at 0.5 / 1. So a gpt cell passes 6 of 6 (Wilson 95%: 0.6097–1), costs 6 × 0.00045 =
0.0027 and used 720 tokens; a llama cell passes 4 of 6 (0.3000–0.9032), costs 6 × 0.000035 =
0.00021 and used 360.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from support.cli import run_cli, write_project, write_spec
from support.matrix import CELLS, FORMAL, QUESTIONS, two_agents, write_matrix_project
from support.runs import child_env, ended_on_exit, logged_ids, validate_results, wait_for_lines


@pytest.fixture(scope="module")
def agents():
    with two_agents() as pair:
        yield pair


@pytest.fixture(scope="module")
def matrix_run(agents, tmp_path_factory):
    """One full matrix run, shared by the tests that only read it."""
    folder = tmp_path_factory.mktemp("matrix")
    write_matrix_project(folder, *agents)
    for agent in agents:
        agent.clear()
    result = run_cli(["run", "spec.yaml", "--matrix", "-o", "out/r.json"], cwd=folder)
    results = json.loads((folder / "out" / "r.json").read_text(encoding="utf-8"))
    bodies = [list(agent.bodies) for agent in agents]
    return folder, result, results, bodies


def by_cell(results):
    cells = {}
    for case in results["cases"]:
        cells.setdefault(case["cell"], {})[case["id"].split(" @ ")[0]] = case["status"]
    return cells


def test_every_spec_runs_once_per_cell_with_the_cell_on_each_case(matrix_run):
    _, result, results, bodies = matrix_run
    assert result.exit_code == 1, result.output  # llama fails two questions in each of its cells
    validate_results(results)
    assert [cell["name"] for cell in results["matrix"]["cells"]] == list(CELLS)
    assert len(results["cases"]) == 4 * QUESTIONS
    assert len({case["id"] for case in results["cases"]}) == 4 * QUESTIONS
    statuses = by_cell(results)
    assert set(statuses) == set(CELLS)
    failed = {f"spec.yaml::question[q{n}]" for n in (5, 6)}
    for cell in CELLS:
        expected_failures = failed if cell.startswith("llama") else set()
        assert {case for case, status in statuses[cell].items() if status == "failed"} == expected_failures
        assert all(status == "passed" for case, status in statuses[cell].items() if case not in failed)
    # each endpoint got its two cells' questions; the formal cell's greeting is the file's text
    gpt_bodies, llama_bodies = bodies
    assert len(gpt_bodies) == len(llama_bodies) == 2 * QUESTIONS
    sent = [body["messages"][-1]["content"] for body in gpt_bodies]
    assert sum(text.startswith(f"{FORMAL} | question") for text in sent) == QUESTIONS
    assert sum(text.startswith("hi | question") for text in sent) == QUESTIONS


def test_the_cells_figures_match_the_hand_computed_ones(matrix_run):
    _, result, results, _ = matrix_run
    figures = {row["cell"]: row for row in results["summary"]["cells"]}
    assert list(figures) == list(CELLS)
    for cell in CELLS:
        row = figures[cell]
        if cell.startswith("gpt"):
            assert (row["passed"], row["failed"], row["errored"]) == (6, 0, 0)
            assert row["pass_rate"] == 1.0
            assert row["pass_rate_95"] == pytest.approx([0.6097, 1.0], abs=1e-4)
            assert row["usage"] == {"input_tokens": 600, "output_tokens": 120, "total_tokens": 720}
            assert row["cost"] == pytest.approx(0.0027)
        else:
            assert (row["passed"], row["failed"], row["errored"]) == (4, 2, 0)
            assert row["pass_rate"] == pytest.approx(4 / 6)
            assert row["pass_rate_95"] == pytest.approx([0.3000, 0.9032], abs=1e-4)
            assert row["usage"] == {"input_tokens": 300, "output_tokens": 60, "total_tokens": 360}
            assert row["cost"] == pytest.approx(0.00021)
        assert row["priced_cases"] == QUESTIONS
        assert 0 <= row["latency_p50_s"] <= row["latency_p95_s"]
    assert results["summary"]["cost"] == pytest.approx(2 * 0.0027 + 2 * 0.00021)
    # the console's table: a row per cell with the same figures
    lines = {
        line.split("  ")[0].strip(): line.split() for line in result.stdout.splitlines() if " · " in line
    }
    assert lines["gpt · formal"][3:9] == ["100.0%", "61–100%", "6", "0", "0", "–"]
    assert lines["llama · hi"][3:9] == ["66.7%", "30–90%", "4", "2", "0", "–"]
    assert lines["gpt · hi"][-2:] == ["720", "0.0027"]
    assert lines["llama · formal"][-2:] == ["360", "0.00021"]


def test_plan_shows_the_cells_and_their_case_counts_before_anything_is_sent(agents, tmp_path):
    write_matrix_project(tmp_path, *agents)
    before = [agent.hits() for agent in agents]
    result = run_cli(["plan", "spec.yaml", "--matrix", "--json"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert [(cell["name"], cell["cases"]) for cell in plan["cells"]] == [(name, QUESTIONS) for name in CELLS]
    assert plan["cells"][0]["vars"] == {"greeting": "formal"}
    assert plan["cells"][0]["values"] == {"greeting": FORMAL}
    assert len(plan["cases"]) == 4 * QUESTIONS
    text = run_cli(["plan", "spec.yaml", "--matrix", "--cell", "llama,hi"], cwd=tmp_path)
    assert "1 cell:\n  llama · hi: 6 cases (endpoint llama; greeting=hi)" in text.stdout
    assert [agent.hits() for agent in agents] == before


def test_budgets_fail_the_run_naming_the_cell_and_the_figure(agents, tmp_path):
    write_matrix_project(tmp_path, *agents, budgets={"pass_rate_at_least": 0.8})
    result = run_cli(
        [
            "run",
            "spec.yaml",
            "--matrix",
            "--budget",
            "cost_below=0.001",
            "-o",
            "out/b.json",
            "--junit",
            "out/j.xml",
        ],
        cwd=tmp_path,
    )
    assert result.exit_code == 1
    assert (
        "FAILED budget pass_rate_at_least: pass rate 66.7% in cell llama · formal: needs at least 80.0%"
        in (result.stdout)
    )
    assert "FAILED budget cost_below: cost 0.0027 in cell gpt · hi: needs below 0.0010" in result.stdout
    assert "4 budgets kept" in result.stdout  # pass rate in the gpt cells, cost in the llama cells
    annotations = run_cli(["report", "out/b.json", "--github"], cwd=tmp_path).stdout.splitlines()
    assert "::error title=budget cost_below::cost 0.0027 in cell gpt · hi: needs below 0.0010" in annotations
    summary = json.loads((tmp_path / "out" / "b.json").read_text(encoding="utf-8"))["summary"]
    broken = {(b["name"], b["cell"]) for b in summary["budgets"] if b["status"] != "passed"}
    assert broken == {
        ("pass_rate_at_least", "llama · formal"),
        ("pass_rate_at_least", "llama · hi"),
        ("cost_below", "gpt · formal"),
        ("cost_below", "gpt · hi"),
    }
    # JUnit: a budgets suite, a testcase per budget and cell, the broken ones failed
    import xml.etree.ElementTree as ET

    suite = ET.parse(tmp_path / "out" / "j.xml").getroot().find("testsuite[@name='budgets']")
    assert suite is not None and (suite.get("tests"), suite.get("failures")) == ("8", "4")
    failed = suite.find("testcase[@name='cost_below [gpt · hi]']/failure")
    assert failed is not None and "cost 0.0027 in cell gpt · hi" in failed.get("message", "")
    # the gpt cells alone keep the pass rate: every case passed and the budget held, exit 0
    kept = run_cli(
        ["run", "spec.yaml", "--cell", "gpt,hi", "--cell", "gpt · formal", "-o", "out/k.json"], cwd=tmp_path
    )
    assert kept.exit_code == 0, kept.output


def test_rerun_failed_runs_only_the_failed_cases_of_each_cell(agents, matrix_run):
    folder, _, _, _ = matrix_run
    for agent in agents:
        agent.clear()
    rerun = run_cli(
        ["run", "spec.yaml", "--matrix", "--rerun-failed", "out/r.json", "-o", "out/f.json"], cwd=folder
    )
    assert rerun.exit_code == 1, rerun.output
    results = json.loads((folder / "out" / "f.json").read_text(encoding="utf-8"))
    assert sorted(case["id"] for case in results["cases"]) == sorted(
        f"spec.yaml::question[q{n}] @ {cell}" for n in (5, 6) for cell in ("llama · formal", "llama · hi")
    )
    assert [agent.hits() for agent in agents] == [0, 4]


def test_a_cost_budget_without_a_price_is_an_error_not_a_pass(agents, tmp_path):
    gpt, _ = agents
    write_project(tmp_path, endpoints={"agent": gpt.endpoint()})
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: question 1, expect: [{includes: right}]}]")
    result = run_cli(["run", "spec.yaml", "--budget", "cost_below=1", "-o", "out/c.json"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "ERROR budget cost_below: cost_below 1: no cost: its endpoint has no price:" in result.stdout


def test_a_matrix_on_the_command_line_and_vars_in_endpoint_settings(agents, tmp_path):
    gpt, _ = agents
    endpoint = gpt.endpoint(
        extra_body={"temperature": "{{ vars.temperature }}"}, model="m-{{ vars.temperature }}"
    )
    write_project(tmp_path, endpoints={"gpt": endpoint})
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: question 1, expect: [{includes: right}]}]")
    gpt.clear()
    result = run_cli(
        ["run", "spec.yaml", "--matrix", "vars.temperature=0,0.7", "-o", "out/t.json"], cwd=tmp_path
    )
    assert result.exit_code == 0, result.output
    sent = sorted((body["temperature"], body["model"]) for body in gpt.bodies)
    assert sent == [(0, "m-0"), (0.7, "m-0.7")]
    results = json.loads((tmp_path / "out" / "t.json").read_text(encoding="utf-8"))
    assert [case["cell"] for case in results["cases"]] == ["0", "0.7"]


def test_resume_after_an_interrupt_in_the_middle_of_a_matrix(agents, tmp_path):
    gpt, llama = agents
    from support.matrix import script_agents

    script_agents(gpt, llama, delay=0.3)
    try:
        write_matrix_project(tmp_path, gpt, llama)
        output = tmp_path / "out" / "r.json"
        log = tmp_path / "out" / "r.jsonl"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specengine",
                "run",
                "spec.yaml",
                "--matrix",
                "-j",
                "1",
                "-o",
                str(output),
            ],
            cwd=tmp_path,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with ended_on_exit(process):
            wait_for_lines(log, 4, process)
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=30)
        assert process.returncode == 130, stdout + stderr
        finished = logged_ids(log)
        assert 4 <= len(finished) < 4 * QUESTIONS
        script_agents(gpt, llama)
        gpt.clear()
        llama.clear()
        resumed = run_cli(["run", "spec.yaml", "--matrix", "-o", str(output), "--resume"], cwd=tmp_path)
    finally:
        script_agents(gpt, llama)
    assert resumed.exit_code == 1, resumed.output
    assert gpt.hits() + llama.hits() == 4 * QUESTIONS - len(finished)  # only what the log lacked
    results = json.loads(output.read_text(encoding="utf-8"))
    validate_results(results)
    ids = [case["id"] for case in results["cases"]]
    assert len(ids) == len(set(ids)) == 4 * QUESTIONS
    figures = {row["cell"]: (row["passed"], row["failed"]) for row in results["summary"]["cells"]}
    assert figures == {
        "gpt · formal": (6, 0),
        "gpt · hi": (6, 0),
        "llama · formal": (4, 2),
        "llama · hi": (4, 2),
    }


def test_shards_of_a_matrix_merge_into_the_whole_run(agents, tmp_path, matrix_run):
    write_matrix_project(tmp_path, *agents)
    for index in (1, 2):
        shard = run_cli(
            ["run", "spec.yaml", "--matrix", "--shard", f"{index}/2", "-o", f"out/s{index}.json"],
            cwd=tmp_path,
        )
        assert shard.exit_code in (0, 1), shard.output
    merged = run_cli(["merge", "out/s1.json", "out/s2.json", "-o", "out/m.json"], cwd=tmp_path)
    assert merged.exit_code in (0, 1), merged.output
    results = json.loads((tmp_path / "out" / "m.json").read_text(encoding="utf-8"))
    validate_results(results)
    _, _, whole, _ = matrix_run
    assert sorted(case["id"] for case in results["cases"]) == sorted(case["id"] for case in whole["cases"])
    assert by_cell(results) == by_cell(whole)
    counted = {
        row["cell"]: (row["passed"], row["failed"], row.get("cost")) for row in results["summary"]["cells"]
    }
    expected = {
        row["cell"]: (row["passed"], row["failed"], row.get("cost")) for row in whole["summary"]["cells"]
    }
    assert counted == expected


def test_two_cells_compared_pair_by_pair(matrix_run):
    folder, _, _, _ = matrix_run
    result = run_cli(["compare", "out/r.json", "--cell", "gpt,hi", "--cell", "llama · hi"], cwd=folder)
    assert result.exit_code == 1  # questions 5 and 6 pass on gpt, fail on llama: regressions
    assert "2 regressions" in result.stdout
    assert "6 cases matched" in result.stdout
    assert (
        "paired over 6 cases: 4 passed in both, 0 in neither; 2 passed only in gpt · hi, 0 only in llama · hi"
        in (result.stdout)
    )
    assert "exact McNemar test: no significant difference (p = 0.500, at 0.05)" in result.stdout
    as_json = run_cli(
        ["compare", "out/r.json", "--cell", "gpt,hi", "--cell", "llama,hi", "--json"], cwd=folder
    )
    pair = json.loads(as_json.stdout)["paired"]
    assert (pair["only_base"], pair["only_head"], pair["p_value"]) == (2, 0, 0.5)
    same = run_cli(["compare", "out/r.json", "out/r.json", "--cell", "llama,formal"], cwd=folder)
    assert same.exit_code == 0
    assert "6 cases matched" in same.stdout
    missing = run_cli(["compare", "out/r.json", "--cell", "gpt,hi", "--cell", "mistral"], cwd=folder)
    assert missing.exit_code == 2
    assert "no cell 'mistral'" in missing.stderr


def test_regrade_takes_a_cell(matrix_run):
    folder, _, _, _ = matrix_run
    result = run_cli(["regrade", "out/r.json", "--cell", "llama,formal", "-o", "out/g.json"], cwd=folder)
    assert result.exit_code == 1, result.output
    regraded = json.loads((folder / "out" / "g.json").read_text(encoding="utf-8"))
    assert {case["cell"] for case in regraded["cases"]} == {"llama · formal"}
    assert [row["cell"] for row in regraded["summary"]["cells"]] == ["llama · formal"]
    assert "match no eval" not in result.output


def test_matrix_mistakes_are_found_before_anything_runs(agents, tmp_path):
    write_matrix_project(tmp_path, *agents)
    write_spec(
        tmp_path, "spec.yaml", "evals: [{name: a, send: '{{ vars.greting }}', expect: [{includes: right}]}]"
    )
    before = [agent.hits() for agent in agents]
    result = run_cli(["run", "spec.yaml", "--matrix", "-o", "out/x.json"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "spec.yaml:1:" in result.stderr and "greting" in result.stderr and "greeting" in result.stderr
    project = (tmp_path / "specengine.yaml").read_text(encoding="utf-8").replace("- llama", "- lama")
    (tmp_path / "specengine.yaml").write_text(project, encoding="utf-8")
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: hi, expect: [{includes: right}]}]")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "specengine.yaml:19:5: unknown endpoint 'lama' - did you mean 'llama'?" in result.stdout
    project = project.replace("- lama", "- llama").replace(
        "protocol: openai-chat", "system: '{{ vars.greting }}'\n    protocol: openai-chat", 1
    )
    (tmp_path / "specengine.yaml").write_text(project, encoding="utf-8")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "system: no vars.greting in the matrix - did you mean 'greeting'?" in result.stdout
    wrong_cell = run_cli(["run", "spec.yaml", "--cell", "gpt,nope"], cwd=tmp_path)
    assert wrong_cell.exit_code == 2
    assert [agent.hits() for agent in agents] == before


def test_ask_reads_an_endpoints_vars_in_a_cell(agents, tmp_path):
    gpt, _ = agents
    endpoint = gpt.endpoint(model="m-{{ vars.temperature }}")
    write_project(tmp_path, endpoints={"gpt": endpoint}, matrix={"vars": {"temperature": [0, 0.7]}})
    gpt.clear()
    first = run_cli(["ask", "gpt", "question 1"], cwd=tmp_path)
    assert first.exit_code == 0, first.output
    chosen = run_cli(["ask", "gpt", "question 1", "--cell", "0.7"], cwd=tmp_path)
    assert chosen.exit_code == 0, chosen.output
    assert [body["model"] for body in gpt.bodies] == ["m-0", "m-0.7"]
    write_project(tmp_path, endpoints={"gpt": endpoint})
    without = run_cli(["ask", "gpt", "question 1"], cwd=tmp_path)
    assert without.exit_code == 2
    assert "reads {{ vars }}" in without.stderr and "no matrix vars" in without.stderr
