"""`specengine github baseline` and `specengine github comment` against a scripted GitHub REST API on
loopback: one comment per pull request and title (created, then edited, found on any page), the
baseline from the main branch's newest good run, and the cases a workflow meets (no baseline yet,
a fork's read-only token, an artifact that is hostile)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from support.cli import run_cli
from support.github_server import GitHubServer, event_file, zipped
from support.servers import Reply

from specengine.errors import ArtifactError
from specengine.github.artifact import results_from_zip
from specengine.github.comment import MAX_BODY, comment_body, marker
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"
BASE, HEAD = FIXTURES / "base.json", FIXTURES / "head.json"


@pytest.fixture(scope="module")
def github():
    with GitHubServer(repository="acme/shop", page_size=2) as server:
        yield server


@pytest.fixture
def gh(github):
    """The server with nothing scripted and nothing recorded."""
    github.clear()
    github.blobs.clear()
    github.comments.clear()
    github.runs.clear()
    github.artifacts.clear()
    github.forbid_writes = False
    github.faults.clear()
    return github


def _env(github: GitHubServer, tmp_path: Path, pull_request: int | None = 12, **more: str) -> dict:
    return {
        "GITHUB_API_URL": github.base_url,
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_TOKEN": "gh-token",
        "GITHUB_RUN_ID": "555",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_EVENT_PATH": event_file(tmp_path, pull_request),
        **more,
    }


# --- comment ----------------------------------------------------------------------------------------


def test_first_comment_is_created_and_the_next_run_edits_it(gh, tmp_path):
    env = _env(gh, tmp_path)
    first = run_cli(["github", "comment", HEAD, "--baseline", BASE], env=env)
    assert first.exit_code == 0, first.output
    assert "created the comment on pull request #12" in first.stderr
    assert gh.calls() == [
        "GET /repos/acme/shop/issues/12/comments",
        "POST /repos/acme/shop/issues/12/comments",
    ]
    body = gh.comments[12][0]["body"]
    assert body.startswith(marker("specengine") + "\n")
    assert "57.1% (-28.6 pts)" in body  # the pass rate and its change
    assert "Regressions (2)" in body and "closedQA score too low" in body  # with their reasons
    assert "Fixes (1)" in body and "Judge score changes (3)" in body
    fix = next(line for line in body.splitlines() if "gets fixed" in line)
    assert fix.endswith("| judge check: closedQA score too low |")  # why it used to fail
    assert "[Workflow run](https://github.example/acme/shop/actions/runs/555)" in body

    gh.clear()
    second = run_cli(["github", "comment", BASE], env=env)  # a later push, without a baseline
    assert second.exit_code == 0, second.output
    assert "updated the comment" in second.stderr
    assert gh.calls() == [
        "GET /repos/acme/shop/issues/12/comments",
        "PATCH /repos/acme/shop/issues/comments/1000",
    ]
    assert len(gh.comments[12]) == 1  # never a second comment
    assert "Regressions" not in gh.comments[12][0]["body"]
    assert "6 of 7 cases passed" in gh.comments[12][0]["body"]

    other = run_cli(["github", "comment", BASE, "--title", "nightly evals"], env=env)
    assert other.exit_code == 0 and len(gh.comments[12]) == 2  # another title: a comment of its own


def test_the_comment_is_found_on_a_later_page(gh, tmp_path):
    people = [{"id": n, "body": f"looks good {n}"} for n in range(1, 6)]
    quoted = {"id": 6, "body": "> " + marker("specengine") + "\nquoted"}  # a reply quoting ours
    ours = {"id": 7, "body": marker("specengine") + "\nold summary"}
    gh.comments[12] = [*people, quoted, ours, {"id": 8, "body": "merge it"}]
    result = run_cli(["github", "comment", HEAD], env=_env(gh, tmp_path))
    assert result.exit_code == 0, result.output
    listed = [r for r in gh.requests if r.method == "GET"]
    assert len(listed) == 4  # pages 1-4 of 2 comments each, followed by their Link headers
    assert "page=4" in listed[-1].query and "per_page=100" in listed[-1].query
    assert gh.calls()[-1] == "PATCH /repos/acme/shop/issues/comments/7"
    assert len(gh.comments[12]) == 8 and gh.comments[12][5]["body"].endswith("quoted")


def test_a_forks_read_only_token_is_a_warning_not_a_failure(gh, tmp_path):
    gh.forbid_writes = True
    env = _env(gh, tmp_path, GITHUB_ACTIONS="true")
    result = run_cli(["github", "comment", HEAD, "--baseline", BASE], env=env)
    assert result.exit_code == 0, result.output
    assert "read-only token" in result.stderr and "Resource not accessible by integration" in result.stderr
    assert result.stdout.startswith("::warning title=specengine github::cannot comment on pull request #12")
    assert gh.comments[12] == []


def test_a_push_gets_no_comment_and_a_bad_results_file_is_exit_2(gh, tmp_path):
    push = run_cli(["github", "comment", HEAD], env=_env(gh, tmp_path, pull_request=None))
    assert push.exit_code == 0 and "not a pull request" in push.stderr and gh.calls() == []
    named = run_cli(["github", "comment", HEAD, "--pr", "3"], env=_env(gh, tmp_path, pull_request=None))
    assert named.exit_code == 0 and len(gh.comments[3]) == 1
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    bad = run_cli(["github", "comment", tmp_path / "bad.json"], env=_env(gh, tmp_path))
    assert bad.exit_code == 2 and "bad.json" in bad.stderr
    tokenless = run_cli(["github", "comment", HEAD], env={**_env(gh, tmp_path), "GITHUB_TOKEN": ""})
    assert tokenless.exit_code == 2 and "GITHUB_TOKEN" in tokenless.stderr


def test_another_refusal_is_exit_1_with_githubs_words(gh, tmp_path):
    result = run_cli(["github", "comment", HEAD], env={**_env(gh, tmp_path), "GITHUB_TOKEN": "wrong"})
    assert result.exit_code == 1
    assert "answered 401: Bad credentials" in result.stderr and "wrong" not in result.output


def test_a_passing_fault_is_retried_but_a_comment_is_never_posted_twice(gh, tmp_path):
    gh.faults = [502, 503]
    result = run_cli(["github", "comment", HEAD], env=_env(gh, tmp_path))
    assert result.exit_code == 0, result.output
    assert gh.calls().count("GET /repos/acme/shop/issues/12/comments") == 3  # two faults, then the list
    gh.clear()
    gh.faults = [502]
    again = run_cli(["github", "comment", HEAD, "--pr", "13"], env=_env(gh, tmp_path))
    assert again.exit_code == 0, again.output  # the list (GET) was retried
    gh.clear()
    gh.faults = [503, 502, 500]
    refused = run_cli(["github", "comment", HEAD, "--pr", "14"], env=_env(gh, tmp_path))
    assert refused.exit_code == 1 and "answered 500: Server Error" in refused.stderr  # three attempts
    gh.comments[12].clear()
    gh.clear()
    gh.route("*", lambda request: Reply(status=502, body={"message": "Bad Gateway"}), "POST")
    try:
        posted = run_cli(["github", "comment", HEAD], env=_env(gh, tmp_path))
    finally:
        gh.route("*", gh._answer, "POST")
    assert posted.exit_code == 1 and gh.calls().count("POST /repos/acme/shop/issues/12/comments") == 1


def test_a_long_comment_is_cut_to_githubs_limit_saying_what_was_left_out():
    results = load_results(HEAD)
    case = next(c for c in results["cases"] if c["status"] == "failed")
    many = [{**case, "id": f"specs/cmp.yaml::case {n} " + "x" * 150} for n in range(3000)]
    big = {**results, "cases": many}
    body = comment_body(big, None, "specengine", "https://github.example/run/1")
    assert len(body) <= MAX_BODY
    assert "more failed checks; see the full report" in body  # shorter tables came first
    tiny = comment_body(big, None, "specengine", "https://github.example/run/1", limit=700)
    assert len(tiny) <= 700
    assert "left out to fit GitHub's limit of 65,536 characters" in tiny
    assert "[the workflow run](https://github.example/run/1)" in tiny


# --- baseline ---------------------------------------------------------------------------------------


def test_no_baseline_yet_is_a_note_and_exit_0(gh, tmp_path):
    out = tmp_path / "baseline.json"
    result = run_cli(["github", "baseline", "-o", out], env=_env(gh, tmp_path))
    assert result.exit_code == 0, result.output
    assert "no baseline yet" in result.stderr and not out.exists()
    assert gh.calls() == ["GET /repos/acme/shop/actions/artifacts"]


def test_the_newest_good_run_on_the_branch_is_the_baseline(gh, tmp_path):
    good = BASE.read_text(encoding="utf-8")
    gh.add_run(9, conclusion="failure")  # newest, but it failed
    gh.add_run(8, event="pull_request")  # a pull request (perhaps a fork's branch named main)
    gh.add_run(7, head_repository={"full_name": "mallory/shop"})
    gh.add_run(6)  # the one
    gh.add_run(5)  # older
    gh.add_run(4, branch="feature")
    gh.add_artifact(94, 4, zipped({"results.json": "{}"}), branch="feature")
    gh.add_artifact(90, 9, zipped({"results.json": "{}"}))
    gh.add_artifact(80, 8, zipped({"results.json": "{}"}))
    gh.add_artifact(71, 7, zipped({"results.json": "{}"}), expired=True)
    gh.add_artifact(70, 7, zipped({"results.json": "{}"}))
    gh.add_artifact(60, 6, zipped({"results.json": good, "report.xml": "<x/>"}))
    gh.add_artifact(50, 5, zipped({"results.json": "{}"}))
    out = tmp_path / "ci" / "baseline.json"
    result = run_cli(["github", "baseline", "--branch", "main", "-o", out], env=_env(gh, tmp_path))
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == good
    assert (
        "baseline: main at 000000000000 from https://github.example/acme/shop/actions/runs/6" in result.stderr
    )
    assert gh.calls() == [
        "GET /repos/acme/shop/actions/artifacts",
        "GET /repos/acme/shop/actions/runs/9",
        "GET /repos/acme/shop/actions/artifacts",  # page 2
        "GET /repos/acme/shop/actions/runs/8",  # 71 expired: its run is not asked for
        "GET /repos/acme/shop/actions/artifacts",  # page 3
        "GET /repos/acme/shop/actions/runs/7",
        "GET /repos/acme/shop/actions/runs/6",
        "GET /repos/acme/shop/actions/artifacts/60/zip",
    ]
    assert "name=specengine-results" in gh.requests[0].query
    (download,) = gh.blobs.requests
    assert "authorization" not in download.headers  # the token stays with the API


def test_an_unusable_artifact_is_exit_1_and_nothing_written(gh, tmp_path):
    gh.add_run(6)
    gh.add_artifact(60, 6, zipped({"results.json": "not json"}))
    out = tmp_path / "baseline.json"
    result = run_cli(["github", "baseline", "-o", out], env=_env(gh, tmp_path))
    assert result.exit_code == 1 and "holds no usable results file" in result.stderr
    assert not out.exists()


def _zip_with(name: str, content: bytes = b"{}") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo(name), content)
    return buffer.getvalue()


@pytest.mark.parametrize("name", ["../results.json", "/etc/results.json", "a\\..\\b.json", "C:results.json"])
def test_an_artifact_with_an_unsafe_path_is_refused(name):
    with pytest.raises(ArtifactError, match="unsafe path"):
        results_from_zip(_zip_with(name))


def test_an_artifact_that_decompresses_past_the_limit_is_refused():
    bomb = zipped({"results.json": b"0" * 5_000_000})
    assert len(bomb) < 10_000
    with pytest.raises(ArtifactError, match="more than 1 MB|would be 5 MB"):
        results_from_zip(bomb, limit=1_000_000)
    lying = bytearray(bomb)  # a header that claims a tiny file
    central = lying.rfind(b"PK\x01\x02")
    lying[central + 24 : central + 28] = (100).to_bytes(4, "little")
    with pytest.raises(ArtifactError, match="decompresses to more than 1 MB|cannot read"):
        results_from_zip(bytes(lying), limit=1_000_000)


def test_which_file_of_the_artifact_is_taken():
    assert results_from_zip(zipped({"run/out.json": "{1}", "log.txt": "x"})) == b"{1}"
    assert results_from_zip(zipped({"a.json": "{a}", "sub/results.json": "{r}"})) == b"{r}"
    assert results_from_zip(zipped({"a.json": "{a}", "b.json": "{b}"}), member="b.json") == b"{b}"
    with pytest.raises(ArtifactError, match="several .json files"):
        results_from_zip(zipped({"a.json": "{a}", "b.json": "{b}"}))
    with pytest.raises(ArtifactError, match="not a zip"):
        results_from_zip(b"PK nothing")
    with pytest.raises(ArtifactError, match="no .json results file"):
        results_from_zip(zipped({"log.txt": "x"}))
    assert json.loads(results_from_zip(zipped({"r.json": '{"ok": 1}'}))) == {"ok": 1}
