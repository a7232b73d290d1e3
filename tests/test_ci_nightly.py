"""docs/ci.md's nightly workflow over production traces as it is written: its shape (a schedule, a
day worked out once, a matrix of four shards, a merge that needs them), and its jobs run step by
step, two nights running, over recorded chat logs and the project file's `since`/`until` block: the
day job picks the day, the shards together grade each of that day's conversations once and nothing
of other days, the merge gives one results file in `.specengine/runs/`, and `--min-pass-rate 0.98`
exits 0 on a clean night and 1 on a night with a failure, which still keeps its run."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from support.actions_runner import Runner, StepRun
from support.cli import REPO_ROOT, write_project, write_spec

DOC = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
SECTION = DOC.split("## Nightly over production traces", 1)[1].split("\n## ", 1)[0]
BLOCKS = [yaml.safe_load(text) for text in re.findall(r"^```yaml\n(.*?)^```", SECTION, re.M | re.S)]
PROJECT = next(block for block in BLOCKS if "sources" in block)
NIGHTLY = next(block for block in BLOCKS if "jobs" in block)
JOBS = NIGHTLY["jobs"]
SPEC = """
evals:
  - name: says when the order ships
    source: prod
    expect: [{includes: ships today}]
"""


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    return workflow.get("on") or workflow[True]  # YAML 1.1 reads a bare `on` as true


def step(job: str, name: str) -> dict[str, Any]:
    return next(s for s in JOBS[job]["steps"] if s.get("name") == name)


def conversation(key: str, started: str, reply: str) -> dict[str, Any]:
    order = key.rsplit("-", 1)[1]
    return {
        "id": key,
        "timestamp": started,
        "messages": [
            {"role": "user", "content": f"Where is order {order}?"},
            {"role": "assistant", "content": reply},
        ],
    }


def day_of(day: str, count: int, failing: int | None = None) -> list[dict[str, Any]]:
    return [
        conversation(
            f"{day}-{n}",
            f"{day}T{n:02d}:30:00Z",
            "Sorry, I cannot find it." if n == failing else f"Order {n} ships today.",
        )
        for n in range(1, count + 1)
    ]


# One file of three days: 11-30 (outside both nights), 12-01 (12, all good), 12-02 (12, one bad,
# the first started at midnight exactly: it belongs to 12-02, not to 12-01's `until`).
LOG = [
    *day_of("2026-11-30", 2),
    *day_of("2026-12-01", 12),
    conversation("2026-12-02-0", "2026-12-02T00:00:00Z", "Order 0 ships today."),
    *day_of("2026-12-02", 11, failing=7),
]


class Workflow:
    """One workflow run: its jobs run in order in fresh workspaces, artifacts kept between jobs, and
    the Actions cache kept between runs (`cache`)."""

    def __init__(self, root: Path, project: Path, cache: Path, run_id: int, inputs: dict[str, str]):
        self.root, self.project, self.cache = root / str(run_id), project, cache
        self.artifacts = self.root / "artifacts"
        self.context: dict[str, Any] = {
            "inputs": inputs,
            "github": {"run_id": str(run_id), "run_attempt": "1"},
            "secrets": {},
            "needs": {},
        }

    def job(self, name: str, matrix: dict[str, Any] | None = None) -> dict[str, StepRun]:
        """The job's shell steps run as written, the others done as their actions do; stops at a
        failed step, as a job does, but for steps that run `if: always()`."""
        label = name + "".join(f"-{value}" for value in (matrix or {}).values())
        workspace = self.root / label / "workspace"
        workspace.mkdir(parents=True)
        context = {**self.context, "matrix": matrix or {}}
        runner = Runner(workspace, self.root / label / "temp", context=context)
        job = JOBS[name]
        job_env = {key: runner.expand(value) for key, value in (job.get("env") or {}).items()}
        ran: dict[str, StepRun] = {}
        failed = False
        for one in job["steps"]:
            if failed and one.get("if") != "always()":
                continue
            uses, given = one.get("uses", ""), {k: runner.expand(v) for k, v in one.get("with", {}).items()}
            if uses.startswith("actions/checkout"):
                shutil.copytree(self.project, workspace, dirs_exist_ok=True)
            elif uses.startswith("actions/setup-python") or one.get("run", "").startswith("pip install"):
                continue  # this checkout's specengine is on the runner's PATH
            elif uses.startswith("actions/cache/restore"):
                if self.cache.exists():
                    shutil.copytree(self.cache, workspace / given["path"])
            elif uses.startswith("actions/cache/save"):
                shutil.rmtree(self.cache, ignore_errors=True)
                shutil.copytree(workspace / given["path"], self.cache)
            elif uses.startswith("actions/upload-artifact"):
                source, kept = workspace / given["path"], self.artifacts / given["name"]
                if source.is_dir():
                    shutil.copytree(source, kept)
                else:
                    kept.mkdir(parents=True)
                    shutil.copy2(source, kept)
            elif uses.startswith("actions/download-artifact"):
                assert given["merge-multiple"] == "True"
                for folder in sorted(self.artifacts.iterdir()):
                    if fnmatch.fnmatch(folder.name, given["pattern"]):
                        for file in folder.iterdir():
                            shutil.copy2(file, workspace)
            elif one.get("name") == "Fetch the day's traces":  # the team's own copy: here, the log
                (workspace / "traces").mkdir()
                lines = "".join(json.dumps(line) + "\n" for line in LOG)
                (workspace / "traces" / "support.jsonl").write_text(lines, encoding="utf-8")
            else:
                assert set(one) <= {"name", "id", "run", "env", "if"}, one  # nothing else is understood
                done = runner.run_step({**one, "env": {**job_env, **(one.get("env") or {})}})
                ran[one["name"]] = done
                failed = failed or done.exit_code != 0
        outputs = {key: runner.expand(value) for key, value in (job.get("outputs") or {}).items()}
        self.context["needs"][name] = {"outputs": outputs}
        return ran

    def night(self) -> tuple[list[dict[str, Any]], dict[str, StepRun]]:
        """Every job: the day, the four shards (their results files, as uploaded), the merge."""
        day = self.job("day")["The day to grade"]
        assert day.exit_code == 0, day.output
        shards = []
        for n in JOBS["shard"]["strategy"]["matrix"]["shard"]:
            grading = self.job("shard", {"shard": n})["Grade a quarter of the conversations"]
            assert grading.exit_code == 0, grading.output  # a failed conversation is accepted here
            kept = self.artifacts / f"nightly-shard-{n}" / f"shard-{n}.json"
            shards.append(json.loads(kept.read_text(encoding="utf-8")))
        return shards, self.job("merge")


def test_the_workflow_is_a_schedule_a_day_four_shards_and_their_merge():
    on = triggers(NIGHTLY)
    assert len(on["schedule"][0]["cron"].split()) == 5 and "day" in on["workflow_dispatch"]["inputs"]
    assert JOBS["shard"]["needs"] == "day" and JOBS["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert set(JOBS["merge"]["needs"]) == {"day", "shard"}
    assert "--shard ${{ matrix.shard }}/4" in step("shard", "Grade a quarter of the conversations")["run"]
    assert "--min-pass-rate 0.98" in step("merge", "Merge the quarters and raise the alarm")["run"]
    source = PROJECT["sources"]["prod"]
    assert (source["since"], source["until"]) == ("${SINCE}", "${UNTIL}")
    assert source["otlp"].startswith("traces/") and step("shard", "Fetch the day's traces")["run"].endswith(
        " traces/"
    )


def test_a_scheduled_run_grades_yesterday(tmp_path):
    before = datetime.now(timezone.utc).date()
    workflow = Workflow(tmp_path, tmp_path, tmp_path / "cache", 1, inputs={})  # a schedule has no inputs
    day = workflow.job("day")["The day to grade"]
    after = datetime.now(timezone.utc).date()
    assert day.exit_code == 0, day.output
    outputs = workflow.context["needs"]["day"]["outputs"]
    assert (outputs["since"], outputs["until"]) in {
        (str(today - timedelta(days=1)), str(today)) for today in (before, after)
    }


def test_two_nights_step_by_step(tmp_path):
    project, cache = tmp_path / "project", tmp_path / "cache"
    source = {key: value for key, value in PROJECT["sources"]["prod"].items() if key != "otlp"}
    write_project(project, sources={"prod": {"jsonl": "traces/*.jsonl", **source}})
    write_spec(project, "specs/prod/orders.yaml", SPEC)

    shards, merge = Workflow(tmp_path, project, cache, 41, {"day": "2026-12-01"}).night()
    rows = [case["row"] for results in shards for case in results["cases"]]
    assert sorted(rows) == sorted(f"2026-12-01-{n}" for n in range(1, 13))  # each once, that day only
    assert [results["shard"]["index"] for results in shards] == [1, 2, 3, 4]
    alarm = merge["Merge the quarters and raise the alarm"]
    assert alarm.exit_code == 0, alarm.output
    assert "merged 4 files: 12 cases, 12 passed, 0 failed" in alarm.stderr
    assert "12 of 12 cases passed" in merge["Summary"].summary
    assert sorted(path.name for path in cache.iterdir()) == ["nightly-2026-12-01.json"]

    workflow = Workflow(tmp_path, project, cache, 42, {"day": "2026-12-02"})
    shards, merge = workflow.night()
    rows = [case["row"] for results in shards for case in results["cases"]]
    assert sorted(rows) == sorted(f"2026-12-02-{n}" for n in range(12))  # the one at midnight too
    alarm = merge["Merge the quarters and raise the alarm"]
    assert alarm.exit_code == 1, alarm.output  # 11 of 12: the alarm
    assert "12 cases, 11 passed, 1 failed" in alarm.stderr
    assert "failed: pass rate 91.7%, below --min-pass-rate 98.0%" in alarm.stderr
    merged = json.loads((workflow.artifacts / "nightly-runs" / "nightly-2026-12-02.json").read_text())
    assert len(merged["cases"]) == 12 and merged["summary"]["failed"] == 1  # one results file, kept
    failed = next(case for case in merged["cases"] if case["status"] == "failed")
    assert failed["row"] == "2026-12-02-7"
    assert merge["Summary"].exit_code == 0 and "11 of 12 cases passed" in merge["Summary"].summary
    kept = sorted(path.name for path in (workflow.artifacts / "nightly-runs").iterdir())
    assert kept == ["nightly-2026-12-01.json", "nightly-2026-12-02.json"]  # the nights before, carried
    assert sorted(path.name for path in cache.iterdir()) == kept
