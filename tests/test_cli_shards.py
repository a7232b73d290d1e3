"""`run --shard i/n` and `specengine merge` on real runs: every case in exactly one shard, a stable
split, a plan fingerprint shared by the shards, and a merged file that reads like one whole run.

The suite is 30 cases (a 28-row CSV dataset and a second spec of 2 evals), run against the scripted
agent on 127.0.0.1, which counts every request it gets.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliResult, run_cli, write_project, write_spec
from support.runs import validate_results
from support.servers import AgentServer

from specengine.results.decode import read_selection
from specengine.results.selection import coverage

ROWS = [f"row-{n:02d}" for n in range(1, 29)]
FAILING = {"row-05", "row-17", "row-23"}  # the agent answers these wrongly
BULK = """\
suite: bulk
dataset: data/words.csv
evals:
  - name: echo
    send: "say {{ input.word }}"
    expect:
      - includes: "{{ input.word }}"
"""
EXTRA = """\
suite: extra
evals:
  - {name: hello, send: hello, expect: [{includes: hello}]}
  - {name: bye, send: bye, expect: [{includes: bye}]}
"""
ALL_IDS = [f"specs/bulk.yaml::echo[{row}]" for row in ROWS] + [
    "specs/extra.yaml::hello",
    "specs/extra.yaml::bye",
]
NO_GITHUB = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


def word(row: str) -> str:
    return row.replace("row-", "w")


def agent(messages: list[dict[str, Any]]) -> str:
    text = messages[-1]["content"]
    wrong = {f"say {word(row)}" for row in FAILING}
    return "I would rather not." if text in wrong else f"You said: {text}"


def write_suite(folder: Path, rows: list[str] = ROWS) -> None:
    csv = "id,word\n" + "".join(f"{row},{word(row)}\n" for row in rows)
    (folder / "specs" / "data").mkdir(parents=True, exist_ok=True)
    (folder / "specs" / "data" / "words.csv").write_text(csv, encoding="utf-8")
    write_spec(folder, "specs/bulk.yaml", BULK)
    write_spec(folder, "specs/extra.yaml", EXTRA)


class Suite:
    """The project folder, the agent it talks to, and helpers to run and read results."""

    def __init__(self, folder: Path, server: AgentServer) -> None:
        self.folder = folder
        self.server = server
        self.shard_messages: list[str] = []  # what the agent received while the three shards ran

    def cli(self, *args: str | Path, cwd: Path | None = None) -> CliResult:
        return run_cli([str(a) for a in args], cwd=cwd or self.folder, env=NO_GITHUB)

    def run(self, output: str, *args: str, cwd: Path | None = None) -> dict[str, Any]:
        """`run specs` (-j 4 unless given: the test server's listen backlog is small) -> results."""
        folder = cwd or self.folder
        jobs = () if "-j" in args else ("-j", "4")
        cli = self.cli("run", "specs", "--output", output, *jobs, *args, cwd=folder)
        assert cli.exit_code in (0, 1), cli.output
        return json.loads((folder / output).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    with AgentServer() as server:
        server.script(agent)
        folder = tmp_path_factory.mktemp("shards")
        write_project(folder, endpoints={"agent": server.endpoint()})
        write_suite(folder)
        yield Suite(folder, server)


@pytest.fixture(scope="module")
def shards(suite) -> list[dict[str, Any]]:
    """The three shards, run one after the other; the agent must see each case exactly once."""
    before = suite.server.hits()
    results = [suite.run(f"shards/r{i}.json", "--shard", f"{i}/3") for i in (1, 2, 3)]
    suite.shard_messages = [body["messages"][-1]["content"] for body in suite.server.bodies[before:]]
    return results


def ids(results: dict[str, Any]) -> list[str]:
    return [c["id"] for c in results["cases"]]


# ---------------------------------------------------------------------------------------------------
# Running shards


def test_every_case_runs_in_exactly_one_shard(shards):
    per_shard = [ids(r) for r in shards]
    assert all(per_shard), f"a shard got no case: {[len(s) for s in per_shard]}"
    flat = [case_id for shard in per_shard for case_id in shard]
    assert len(flat) == len(set(flat)) == 30  # no case in two shards
    assert set(flat) == set(ALL_IDS)
    for results in shards:
        assert results["summary"]["cases"] == len(results["cases"])
        validate_results(results)


def test_the_agent_gets_each_case_once_across_the_shards(suite, shards):
    assert len(suite.shard_messages) == 30
    assert sorted(suite.shard_messages) == sorted([f"say {word(row)}" for row in ROWS] + ["hello", "bye"])


def test_results_carry_the_shard_and_one_plan_hash(shards):
    infos = [r["shard"] for r in shards]
    assert [(s["index"], s["count"]) for s in infos] == [(1, 3), (2, 3), (3, 3)]
    hashes = {s["plan_hash"] for s in infos}
    assert len(hashes) == 1
    assert all(isinstance(h, str) and len(h) >= 8 for h in hashes)
    for i, results in enumerate(shards, 1):  # each a lone shard: a partial run of the whole plan
        selected = len(results["cases"])
        assert results["selection"] == {
            "paths": ["specs"],
            "shard": f"{i}/3",
            "plan_cases": 30,
            "selected_cases": selected,
        }
        assert coverage(read_selection(results), selected).text() == f"partial: --shard {i}/3"


def test_the_split_is_stable_across_runs(suite, shards):
    again = [suite.run(f"again/r{i}.json", "--shard", f"{i}/3", "-j", "1") for i in (1, 2, 3)]
    assert [ids(r) for r in again] == [ids(r) for r in shards]
    assert [r["shard"] for r in again] == [r["shard"] for r in shards]
    assert [r["run_id"] for r in again] != [r["run_id"] for r in shards]


def test_the_split_follows_case_ids_not_file_order(suite, shards, tmp_path):
    """Ids survive reordering, and so does each case's shard (the plan fingerprint may change)."""
    copy = tmp_path / "reordered"
    shutil.copytree(suite.folder, copy, ignore=shutil.ignore_patterns("shards", "again", "*.json*"))
    write_suite(copy, list(reversed(ROWS)))
    reordered = [suite.run(f"r{i}.json", "--shard", f"{i}/3", cwd=copy) for i in (1, 2, 3)]
    assert [sorted(ids(r)) for r in reordered] == [sorted(ids(r)) for r in shards]


def test_an_empty_shard_still_writes_its_results(suite, tmp_path):
    # two cases cannot fill three shards: at least one shard gets nothing, and says so
    runs = [
        suite.cli("run", "specs/extra.yaml", "--output", tmp_path / f"e{i}.json", "--shard", f"{i}/3")
        for i in (1, 2, 3)
    ]
    assert [r.exit_code for r in runs] == [0, 0, 0], [r.output for r in runs]
    results = [json.loads((tmp_path / f"e{i}.json").read_text(encoding="utf-8")) for i in (1, 2, 3)]
    assert sorted(len(r["cases"]) for r in results)[0] == 0
    assert sum(len(r["cases"]) for r in results) == 2
    for r in results:
        validate_results(r)
    merged = suite.cli(
        "merge", *(tmp_path / f"e{i}.json" for i in (1, 2, 3)), "--output", tmp_path / "e.json"
    )
    assert merged.exit_code == 0, merged.output
    assert ids(json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))) == ALL_IDS[-2:]


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ("0/3", "--shard 0/3: i must be between 1 and n"),
        ("4/3", "--shard 4/3: i must be between 1 and n"),
        ("x", "--shard takes i/n, e.g. 1/4 (got 'x')"),
        ("2", "--shard takes i/n, e.g. 1/4 (got '2')"),
        ("1/0", "--shard 1/0: i must be between 1 and n"),
        ("-1/3", "--shard takes i/n"),
    ],
)
def test_a_bad_shard_exits_2_with_a_message_and_sends_nothing(suite, shard, message, tmp_path):
    before = suite.server.hits()
    cli = suite.cli("run", "specs", "--output", tmp_path / "r.json", f"--shard={shard}")
    assert cli.exit_code == 2, cli.output
    assert message in cli.stderr
    assert suite.server.hits() == before
    assert not (tmp_path / "r.json").exists()
    assert "Traceback" not in cli.output


