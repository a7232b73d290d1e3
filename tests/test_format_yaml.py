"""YAML is read safely with positions; YAML 1.1 surprises and numbers where text is expected. Every
probe goes through the real CLI (`validate`, `plan`, `run`).

docs/spec-format.md section: [YAML, and what to quote](../docs/spec-format.md#yaml-and-what-to-quote).
"""

from __future__ import annotations

import json

import pytest
from support.servers import Reply


def _plan(run_cli, cwd, *args):
    result = run_cli(["plan", *args, "--json"], cwd=cwd)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["cases"]


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        pytest.param(
            "evals:\n  - name: a\n    send: x\n    expect: [succeeded]\n    send: y\n",
            ["s.yaml:5:5: duplicate key 'send' (first defined on line 3)"],
            id="duplicate keys name both lines",
        ),
        pytest.param(
            "evals:\n  - name: a\n    send: x\n    expect:\n\t- succeeded\n",
            ["s.yaml:5:1: a tab is used for indentation here: YAML needs spaces"],
            id="a tab in indentation",
        ),
        pytest.param(
            "evals:\n  - name: a\n    send:\n    expect:\n      - equals: ~\n",
            [
                "s.yaml:3:10: send: expected text; put it in quotes",
                "s.yaml:5:17: equals: expected text; put it in quotes",
            ],
            id="null where text is expected",
        ),
    ],
)
def test_a_yaml_slip_is_an_error_at_its_line(run_cli, write_project, tmp_path, text, problems):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    (tmp_path / "s.yaml").write_text(text)
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    for problem in problems:
        assert problem in result.stdout


def test_yaml_11_values_and_keys_where_text_is_expected_say_quote_it(
    run_cli, write_project, write_spec, tmp_path
):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    write_spec(
        tmp_path,
        "s",
        """
        suite: on
        description: 2024-01-01
        labels: [yes, "no"]
        evals:
          - name: a
            send: no
            expect:
              - includes: 7:30
              - judge: custom
                prompt: "{{ reply }}"
                choices: {Yes: 1, "No": 0}
        """,
    )
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    expected = {
        "s.yaml:1:8": "the value on",
        "s.yaml:2:14": "the value 2024-01-01 is read as a date",
        "s.yaml:3:10": "the value yes",
        "s.yaml:6:11": "the value no",
        "s.yaml:8:19": "the value 7:30 is read as the number 450",
        "s.yaml:11:19": "the key Yes",
    }
    for where, start in expected.items():
        found = [line for line in lines if line.startswith(f"{where}: {start}")]
        assert found, (where, result.stdout)
        assert "quote it" in found[0]
    assert len(lines) == len(expected), result.stdout  # the quoted "no" is not reported


def test_numbers_keep_their_source_text_where_text_is_expected(run_cli, write_project, write_spec, tmp_path):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    write_spec(
        tmp_path,
        "s",
        """
        suite: 1.10
        labels: [1.10, 007]
        evals:
          - name: 1.10
            input: {version: 1.10}
            send: "version {{ input.version }}"
            expect:
              - equals: 1.10
              - includes: [1.10, 2.50]
              - name: 1.20
                includes: x
        """,
    )
    (case,) = _plan(run_cli, tmp_path, "s.yaml")
    assert case["id"] == "s.yaml::1.10"
    assert case["suite"] == "1.10"
    assert case["labels"] == ["1.10", "007"]
    assert case["steps"][0]["send"] == "version 1.10"
    names = [check["name"] for check in case["steps"][0]["checks"]]
    assert names == ['equals "1.10"', 'includes "1.10", "2.50"', "1.20"]


def test_numbers_in_a_list_argument_are_checked_as_written(
    run_cli, write_project, write_spec, tmp_path, agent_server
):
    agent_server.script(lambda messages: Reply(content="release 1.10 and 2.50"))
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(
        tmp_path,
        "s",
        """
        evals:
          - name: versions
            send: which versions?
            expect:
              - includes: [1.10, 2.50]
              - includes_any: [3.0, 1.10]
              - not_includes: [1.1.0]
        """,
    )
    out = tmp_path / "out.json"
    result = run_cli(["run", "s.yaml", "--output", out], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    checks = json.loads(out.read_text())["cases"][0]["checks"]
    assert [check["status"] for check in checks] == ["passed", "passed", "passed"]
    assert checks[0]["name"] == 'includes "1.10", "2.50"'
