"""docs/ci.md as it is written: its sharded GitHub workflow run step by step (four shards, the merge,
the baseline, the comment, the comparison) as a push to main and then as a pull request, its GitLab
job's script with GitLab's variables, and every YAML example parsed."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.actions_runner import Runner
from support.cli import REPO_ROOT, write_project, write_spec
from support.github_server import GitHubServer, event_file, zipped

DOC = (REPO_ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", DOC, re.MULTILINE | re.DOTALL)
YAML = [yaml.safe_load(text) for language, text in BLOCKS if language == "yaml"]
SHARDED = next(doc for doc in YAML if "jobs" in doc and "shard" in doc["jobs"])
GITLAB = next(doc for doc in YAML if "evals" in doc and "parallel" in doc.get("evals", {}))
CITIES = ["Paris", "London", "Oslo", "Tokyo"]
SPEC = "evals:\n" + "".join(
    f"  - name: {city.lower()}\n    send: What's the weather in {city}?\n    expect: [{{includes: {city}}}]\n"
    for city in CITIES
)


def test_every_example_is_what_its_engine_reads():
    assert len(YAML) == 6  # the action, the sharded workflow, the nightly (project, workflow), GitLab, k8s
    assert YAML[0]["jobs"]["evals"]["steps"][1] == {
        "uses": "OWNER/specengine@v1",
        "with": {"specs": "specs/"},
    }
    assert SHARDED["jobs"]["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert GITLAB["evals"]["artifacts"]["reports"]["junit"] == "junit.xml"
    job = next(doc for doc in YAML if doc.get("kind") == "Job")
    assert (
        job["spec"]["completionMode"] == "Indexed"
        and "--shard auto/4" in job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    )


class Job:
    """A workflow's jobs run here: a checkout per job, and artifacts kept between jobs."""

    def __init__(self, root: Path, project: Path, github: GitHubServer):
        self.root, self.project, self.github = root, project, github
        self.artifacts = root / "artifacts"

    def run(self, name: str, pull_request: int | None, matrix: dict[str, Any] | None = None) -> list:
        label = name + "".join(f"-{v}" for v in (matrix or {}).values()) + f"-{pull_request}"
        workspace = self.root / label / "workspace"
        runner = Runner(
            workspace,
            self.root / label / "temp",
            env={
                "GITHUB_API_URL": self.github.base_url,
                "GITHUB_REPOSITORY": "acme/shop",
                "GITHUB_RUN_ID": "900",
                "GITHUB_EVENT_PATH": event_file(self.root / label, pull_request),
            },
            context={"github": {"token": "gh-token"}, "matrix": matrix or {}},
        )
        ran = []
        for step in SHARDED["jobs"][name]["steps"]:
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout"):
                shutil.copytree(self.project, workspace)
            elif uses.startswith("actions/upload-artifact"):
                given = {key: runner.expand(value) for key, value in step["with"].items()}
                (self.artifacts / given["name"]).mkdir(parents=True, exist_ok=True)
                shutil.copy(workspace / given["path"], self.artifacts / given["name"])
            elif uses.startswith("actions/download-artifact"):
                for folder in self.artifacts.iterdir():
                    if fnmatch.fnmatch(folder.name, step["with"]["pattern"]):
                        for file in folder.iterdir():
                            shutil.copy(file, workspace)
            elif "run" in step and not step["run"].startswith("pip install"):
                done = runner.run_step(step)
                assert done.exit_code == 0, (step, done.output)
                ran.append(done)
        return ran


@pytest.fixture(scope="module")
def github():
    with GitHubServer(repository="acme/shop") as server:
        yield server


def test_the_sharded_workflow_step_by_step(tmp_path, github):
    project = tmp_path / "project"
    write_project(project, endpoints={"demo": {"protocol": "demo"}})
    write_spec(project, "specs/weather.yaml", SPEC)
    job = Job(tmp_path, project, github)

    shards = [job.run("shard", None, {"shard": n}) for n in (1, 2, 3, 4)]
    held = [
        json.loads((job.artifacts / f"specengine-shard-{n}" / f"shard-{n}.json").read_text())
        for n in (1, 2, 3, 4)
    ]
    ids = [case["id"] for results in held for case in results["cases"]]
    assert sorted(ids) == sorted(f"specs/weather.yaml::{city.lower()}" for city in CITIES)  # each once
    assert [results["shard"]["index"] for results in held] == [1, 2, 3, 4] and len(shards) == 4

    merged, baseline, comment, gate = job.run("merge", None)  # a push to main: no baseline yet
    assert "merged 4 files: 4 cases, 4 passed" in merged.stderr
    assert "no baseline yet" in baseline.stderr and "not a pull request" in comment.stderr
    results = (job.artifacts / "specengine-results" / "results.json").read_text(encoding="utf-8")
    github.add_run(41)
    github.add_artifact(410, 41, zipped({"results.json": results}))

    merged, baseline, comment, gate = job.run("merge", 7)  # the pull request: compared and commented
    assert "baseline: main" in baseline.stderr
    assert "created the comment on pull request #7" in comment.stderr
    assert "4 cases matched: 0 regressions" in gate.stdout
    body = github.comments[7][0]["body"]
    assert "4 of 4 cases passed" in body and "Compared with" in body


def test_the_gitlab_job_takes_its_share_from_gitlabs_variables(tmp_path):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    write_spec(tmp_path, "specs/weather.yaml", SPEC)
    runner = Runner(tmp_path, tmp_path / "temp", env={"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "4"})
    script = [line for line in GITLAB["evals"]["script"] if not line.startswith("pip install")]
    ran = runner.run_step({"name": "gitlab", "run": "\n".join(script)})
    assert ran.exit_code == 0, ran.output
    assert "shard 3/4 from GitLab CI (CI_NODE_INDEX=3, CI_NODE_TOTAL=4)" in ran.stderr
    shard = json.loads((tmp_path / "shard-3.json").read_text(encoding="utf-8"))["shard"]
    assert (shard["index"], shard["count"]) == (3, 4)
    assert (tmp_path / "junit.xml").exists()