# ---------------------------------------------------------------------------------------------------
# Merging shards


def merge_cli(suite: Suite, *inputs: str | Path, output: Path, extra: tuple[str, ...] = ()) -> CliResult:
    return suite.cli("merge", *inputs, "--output", output, *extra)


def shard_paths(suite: Suite) -> list[Path]:
    return [suite.folder / "shards" / f"r{i}.json" for i in (1, 2, 3)]


def test_shard_auto_takes_the_ci_engines_job_and_says_so(suite, shards):
    env = {**NO_GITHUB, "CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3"}
    cli = run_cli(
        ["run", "specs", "-j", "4", "--shard", "auto", "-o", "auto/r2.json"], cwd=suite.folder, env=env
    )
    assert cli.exit_code in (0, 1), cli.output
    assert "shard 2/3 from GitLab CI (CI_NODE_INDEX=2, CI_NODE_TOTAL=3)" in cli.stderr
    results = json.loads((suite.folder / "auto/r2.json").read_text(encoding="utf-8"))
    assert ids(results) == ids(shards[1]) and results["shard"]["index"] == 2
    assert results["selection"]["shard"] == "2/3"  # as resolved, not `auto`
    missing = run_cli(["run", "specs", "--shard", "auto"], cwd=suite.folder, env=NO_GITHUB)
    assert missing.exit_code == 2 and "CI_NODE_INDEX" in missing.stderr


