"""`specengine regrade`: the stored transcripts are graded by the current specs, and gates that could
not run are named with their real cause.

docs/spec-format.md sections:
[Command line and exit codes](../docs/spec-format.md#command-line-and-exit-codes),
[Outcomes: checks, trials and cases](../docs/spec-format.md#outcomes-checks-trials-and-cases).
"""

from __future__ import annotations

import json

from support.cli import run_cli
from support.runs import run_spec, setup_project, validate_results


def test_a_turn_the_transcript_lacks_is_a_skipped_gate_with_its_cause(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    first = run_spec(tmp_path, "evals: [{name: a, turns: [{send: one, expect: [succeeded]}]}]\n")
    assert first.exit_code == 0
    spec_text = """\
evals:
  - name: a
    turns:
      - send: one
        expect: [succeeded]
      - send: two
        expect: [{includes: two}]
"""
    (tmp_path / "spec.yaml").write_text(spec_text, encoding="utf-8")
    agent_server.clear()
    regraded = run_cli(["regrade", "out/results.json", "--output", "out/regraded.json"], cwd=tmp_path)
    assert agent_server.hits() == 0
    results = json.loads((tmp_path / "out" / "regraded.json").read_text(encoding="utf-8"))
    validate_results(results)
    check = results["cases"][0]["trials"][0]["checks"][1]
    assert (check["status"], check["turn"]) == ("skipped", 2)
    assert "no turn 2" in check["reason"] and "run the case again" in check["reason"]
    assert results["summary"]["gates_skipped"] == 1
    output = " ".join(regraded.output.split())
    assert "1 gate skipped" in output
    assert "--judge-model" not in output
    assert "no turn 2" in output
