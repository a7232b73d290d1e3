"""How `specengine run` orders its work: a worker sends its next trial before it grades the last one,
so grading happens while the agent answers instead of between one request and the next."""

from __future__ import annotations

import time

from support.runs import run_spec, setup_project

from specengine.engine import scheduler

SPEC = """
evals:
  - {name: first, send: one, expect: [{includes: one}]}
  - {name: second, send: two, expect: [{includes: two}]}
  - {name: third, send: three, expect: [{includes: three}]}
"""


def test_the_next_request_is_on_the_wire_before_the_last_trial_is_graded(agent_server, tmp_path, monkeypatch):
    setup_project(tmp_path, agent_server)
    real_grade_run = scheduler.grade_run
    requests_seen: list[tuple[str, int]] = []

    async def grade_run(case, run, *rest):
        # The scripted server counts a request in its own thread. Waiting here blocks the event loop,
        # so only a request already written to the socket can arrive: graded before the next trial
        # was sent, the count would stay where it was for the whole wait.
        wanted = min(case.index + 2, 3)
        deadline = time.monotonic() + 5
        while agent_server.hits() < wanted and time.monotonic() < deadline:
            time.sleep(0.002)
        requests_seen.append((case.eval_name, agent_server.hits()))
        return await real_grade_run(case, run, *rest)

    monkeypatch.setattr(scheduler, "grade_run", grade_run)
    run = run_spec(tmp_path, SPEC, "-j", "1")

    assert run.exit_code == 0, run.cli.output
    assert requests_seen == [("first", 2), ("second", 3), ("third", 3)]
    assert [case["status"] for case in run.cases] == ["passed", "passed", "passed"]  # the last one too