def test_merge_gives_one_results_file_like_a_whole_run(suite, shards, tmp_path):
    whole = suite.run("whole.json")
    out = tmp_path / "ALL.json"
    # inputs in any order: the merged file is in plan order
    cli = merge_cli(suite, *reversed(shard_paths(suite)), output=out)
    assert cli.exit_code == 0, cli.output
    merged = json.loads(out.read_text(encoding="utf-8"))
    validate_results(merged)
    assert "shard" not in merged
    assert ids(merged) == ids(whole) == ALL_IDS
    # every shard of the plan merged: a full run, as the whole run is
    everything = {"paths": ["specs"], "plan_cases": 30, "selected_cases": 30}
    assert merged["selection"] == whole["selection"] == everything
    assert coverage(read_selection(merged), 30).full
    summary = merged["summary"]
    counts = {key: summary[key] for key in ("cases", "passed", "failed", "errored", "skipped")}
    assert counts == {"cases": 30, "passed": 27, "failed": 3, "errored": 0, "skipped": 0}
    assert counts == {key: whole["summary"][key] for key in counts}
    failed = sorted(c["id"] for c in merged["cases"] if c["status"] == "failed")
    assert failed == sorted(f"specs/bulk.yaml::echo[{row}]" for row in FAILING)
    assert "30 cases, 27 passed, 3 failed, 0 errored, 0 skipped (pass rate 90.0%)" in cli.stderr

    # the merged file works wherever a results file does
    same = suite.cli("compare", "whole.json", out, "--json")
    assert same.exit_code == 0, same.output
    comparison = json.loads(same.stdout)
    assert (comparison["matched"], comparison["new"], comparison["removed"]) == (30, [], [])
    junit = suite.cli("report", out, "--junit", tmp_path / "all.xml")
    assert junit.exit_code == 0, junit.output
    assert (tmp_path / "all.xml").read_text(encoding="utf-8").count("<testcase ") == 30


def test_merge_with_min_pass_rate_is_runs_gate_over_the_whole(suite, shards, tmp_path):
    out = tmp_path / "ALL.json"
    at = merge_cli(suite, *shard_paths(suite), output=out, extra=("--min-pass-rate", "0.9"))
    assert at.exit_code == 0, at.output  # 27 of 30: exactly 90%
    below = merge_cli(suite, *shard_paths(suite), output=out, extra=("--min-pass-rate", "0.95"))
    assert below.exit_code == 1, below.output
    assert "failed: pass rate 90.0%, below --min-pass-rate 95.0%" in below.stderr
    assert ids(json.loads(out.read_text(encoding="utf-8"))) == ALL_IDS  # written all the same
    budgeted = []
    for path in shard_paths(suite):  # shards run with `budgets: {pass_rate_at_least: 0.95}`
        data = json.loads(path.read_text(encoding="utf-8"))
        budgeted.append(tmp_path / path.name)
        budgeted[-1].write_text(
            json.dumps({**data, "budgets": {"pass_rate_at_least": 0.95}}), encoding="utf-8"
        )
    broken = merge_cli(suite, *budgeted, output=out, extra=("--min-pass-rate", "0.5"))
    assert broken.exit_code == 1, broken.output
    assert "FAILED budget pass_rate_at_least: pass rate 90.0%: needs at least 95.0%" in broken.stderr
    assert merge_cli(suite, *budgeted, output=out).exit_code == 0  # without the flag: written, exit 0


def test_merge_to_stdout(suite, shards):
    cli = suite.cli("merge", *shard_paths(suite), "--output", "-")
    assert cli.exit_code == 0, cli.output
    assert ids(json.loads(cli.stdout)) == ALL_IDS


def refused(cli: CliResult, output: Path, *fragments: str) -> None:
    assert cli.exit_code == 2, cli.output
    for fragment in fragments:
        assert fragment in cli.stderr
    assert cli.stderr.startswith("error: ")
    assert "Traceback" not in cli.output
    assert not output.exists()


def test_merge_refuses_the_same_shard_twice(suite, shards, tmp_path):
    r1, r2, _ = shard_paths(suite)
    out = tmp_path / "ALL.json"
    refused(merge_cli(suite, r1, r2, r1, output=out), out, "shard 1 appears twice", str(r1))


