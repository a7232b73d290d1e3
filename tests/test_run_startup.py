"""What a run loads before its first request, and what it skips: the start-up a one-case run pays.

`specengine run` loads the judge, the app-under-test client, the run index, rich's progress bar and
httpx only when the run uses them. These
tests run the real command in a child process against a real agent and list the modules it loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import loaded_modules, write_project, write_spec

NOT_FOR_A_PLAIN_RUN = (
    "rich.progress",  # no bar off the terminal
    "specengine.judge.judge",  # no judge check
    "specengine.index.database",  # no index in this project
    "specengine.engine.app_under_test",  # no web_server
    "specengine.report.compare",  # no --baseline
    "httpx",  # JSON turns go through aiohttp
)


def _run_listing_modules(folder: Path, *args: str) -> tuple[int, set[str]]:
    code = f"sys.argv = ['specengine', *{list(args)!r}]\nfrom specengine.entry import main\nmain()\n"
    return loaded_modules(code, folder)


def test_a_plain_run_loads_only_what_it_uses(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server.url})
    write_spec(tmp_path, "a", "evals:\n  - name: hi\n    send: Hi\n    expect: [succeeded]\n")
    code, loaded = _run_listing_modules(tmp_path, "run", "a.yaml", "--output", "out.json")
    assert code == 0
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["passed"] == 1
    assert sorted(loaded & set(NOT_FOR_A_PLAIN_RUN)) == []
