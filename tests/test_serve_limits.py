"""What `specengine serve` reads, bounded: request bodies, request heads and the time they take,
reruns at a time, text that is not Unicode, and results files too large or holding NaN.

One project for the module (a slow scripted agent, so reruns stay running long enough to be seen),
one run, one app; the time limits are shortened for the module so that the tests need not wait.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.app_server import AppServer, wait_for
from support.cli import run_cli, write_project, write_spec
from support.servers import AgentServer, Reply

from specengine.serve import jobs, limits

SPEC = """\
evals:
  - name: first
    send: one
    expect: [{includes: never}]
  - name: second
    send: two
    expect: [{includes: never}]
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("serve-limits")
    patch = pytest.MonkeyPatch()
    patch.setattr(limits, "HEAD_TIMEOUT_S", 0.5)
    patch.setattr(limits, "BODY_TIMEOUT_S", 0.5)
    with AgentServer() as agent:
        write_project(folder, endpoints={"agent": agent})
        write_spec(folder, "spec.yaml", SPEC)
        assert run_cli(["run", "spec.yaml"], cwd=folder).exit_code == 1
        runs = folder / ".specengine" / "runs"
        run_id = json.loads(next(runs.glob("*.json")).read_text())["run_id"]
        agent.script(lambda messages: Reply(content="slowly", delay=1.0))
        with AppServer(folder) as app:
            yield {"app": app, "folder": folder, "runs": runs, "run": run_id}
    patch.undo()


def _raw(world: dict, head: bytes, body: bytes = b"", wait: float = 5.0) -> bytes:
    """Send bytes on a fresh connection; what came back before the app closed it (a test fails
    when it is still open after `wait` seconds)."""
    with socket.create_connection(("127.0.0.1", world["app"].port), timeout=wait) as sock:
        sock.sendall(head + body)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            pytest.fail(f"the connection was still open after {wait} s; it answered {answer[:200]!r}")
    return answer


def test_a_body_over_the_limit_is_refused_by_its_content_length(world):
    client = world["app"].client
    note = "x" * (limits.MAX_BODY_BYTES + 1)
    answer = client.post(f"/api/runs/{world['run']}/reviews", json={"case": "spec.yaml::first", "note": note})
    assert answer.status_code == 413
    assert "larger than the 1024 KB this app reads" in answer.text
    assert not (world["folder"] / ".specengine" / "reviews.jsonl").exists()


def test_a_chunked_body_over_the_limit_is_refused_while_it_is_read(world):
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(64):  # 64 MB offered; the app stops reading past its limit
            sent += 1
            yield b" " * (1 << 20)

    try:
        answer = world["app"].client.post(
            f"/api/runs/{world['run']}/reviews",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 413
    except httpx_errors() as exc:  # the app answered and closed while the client still sent
        assert "413" in str(exc) or sent < 64
    assert sent < 64


def httpx_errors() -> tuple[type[Exception], ...]:
    import httpx

    return (httpx.WriteError, httpx.RemoteProtocolError, httpx.ReadError)


def test_a_stalled_body_is_answered_408(world):
    head = (
        f"POST /api/runs/{world['run']}/reviews HTTP/1.1\r\nHost: 127.0.0.1:{world['app'].port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    ).encode()
    answer = _raw(world, head, b'{"case": ')
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


def test_a_request_line_over_the_limit_is_refused_and_other_pages_still_answer(world):
    started = time.monotonic()
    answer = _raw(world, b"GET /" + b"a" * (4 * limits.MAX_HEAD_BYTES) + b" HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert time.monotonic() - started < 5
    assert world["app"].client.get("/api/runs").status_code == 200


def test_a_head_that_trickles_is_disconnected(world):
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{world['app'].port}\r\nX-Slow: a".encode()
    answer = _raw(world, head, wait=5.0)  # the timeout is 0.5 s in this module
    assert answer == b""


def test_a_lone_surrogate_in_a_review_note_is_a_400(world):
    body = '{"case": "spec.yaml::first", "verdict": "correct", "note": "bad \\ud800 text"}'
    answer = world["app"].client.post(
        f"/api/runs/{world['run']}/reviews", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400
    assert "not Unicode" in answer.json()["error"]


@pytest.mark.parametrize("route", ["reviews", "rerun"])
@pytest.mark.parametrize("depth", [400_000, 450], ids=["past json's stack", "past the walk's stack"])
def test_a_body_nested_deep_is_a_400(world, route, depth):
    body = '{"case": "spec.yaml::first", "note": ' + "[" * depth + "]" * depth + "}"
    answer = world["app"].client.post(
        f"/api/runs/{world['run']}/{route}", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400, answer.text
    assert "nested deeper than 128 levels" in answer.json()["error"]


def test_reruns_run_a_few_at_a_time_and_the_rest_are_queued(world):
    client = world["app"].client
    started = [client.post(f"/api/runs/{world['run']}/rerun", json={}) for _ in range(jobs.MAX_RUNNING + 1)]
    assert [answer.status_code for answer in started] == [202] * (jobs.MAX_RUNNING + 1)
    states = [answer.json()["state"] for answer in started]
    assert states == ["running"] * jobs.MAX_RUNNING + ["queued"]
    last = started[-1].json()["id"]
    page = client.get(f"/jobs/{last}")
    assert "Queued: 2 reruns run at a time" in page.text
    wait_for(lambda: client.get(f"/api/jobs/{last}").json()["state"] == "running", timeout=60)
    done = wait_for(
        lambda: all(client.get(f"/api/jobs/{a.json()['id']}").json()["state"] == "finished" for a in started),
        timeout=90,
    )
    assert done


@pytest.fixture
def hostile_runs(world) -> Iterator[None]:
    """A 300 MB results file (sparse) and one whose scores are NaN, in the runs folder."""
    runs: Path = world["runs"]
    huge = runs / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(300 * 1024 * 1024)
    text = next(path for path in runs.glob("*.json") if path != huge).read_text()
    data = json.loads(text)
    data["run_id"] = "with-nan"
    data["started_at"] = "2000-01-01T00:00:00Z"
    nan = runs / "with-nan.json"
    nan.write_text(json.dumps(data).replace('"score": 0.0', '"score": NaN'))
    assert "NaN" in nan.read_text()
    yield
    huge.unlink()
    nan.unlink()


def test_serve_skips_a_results_file_too_large_and_reads_nan_as_missing(world, hostile_runs):
    client = world["app"].client
    runs = client.get("/api/runs")
    assert runs.status_code == 200
    assert "with-nan" in [run["run_id"] for run in runs.json()["runs"]]
    page = client.get("/")
    assert page.status_code == 200
    assert "1 file in .specengine/runs skipped" in page.text
    assert "huge.json" in page.text and "over the 256 MB limit of a results file" in page.text
    run = client.get("/api/runs/with-nan")
    assert run.status_code == 200
    scores = [check["score"] for case in run.json()["cases"] for check in case["checks"]]
    assert scores and all(score is None for score in scores)
