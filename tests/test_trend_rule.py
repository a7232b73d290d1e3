"""One rule for "regressed", "fixed" and "flaky" (results/trend.py), held on one real history.

Three runs of one project by the real CLI, against a scripted agent: `breaks` passes twice, then
fails; `mends` fails, then passes twice; `wavers` passes in full, then one of its two trials fails;
`edited` passes with a soft check that the third run's spec makes a gate (a spec change, never a
regression). The queue (by the label the index computed as each run was indexed, and again on a
rebuild), the case history, compare and the pull-request comment must give each case the same label.
"""

from __future__ import annotations

import json
import time

from support.cli import run_cli, write_project, write_spec

from specengine.github.comment import comment_body
from specengine.index.database import RunIndex
from specengine.index.hook import index_finished_run
from specengine.index.queries import case_history as history_rows
from specengine.report.compare import compare
from specengine.results.trend import RunOutcome, trend
from specengine.serve.views import case_history

SPEC = """\
evals:
  - name: breaks
    send: breaks
    expect: [{includes: fine}]
  - name: mends
    send: mends
    expect: [{includes: fine}]
  - name: wavers
    send: wavers
    trials: 2
    expect: [{includes: fine}]
  - name: edited
    send: edited
    expect: [{includes: nowhere, soft: true}]
"""


def test_the_queue_the_history_compare_and_the_comment_agree(agent_server, tmp_path):
    waver = iter(["fine", "fine", "fine", "fine", "fine", "broken"])
    state = {"breaks": "fine", "mends": "broken"}

    def reply(messages):
        said = messages[-1]["content"]
        return next(waver) if said == "wavers" else state.get(said, "fine")

    agent_server.script(reply)
    write_project(tmp_path, endpoints={"agent": agent_server})
    runs = []
    for number in range(3):
        if number == 1:
            state["mends"] = "fine"
        if number == 2:
            state["breaks"] = "broken"
            write_spec(tmp_path, "spec.yaml", SPEC.replace("soft: true", "soft: false"))
        elif number == 0:
            write_spec(tmp_path, "spec.yaml", SPEC)
        result = run_cli(["run", "spec.yaml", "-j", "1", "--output", f"run{number}.json"], cwd=tmp_path)
        assert result.exit_code in (0, 1), result.output
        runs.append(json.loads((tmp_path / f"run{number}.json").read_text(encoding="utf-8")))
        (tmp_path / ".specengine" / "runs").mkdir(parents=True, exist_ok=True)
        indexed = tmp_path / ".specengine" / "runs" / f"run{number}.json"
        indexed.write_text(json.dumps(runs[-1]), encoding="utf-8")
        if number == 0:
            RunIndex(tmp_path).rebuild()
        else:  # as a run that ends indexes itself: each case's label moves on by one run
            assert index_finished_run(indexed)
        time.sleep(0.02)  # runs are ordered by when they started
    statuses = [{case["eval"]: case["status"] for case in run["cases"]} for run in runs]
    assert statuses[2] == {"breaks": "failed", "mends": "passed", "wavers": "failed", "edited": "failed"}
    assert statuses[1] == {"breaks": "passed", "mends": "passed", "wavers": "passed", "edited": "passed"}

    # the case history (the case page and /api/cases/history)
    with RunIndex(tmp_path).open() as conn:
        labels = {
            name: case_history(history_rows(conn, f"spec.yaml::{name}")).label
            for name in ("breaks", "mends", "wavers", "edited")
        }
    assert labels == {"breaks": "regressed", "mends": "fixed", "wavers": "flaky", "edited": None}

    # the label the index keeps for the queue: as each run moved it on, and as a rebuild finds it
    def indexed_labels() -> dict[str, str | None]:
        with RunIndex(tmp_path).open(refresh=False) as conn:
            rows = conn.execute("SELECT case_id, trend FROM latest").fetchall()
        return {row["case_id"].split("::")[1]: row["trend"] for row in rows}

    assert indexed_labels() == labels
    RunIndex(tmp_path).rebuild()
    assert indexed_labels() == labels
    with RunIndex(tmp_path).open() as conn:  # the history marks where the spec changed
        edited = case_history(history_rows(conn, "spec.yaml::edited"))
    assert [entry.spec_changed for entry in edited.entries] == [False, False, True]

    # the queue: only the agent's regression is one
    queue = json.loads(run_cli(["queue", "--dir", str(tmp_path), "--json"], cwd=tmp_path).stdout)
    regressed = [item["case"] for item in queue["items"] if item["kind"] == "regressed"]
    assert regressed == ["spec.yaml::breaks"]

    # compare, and the pull request's comment made from it, of the last two runs
    comparison = compare(runs[1], runs[2])
    assert [change.id for change in comparison.regressions] == ["spec.yaml::breaks"]
    assert [change.id for change in comparison.flaky] == ["spec.yaml::wavers"]
    assert [change.id for change in comparison.spec_changed] == ["spec.yaml::edited"]
    comment = comment_body(runs[2], comparison, "evals", None)
    assert "#### 🔻 Regressions (1)" in comment and "#### 🎲 Flaky (1)" in comment

    # the rule itself, on the same outcomes written as plain values
    def outcomes(name: str) -> list[RunOutcome]:
        found = [next(case for case in run["cases"] if case["eval"] == name) for run in runs]
        return [RunOutcome(c["status"], c["passed_trials"], c["n_trials"], c["fingerprint"] + str(
            [check["fingerprint"] for check in c["checks"]])) for c in found]  # fmt: skip

    assert {name: trend(outcomes(name)) for name in labels} == labels
