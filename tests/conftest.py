"""Shared fixtures: scripted servers on free loopback ports, running the real CLI, writing projects.

Fixtures:
- `agent_server`: a started `support.servers.AgentServer` (scripted chat completions agent); `.url`,
  `.endpoint(**extra)`, `.script(...)`, `.bodies`, `.hits()`. Closed after the test.
- `langgraph_server`: one real `langgraph dev` server for the whole session, serving the scripted
  weather graph (`support.langgraph_server`); skipped with the reason when its packages are missing.
- `free_port`: a port nothing listens on (for "connection refused" tests or fixed-port commands).
- `run_cli`, `run_cli_subprocess`, `write_project`, `write_spec`: the helpers of `support.cli`.
- `mlflow_server` (session): a real `mlflow server` (`support.mlflow_server`), launched while the
  first tests run when a collected test needs it; skipped when mlflow is not installed.
- `page_at(width, height=900)`: a Chromium page on the app of the module's `world` fixture
  (`world["app"]`, an `AppServer`), from the module's `browser` fixture (`test_report_browser`'s);
  the test fails on script or console errors, answers of 400 and above, and requests outside the app.

Helpers and servers are importable from the `support` package (`from support.servers import Reply`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support import mlflow_server as mlflow_servers
from support import servers
from support.cli import run_cli, run_cli_subprocess, write_project, write_spec


@pytest.fixture
def agent_server() -> Iterator[servers.AgentServer]:
    with servers.AgentServer() as server:
        yield server


@pytest.fixture(scope="session")
def langgraph_server(tmp_path_factory):
    from support.langgraph_server import langgraph_missing, start_langgraph_server

    reason = langgraph_missing()
    if reason is not None:
        pytest.skip(reason)
    with start_langgraph_server(tmp_path_factory.mktemp("langgraph")) as server:
        yield server


@pytest.fixture
def free_port() -> int:
    return servers.free_port()


@pytest.fixture(name="run_cli")
def run_cli_fixture():
    return run_cli


@pytest.fixture(name="run_cli_subprocess")
def run_cli_subprocess_fixture():
    return run_cli_subprocess


@pytest.fixture(name="write_project")
def write_project_fixture():
    return write_project


@pytest.fixture(name="write_spec")
def write_spec_fixture():
    return write_spec


@pytest.fixture
def page_at(request):
    """Pages of the given width on the module's app, each guarded; what went wrong fails the test."""
    launched = request.getfixturevalue("browser")
    url = request.getfixturevalue("world")["app"].url
    contexts, problems = [], []

    def open_page(width: int, height: int = 900):
        context = launched.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(url + "/")
                else (problems.append(route.request.url), route.abort())
            ),
        )
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert problems == []


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch):
    """Tests must not write to a real job summary or print annotations into the CI log."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def mlflow_server() -> mlflow_servers.MlflowServer:
    reason = mlflow_servers.mlflow_missing()
    if reason is not None:
        pytest.skip(reason)
    return mlflow_servers.SHARED.ready()


def pytest_collection_modifyitems(config, items):
    """Boot the MLflow server (about 20 s) while other tests run, when a collected test needs it."""
    if any("mlflow_server" in getattr(item, "fixturenames", ()) for item in items):
        mlflow_servers.SHARED.launch()


def pytest_sessionfinish(session, exitstatus):
    mlflow_servers.SHARED.close()