def test_merge_refuses_overlapping_whole_runs(suite, shards, tmp_path):
    first = suite.run("overlap-a.json", "-k", "row-0")
    second = suite.run("overlap-b.json", "-k", "row-")
    overlap = set(ids(first)) & set(ids(second))
    assert len(overlap) == 9
    out = tmp_path / "ALL.json"
    cli = merge_cli(suite, "overlap-a.json", "overlap-b.json", output=out)
    refused(cli, out, "9 case id(s) appear in more than one input", "'specs/bulk.yaml::echo[row-01]'")


def test_merge_refuses_shards_of_different_plans(suite, shards, tmp_path):
    changed = tmp_path / "changed"
    shutil.copytree(suite.folder, changed, ignore=shutil.ignore_patterns("shards", "again", "*.json*"))
    write_spec(changed, "specs/extra.yaml", EXTRA + "  - {name: new one, send: new, expect: [succeeded]}\n")
    third = suite.run("r3.json", "--shard", "3/3", cwd=changed)
    assert third["shard"]["plan_hash"] != shards[0]["shard"]["plan_hash"]
    r1, r2, _ = shard_paths(suite)
    out = tmp_path / "ALL.json"
    cli = merge_cli(suite, r1, r2, changed / "r3.json", output=out)
    refused(cli, out, "shards of different plans", str(r1), str(changed / "r3.json"))


def test_merge_refuses_shards_run_with_different_selections(suite, shards, tmp_path):
    narrowed = suite.run("narrow-2.json", "--shard", "2/3", "-k", "echo")
    assert narrowed["shard"]["plan_hash"] != shards[0]["shard"]["plan_hash"]
    r1, _, r3 = shard_paths(suite)
    out = tmp_path / "ALL.json"
    refused(merge_cli(suite, r1, "narrow-2.json", r3, output=out), out, "shards of different plans")


def test_merge_refuses_a_missing_shard_unless_partial_is_allowed(suite, shards, tmp_path):
    r1, _, r3 = shard_paths(suite)
    out = tmp_path / "ALL.json"
    refused(
        merge_cli(suite, r1, r3, output=out),
        out,
        "only 2 of 3 shards given (shard index 1, 3)",
        "--allow-partial",
    )
    cli = merge_cli(suite, r1, r3, output=out, extra=("--allow-partial",))
    assert cli.exit_code == 0, cli.output
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert len(merged["cases"]) == len(shards[0]["cases"]) + len(shards[2]["cases"])
    assert merged["summary"]["cases"] == len(merged["cases"])
    validate_results(merged)
    assert merged["selection"]["shard"] == "1,3/3"
    assert merged["selection"]["selected_cases"] == len(merged["cases"])
    assert coverage(read_selection(merged), len(merged["cases"])).text() == "partial: --shard 1,3/3"


def test_merge_refuses_shards_of_different_splits(suite, shards, tmp_path):
    halves = [suite.run(f"half{i}.json", "--shard", f"{i}/2") for i in (1, 2)]
    assert {r["shard"]["plan_hash"] for r in halves} == {shards[0]["shard"]["plan_hash"]}
    r1, r2, _ = shard_paths(suite)
    out = tmp_path / "ALL.json"
    refused(merge_cli(suite, r1, r2, "half2.json", output=out), out, "shards of different splits")


def test_merge_refuses_mixing_shards_with_a_whole_run(suite, shards, tmp_path):
    suite.run("whole-for-mix.json", "-k", "extra")
    r1, r2, r3 = shard_paths(suite)
    out = tmp_path / "ALL.json"
    cli = merge_cli(suite, r1, r2, r3, "whole-for-mix.json", output=out)
    refused(cli, out, "cannot mix shard results with whole-run results", "whole-for-mix.json")


def test_limit_takes_the_first_cases_of_the_plan_before_splitting(suite):
    whole = suite.run("limited/whole.json", "--limit", "10")
    parts = [suite.run(f"limited/r{i}.json", "--limit", "10", "--shard", f"{i}/3") for i in (1, 2, 3)]
    assert len(ids(whole)) == 10
    assert sorted(case_id for part in parts for case_id in ids(part)) == sorted(ids(whole))
    assert len({part["shard"]["plan_hash"] for part in parts}) == 1
    merged = suite.cli("merge", *(f"limited/r{i}.json" for i in (1, 2, 3)), "--output", "limited/all.json")
    assert merged.exit_code == 0, merged.output
    joined = json.loads((suite.folder / "limited" / "all.json").read_text(encoding="utf-8"))
    limited = {"paths": ["specs"], "limit": 10, "selected_cases": 10}  # the plan's size: not counted
    assert joined["selection"] == whole["selection"] == limited
    assert coverage(read_selection(joined), 10).text() == "partial: --limit 10"
