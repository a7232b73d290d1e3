"""The index of a project's runs and the review store, through real `specengine` commands.

Reviews must outlive everything that rewrites results: `regrade` (new run, same replies), `merge`
(shards joined), `--resume` (the file rewritten under a new run id) and re-indexing from nothing.
The index must follow the files: new, changed, removed and unreadable results files.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator

import pytest
from support.app_server import JUDGE_KEY, JUDGE_KEY_ENV, ServeProject
from support.cli import run_cli
from support.judge_server import JudgeServer
from support.servers import AgentServer

from specengine.index import queries
from specengine.index.database import RunIndex
from specengine.index.hook import index_finished_run
from specengine.results.decode import read_case
from specengine.review.store import ReviewStore, new_review
from specengine.review.verdicts import review_counts

OSLO = "spec.yaml::oslo"
PARIS = "spec.yaml::paris"


@pytest.fixture
def project(tmp_path) -> Iterator[ServeProject]:
    with AgentServer() as agent, JudgeServer() as judge:
        yield ServeProject.create(tmp_path, agent, judge)


def _review(project: ServeProject, run_id: str, case_id: str, check: str | None, verdict: str) -> None:
    case = next(c for c in project.results(run_id)["cases"] if c["id"] == case_id)
    review = new_review(read_case(case), run=run_id, check=check, verdict=verdict, note="n", reviewer="Ann")
    ReviewStore(project.folder).append(review)


def _reviewed(folder, run_id: str) -> dict:
    with RunIndex(folder).open() as conn:
        return queries.reviews_by_run(conn, [run_id]).get(run_id, {})


def _cli(project: ServeProject, *args: str) -> None:
    result = run_cli(list(args), cwd=project.folder, env={JUDGE_KEY_ENV: JUDGE_KEY})
    assert result.exit_code in (0, 1), result.output


def test_reviews_survive_regrade_merge_resume_and_reindexing(project):
    runs = project.folder / ".specengine" / "runs"
    first = project.run()
    judge = next(c["name"] for c in project.results(first)["cases"][1]["checks"] if c["matcher"] == "judge")
    _review(project, first, OSLO, None, "incorrect")
    _review(project, first, OSLO, judge, "incorrect")
    assert _reviewed(project.folder, first)[OSLO].overridden

    _cli(project, "regrade", f".specengine/runs/{first}.json", "--output", ".specengine/runs/regraded.json")
    regraded = json.loads((runs / "regraded.json").read_text())["run_id"]
    seen = _reviewed(project.folder, regraded)[OSLO]
    assert (seen.case.human, seen.case.verdict, seen.checks[judge].verdict) == (
        "passed",
        "incorrect",
        "incorrect",
    )

    _cli(project, "run", "spec.yaml", "--shard", "1/2", "--output", "shards/1.json")
    _cli(project, "run", "spec.yaml", "--shard", "2/2", "--output", "shards/2.json")
    _cli(project, "merge", "shards/1.json", "shards/2.json", "--output", ".specengine/runs/merged.json")
    merged = json.loads((runs / "merged.json").read_text())["run_id"]
    assert _reviewed(project.folder, merged)[OSLO].case.human == "passed"

    shutil.copy(runs / f"{first}.json", runs / "resumed.json")
    shutil.copy(runs / f"{first}.jsonl", runs / "resumed.jsonl")
    _cli(project, "run", "spec.yaml", "--output", ".specengine/runs/resumed.json", "--resume")
    resumed = json.loads((runs / "resumed.json").read_text())["run_id"]
    assert resumed != first and _reviewed(project.folder, resumed)[OSLO].case.human == "passed"

    project.agent.script({"weather in Oslo": "Sunny in Oslo"})  # a different reply is not the one reviewed
    fresh = project.run()
    assert OSLO not in _reviewed(project.folder, fresh)

    with RunIndex(project.folder).open() as conn:  # the runs page's counts, in SQL, say the same
        counted = queries.review_counts_by_run(conn)
        for run_id, reviewed in queries.reviews_by_run(conn).items():
            assert counted[run_id] == review_counts(reviewed.values())
        assert counted[first] == {"reviewed": 1, "overridden": 1, "checks_reviewed": 1, "check_overrides": 1}
        assert fresh not in counted

    RunIndex(project.folder).path.unlink()
    for run_id in (first, regraded, merged, resumed):
        assert _reviewed(project.folder, run_id)[OSLO].case.human == "passed"
    assert len(ReviewStore(project.folder).reviews()) == 2


def test_the_index_follows_the_results_files(project):
    runs = project.folder / ".specengine" / "runs"
    first = project.run()
    index = RunIndex(project.folder)
    with index.open() as conn:
        assert [r["run_id"] for r in queries.run_list(conn)] == [first]
        assert [r["status"] for r in queries.run_cases(conn, first, queries.CaseFilter())] == [
            "passed", "failed", "failed", "passed"
        ]  # fmt: skip

    (runs / "broken.json").write_text('{"run_id": "x", "cases": [', encoding="utf-8")
    (runs / "copy.json").write_bytes((runs / f"{first}.json").read_bytes())
    data = project.results(first)
    data["cases"] = data["cases"][:1]
    data["run_id"] = "edited"
    (runs / "edited.json").write_text(json.dumps(data), encoding="utf-8")
    with index.open() as conn:
        problems = {p.file: p.message for p in index.problems(conn)}
        assert set(problems) == {"broken.json", "copy.json"}
        assert "not valid JSON" in problems["broken.json"]
        assert problems["copy.json"] == f"run id {first} is already indexed from {first}.json"
        assert {r["run_id"]: r["cases"] for r in queries.run_list(conn)} == {first: 4, "edited": 1}

    data["cases"] = project.results(first)["cases"][:2]
    (runs / "edited.json").write_text(json.dumps(data), encoding="utf-8")
    (runs / "broken.json").unlink()
    (runs / f"{first}.json").unlink()
    with index.open() as conn:  # copy.json now holds the only run with that id
        assert {r["run_id"]: r["cases"] for r in queries.run_list(conn)} == {"edited": 2, first: 4}
        assert [p.file for p in index.problems(conn)] == []
        assert conn.execute("SELECT file FROM runs WHERE run_id = ?", (first,)).fetchone()[0] == "copy.json"


def test_a_finished_run_is_indexed_where_an_index_exists(project, tmp_path_factory):
    first = project.run()
    path = project.folder / ".specengine" / "runs" / f"{first}.json"
    assert index_finished_run(path) is False  # nobody looks at an index here: none is made
    assert not RunIndex(project.folder).exists
    RunIndex(project.folder).rebuild()
    second = project.run()  # the run's own flow indexes it
    with RunIndex(project.folder).open(refresh=False) as conn:
        indexed = [r["run_id"] for r in queries.run_list(conn)]
        moved_on = conn.execute("SELECT * FROM latest ORDER BY case_id").fetchall()
    assert indexed == [second, first]
    # The newest run moved each case's newest-run row on by itself; a rebuild finds the same rows.
    assert {(r["run_id"], r["previous_run"]) for r in moved_on} == {(second, first)} and len(moved_on) == 4
    assert index_finished_run(project.folder / ".specengine" / "runs" / f"{second}.json")  # again: same
    RunIndex(project.folder).rebuild()
    with RunIndex(project.folder).open(refresh=False) as conn:
        rebuilt = conn.execute("SELECT * FROM latest ORDER BY case_id").fetchall()
    assert [tuple(r) for r in rebuilt] == [tuple(r) for r in moved_on]
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "r.json"
    shutil.copy(path, elsewhere)
    assert index_finished_run(elsewhere) is False
    assert index_finished_run(project.folder / "nope.json") is False
    os.chmod(project.folder / ".specengine" / "index.sqlite", 0o400)
    try:
        index_finished_run(path)  # an unwritable index never raises
    finally:
        os.chmod(project.folder / ".specengine" / "index.sqlite", 0o600)


def test_reports_show_both_verdicts_of_reviewed_cases(project):
    import xml.etree.ElementTree as ET

    first = project.run()
    results_file = project.folder / ".specengine" / "runs" / f"{first}.json"
    before = results_file.read_bytes()
    _review(project, first, OSLO, None, "incorrect")
    result = run_cli(
        ["report", str(results_file), "--html", "r.html", "--md", "r.md", "--junit", "r.xml"],
        cwd=project.folder,
    )
    assert result.exit_code in (0, 1), result.output
    line = "reviewed: human says passed (overrides failed; Ann) · “n”"
    markdown = (project.folder / "r.md").read_text(encoding="utf-8")
    assert "1 reviewed, 1 verdict overridden" in markdown
    assert f"| oslo | failed | {line} |" in markdown
    html = (project.folder / "r.html").read_text(encoding="utf-8")
    assert line in html and "1 reviewed, 1 verdict overridden" in html
    suite = ET.parse(project.folder / "r.xml").getroot()
    oslo = next(tc for tc in suite.iter("testcase") if tc.get("name") == OSLO)
    properties = {p.get("name"): p.get("value") for p in oslo.iter("property")}
    assert properties == {
        "review.verdict": "incorrect", "review.engine": "failed", "review.human": "passed",
        "review.reviewer": "Ann", "review.at": properties["review.at"], "review.note": "n",
    }  # fmt: skip
    assert list(oslo)[0].tag == "properties"
    paris = next(tc for tc in suite.iter("testcase") if tc.get("name") == PARIS)
    assert paris.find("properties") is None
    printed = run_cli(["report", str(results_file), "--json"], cwd=project.folder)
    assert printed.stdout.encode("utf-8") == before and results_file.read_bytes() == before
