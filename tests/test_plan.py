"""`specengine plan` end to end: what would be sent, to where, with which checks, and no request made."""

from __future__ import annotations

import json

import pytest
from support.cli import run_cli, write_project, write_spec

SPEC = """
suite: weather
labels: [smoke]
evals:
  - name: single
    input: {city: Paris}
    send: "What's the weather in {{ input.city }}?"
    expect:
      - includes: Sunny
      - {called_tool: get_weather, soft: true}
  - name: chat
    trials: 3
    pass_rate: 0.5
    turns:
      - send: hello
        expect: [succeeded]
      - reset
      - send: "bye from {{ input.city }}"
    expect:
      - {includes: "{{ input.city }}", name: names the city}
    dataset:
      - {id: oslo, input: {city: Oslo}}
  - {name: later, skip: not ready, send: hi, expect: [succeeded]}
"""


SET = {"PLAN_TOKEN": "set"}


@pytest.fixture
def project(agent_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(headers={"Authorization": "Bearer ${PLAN_TOKEN}"})},
    )
    write_spec(tmp_path, "specs/weather.yaml", SPEC)
    return tmp_path


def test_plan_prints_ids_endpoints_messages_and_check_lines(project, agent_server):
    unset = run_cli(["plan", "specs"], cwd=project, env={"PLAN_TOKEN": None})
    assert unset.exit_code == 2  # as run would stop on it, at its line, before anything is sent
    assert "specengine.yaml:6:22: endpoint 'agent': environment variable PLAN_TOKEN not set" in unset.stderr
    result = run_cli(["plan", "specs"], cwd=project, env=SET)  # its value is never read
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "specs/weather.yaml::single  (specs/weather.yaml:4)" in out
    assert "specs/weather.yaml::chat[oslo]  (specs/weather.yaml:10)" in out
    assert "specs/weather.yaml::later" in out
    assert f"endpoint: agent [openai-chat] {agent_server.url}" in out
    assert 'turn 1 send: "What\'s the weather in Paris?"' in out
    assert "turn 2 send: 'bye from Oslo'" in out
    assert "--- reset ---" in out
    assert '- includes "Sunny"  [line 8]' in out
    assert "- called_tool get_weather (soft)  [line 9]" in out
    assert "- succeeded  [line 15]" in out
    assert "- names the city  [line 19]" in out
    assert "trials: 3 (pass rate 0.5)" in out
    assert "skipped: not ready" in out
    assert "3 cases" in result.stderr
    assert agent_server.hits() == 0


def test_plan_json_parses_and_holds_every_step(project, agent_server):
    result = run_cli(["plan", "specs/weather.yaml", "--json"], cwd=project, env=SET)
    assert result.exit_code == 0, result.output
    cases = json.loads(result.stdout)["cases"]
    assert [case["id"] for case in cases] == [
        "specs/weather.yaml::single",
        "specs/weather.yaml::chat[oslo]",
        "specs/weather.yaml::later",
    ]
    single, chat, later = cases
    assert single["endpoint"] == {"name": "agent", "protocol": "openai-chat", "url": agent_server.url}
    assert single["labels"] == ["smoke"]
    assert single["suite"] == "weather"
    assert single["steps"] == [
        {
            "send": "What's the weather in Paris?",
            "checks": [
                {"name": 'includes "Sunny"', "matcher": "includes", "line": 8, "gate": True,
                 "threshold": {"gte": 1.0}},
                {"name": "called_tool get_weather", "matcher": "called_tool", "line": 9, "gate": False,
                 "threshold": {"gte": 1.0}},
            ],
        }
    ]  # fmt: skip
    assert [step.get("send") for step in chat["steps"]] == ["hello", None, "bye from Oslo"]
    assert chat["steps"][1] == {"reset": True}
    assert [c["line"] for c in chat["steps"][2]["checks"]] == [19]  # the eval's expect joins the last turn
    assert (chat["trials"], chat["pass_rate"]) == (3, 0.5)
    assert later["skip"] == "not ready"
    assert agent_server.hits() == 0


@pytest.mark.parametrize(
    ("selection", "ids"),
    [
        (["specs/weather.yaml::chat"], ["specs/weather.yaml::chat[oslo]"]),
        (["specs", "-k", "single"], ["specs/weather.yaml::single"]),
    ],
)
def test_plan_selection_options(project, agent_server, selection, ids):
    result = run_cli(["plan", *selection, "--json"], cwd=project, env=SET)
    assert [case["id"] for case in json.loads(result.stdout)["cases"]] == ids
    assert agent_server.hits() == 0


def test_plan_never_prints_a_secret(project):
    result = run_cli(["plan", "specs", "--json"], cwd=project, env={"PLAN_TOKEN": "plan-secret-123"})
    assert result.exit_code == 0, result.output
    assert "plan-secret-123" not in result.output


def test_an_undefined_variable_in_send_is_reported_with_file_and_line(project, agent_server):
    write_spec(
        project,
        "specs/typo.yaml",
        """
        evals:
          - name: typo
            send: "weather in {{ inptu.city }}"
            expect: [succeeded]
        """,
    )
    result = run_cli(["plan", "specs/typo.yaml"], cwd=project)
    assert result.exit_code == 2
    assert "specs/typo.yaml:3:" in result.stderr
    assert "inptu" in result.stderr
    assert "Traceback" not in result.output
    assert agent_server.hits() == 0


def test_a_row_missing_a_key_is_reported_at_the_template_line(project, agent_server):
    write_spec(
        project,
        "specs/rows.yaml",
        """
        evals:
          - name: rows
            turns:
              - send: hello
              - send: |
                  first line
                  weather in {{ input.country }}
            expect: [succeeded]
            dataset:
              - {id: a, input: {city: Paris}}
        """,
    )
    for command in (["plan", "specs/rows.yaml"], ["run", "specs/rows.yaml", "--output", "out.json"]):
        result = run_cli(command, cwd=project, env={"PLAN_TOKEN": "x"})
        assert result.exit_code == 2, (command, result.output)
        assert "specs/rows.yaml:7:" in result.stderr
        assert "country" in result.stderr
        assert "Traceback" not in result.output
    assert agent_server.hits() == 0
    assert not (project / "out.json").exists()


def test_plan_says_judge_checks_will_be_skipped_without_a_judge(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server.endpoint()})
    write_spec(
        tmp_path,
        "specs/j",
        "evals: [{name: polite, send: hi, expect: [{judge: closed_qa, criteria: Is it polite?}]}]",
    )
    without = run_cli(["plan", "specs"], cwd=tmp_path)
    assert without.exit_code == 0, without.output
    assert "judge closed_qa (will be skipped: no judge configured)" in without.stdout
    with_judge = run_cli(["plan", "specs", "--judge-model", "m"], cwd=tmp_path)
    assert with_judge.exit_code == 0, with_judge.output
    assert "will be skipped" not in with_judge.stdout
