"""A project with real runs for the `specengine serve` tests, and the app on a real loopback server.

- `ServeProject.create(folder, agent, judge)`: specengine.yaml (the scripted agent as the default
  endpoint, the scripted judge as the project's judge) and `spec.yaml` with four evals: `paris`
  (passes), `oslo` (fails its includes and its judge check), `markup` (a reply made of HTML that
  must stay text) and `formula` (a reply that a spreadsheet would run).
- `project.run()`: `specengine run spec.yaml` in the folder, results in `.specengine/runs/`; returns
  the run id.
- `AppServer(folder)`: the Starlette app under uvicorn in a thread on a free 127.0.0.1 port; `url`,
  `client` (httpx with that base URL); stopped on exit.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from support.cli import REPO_ROOT, run_cli, write_project, write_spec
from support.judge_server import JudgeCall, JudgeServer, choose
from support.servers import AgentServer, Reply, free_port

JUDGE_KEY_ENV = "SERVE_TEST_JUDGE_KEY"
JUDGE_KEY = "sk-serve-test-3c9e1f7a"
SPEC = """\
suite: weather
labels: [smoke]
evals:
  - name: paris
    send: weather in Paris
    expect:
      - includes: Sunny
      - judge: closed_qa
        criteria: Does the reply give the weather?
  - name: oslo
    send: weather in Oslo
    expect:
      - includes: Sunny
      - judge: closed_qa
        criteria: Does the reply give the weather?
  - name: markup
    send: show markup
    expect:
      - includes: safe
  - name: formula
    send: formula please
    expect:
      - succeeded
"""
XSS_REPLY = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> (markup)'
FORMULA_REPLY = '=HYPERLINK("http://example.invalid","click")'
REPLIES = {
    "weather in Paris": Reply(
        content="Sunny in Paris", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}]
    ),
    "weather in Oslo": "Rain in Oslo",
    "show markup": XSS_REPLY,
    "formula please": FORMULA_REPLY,
}


def judge_by_sunshine(call: JudgeCall, hit: int) -> Reply:
    """The judge says Y when the reply it reads mentions sunshine, N otherwise."""
    return choose("Y" if "Sunny" in call.prompt else "N", "Judged by the word Sunny.")


@dataclass
class ServeProject:
    folder: Path
    agent: AgentServer
    judge: JudgeServer

    @classmethod
    def create(cls, folder: Path, agent: AgentServer, judge: JudgeServer) -> ServeProject:
        judge.script = judge_by_sunshine
        agent.script(dict(REPLIES))
        write_project(
            folder,
            endpoints={"agent": agent},
            judge={"model": "judge-model", "base_url": judge.judge_url, "api_key_env": JUDGE_KEY_ENV},
        )
        write_spec(folder, "spec.yaml", SPEC)
        return cls(folder, agent, judge)

    def run(self, *args: str) -> str:
        """`specengine run spec.yaml` (results in .specengine/runs/); the new run's id."""
        before = set((self.folder / ".specengine" / "runs").glob("*.json"))
        result = run_cli(
            ["run", "spec.yaml", "--no-cache", *args], cwd=self.folder, env={JUDGE_KEY_ENV: JUDGE_KEY}
        )
        assert result.exit_code in (0, 1), result.output
        new = set((self.folder / ".specengine" / "runs").glob("*.json")) - before
        assert len(new) == 1, result.output
        run_id: str = json.loads(new.pop().read_text(encoding="utf-8"))["run_id"]
        time.sleep(0.02)  # distinct started_at order is by time; ids break ties
        return run_id

    def results(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.folder / ".specengine" / "runs" / f"{run_id}.json").read_text(encoding="utf-8")
        )
        return data


class AppServer:
    """The app over `folder`, served by uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, folder: Path, reviewer: str = "Test Reviewer"):
        import uvicorn

        from specengine.serve.app import create_app
        from specengine.serve.limits import server_config

        # Reruns started from the app run `python -m specengine` with the app's environment.
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if str(REPO_ROOT) not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), *paths) if p)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = create_app(folder, port=self.port, host_names=("127.0.0.1",), reviewer=reviewer)
        self.state = app.state.serve
        config = server_config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> AppServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the app did not start"
            time.sleep(0.02)
        self.client = httpx.Client(base_url=self.url, timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(20)


@contextmanager
def serve_project(folder: Path) -> Iterator[AppServer]:
    with AppServer(folder) as server:
        yield server


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.1) -> Any:
    """Poll until predicate() is truthy (returns it) or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(interval)
