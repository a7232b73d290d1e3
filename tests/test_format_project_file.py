"""What an eval inherits from its file and the project file, as `plan` shows it: defaults, run
configs, `${VAR}` outside the project file, endpoints, case ids, rendering errors and selection exits.

docs/spec-format.md sections: [A spec file](../docs/spec-format.md#a-spec-file),
[The project file](../docs/spec-format.md#the-project-file) (its
[Endpoints](../docs/spec-format.md#endpoints), [Run configs](../docs/spec-format.md#run-configs-configs)
and [Secrets](../docs/spec-format.md#secrets-var)),
[Row ids and case ids](../docs/spec-format.md#row-ids-and-case-ids),
[Timeouts and retries](../docs/spec-format.md#timeouts-and-retries),
[Command line and exit codes](../docs/spec-format.md#command-line-and-exit-codes).
"""

from __future__ import annotations

import json


def _cases(run_cli, cwd, *args):
    result = run_cli(["plan", *args, "--json"], cwd=cwd)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["cases"]


def _demo(write_project, folder, **more):
    return write_project(folder, endpoints={"demo": {"protocol": "demo"}}, **more)


def test_eval_values_override_the_file_labels_union_and_metadata_merge(
    run_cli, write_project, write_spec, tmp_path
):
    write_project(
        tmp_path,
        endpoints={"a": {"protocol": "demo"}, "b": {"protocol": "demo"}},
        defaults={"endpoint": "a", "timeout": 11, "trials": 2, "pass_rate": 0.5},
    )
    write_spec(
        tmp_path,
        "s",
        """
        labels: [file, both]
        metadata: {a: file, b: file, c: file}
        endpoint: b
        timeout: 5
        trials: 3
        dataset:
          - {id: r1, input: {city: Paris}, labels: [row, both], metadata: {c: row}}
        evals:
          - name: own
            labels: [ev]
            metadata: {b: ev, c: ev}
            endpoint: a
            timeout: 7
            trials: 4
            pass_rate: 0.75
            send: "{{ metadata.a }} {{ metadata.b }} {{ metadata.c }} {{ input.city }}"
            expect: [succeeded]
          - name: inherits
            dataset: none
            send: x
            expect: [succeeded]
        """,
    )
    own, inherits = _cases(run_cli, tmp_path, "s.yaml")
    assert own["id"] == "s.yaml::own[r1]"
    assert own["labels"] == ["file", "both", "ev", "row"]
    assert own["steps"][0]["send"] == "file ev row Paris"
    assert (own["endpoint"]["name"], own["timeout"], own["trials"], own["pass_rate"]) == ("a", 7.0, 4, 0.75)
    assert inherits["id"] == "s.yaml::inherits"  # dataset: none opts out of the file's dataset
    assert inherits["labels"] == ["file", "both"]
    assert (inherits["endpoint"]["name"], inherits["timeout"], inherits["trials"]) == ("b", 5.0, 3)
    assert inherits["pass_rate"] == 0.5


def test_timeout_comes_from_eval_file_defaults_else_60_and_not_the_endpoint(
    run_cli, write_project, write_spec, tmp_path
):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo", "timeout": 3}})
    write_spec(tmp_path, "s", "evals: [{name: e, send: x, expect: [succeeded]}]\n")
    (case,) = _cases(run_cli, tmp_path, "s.yaml")
    assert case["timeout"] == 60.0  # the endpoint's own timeout bounds one request, not a trial
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo", "timeout": 3}}, defaults={"timeout": 9})
    (tmp_path / "specengine.yaml").write_text(
        (tmp_path / "specengine.yaml").read_text() + "  endpoint: demo\n"
    )
    (case,) = _cases(run_cli, tmp_path, "s.yaml")
    assert case["timeout"] == 9.0


def test_case_ids_are_relative_to_the_project_folder_whatever_the_working_folder(
    run_cli, write_project, write_spec, tmp_path
):
    _demo(write_project, tmp_path / "proj", defaults={"endpoint": "demo"})
    write_spec(
        tmp_path / "proj",
        "specs/deep/s.yaml",
        """
        dataset: ../rows.csv
        evals: [{name: e, send: "{{ input.city }}", expect: [succeeded]}]
        """,
    )
    (tmp_path / "proj" / "specs" / "rows.csv").write_text("city\nParis\n")
    from_inside = _cases(run_cli, tmp_path / "proj" / "specs" / "deep", "s.yaml")
    from_outside = _cases(run_cli, tmp_path, "proj/specs/deep")
    assert [c["id"] for c in from_inside] == [c["id"] for c in from_outside]
    (case,) = from_inside
    assert (
        case["id"].startswith("specs/deep/s.yaml::e[")
        and len(case["id"]) == len("specs/deep/s.yaml::e[]") + 8
    )


def test_config_merges_into_the_project_file_recursively(run_cli, write_project, write_spec, tmp_path):
    write_project(
        tmp_path,
        endpoints={
            "a": {"protocol": "openai-chat", "url": "http://127.0.0.1:9/a", "model": "m"},
            "b": {"protocol": "openai-chat", "url": "http://127.0.0.1:9/b"},
        },
        defaults={"endpoint": "a"},
        configs={"staging": {"endpoints": {"a": {"url": "http://staging.invalid/a"}}}},
    )
    write_spec(tmp_path, "s", "evals: [{name: e, send: x, expect: [succeeded]}]\n")
    (case,) = _cases(run_cli, tmp_path, "s.yaml", "--config", "staging")
    assert case["endpoint"] == {"name": "a", "protocol": "openai-chat", "url": "http://staging.invalid/a"}
    typo = run_cli(["plan", "s.yaml", "--config", "stagin"], cwd=tmp_path)
    assert typo.exit_code == 2
    assert "unknown config 'stagin' - did you mean 'staging'?" in typo.stderr


def test_env_references_outside_the_project_file_are_literal_text(
    run_cli, write_project, write_spec, tmp_path
):
    _demo(write_project, tmp_path)
    write_spec(
        tmp_path,
        "s",
        """
        metadata: {note: "${HOME}"}
        evals:
          - name: e
            send: "token ${HOME} {{ metadata.note }}"
            expect: [{includes: "${HOME}"}]
        """,
    )
    assert run_cli(["validate", "s.yaml"], cwd=tmp_path).exit_code == 0
    (case,) = _cases(run_cli, tmp_path, "s.yaml")
    assert case["steps"][0]["send"] == "token ${HOME} ${HOME}"


def test_an_undefined_key_for_one_row_names_the_line_the_lookup_and_the_row(
    run_cli, write_project, write_spec, tmp_path
):
    _demo(write_project, tmp_path)
    (tmp_path / "rows.csv").write_text("id,town\nr1,Rome\n")
    write_spec(
        tmp_path,
        "s",
        """
        dataset: rows.csv
        evals:
          - name: e
            turns:
              - send: hi
              - send: |
                  Hello
                  weather in {{ input.city }}?
            expect: [succeeded]
        """,
    )
    result = run_cli(["plan", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.stderr.splitlines()[0].startswith("s.yaml:8:"), (
        result.stderr
    )  # the template's own line inside the block
    assert (
        "undefined variable input.city: input has no key 'city' (for the dataset row 'r1', rows.csv:2)"
        in result.stderr
    )


def test_a_selection_that_matches_no_case_exits_2(run_cli, write_project, write_spec, tmp_path):
    _demo(write_project, tmp_path)
    write_spec(tmp_path, "s", "evals: [{name: e, labels: [smoke], send: x, expect: [succeeded]}]\n")
    assert len(_cases(run_cli, tmp_path, "s.yaml", "--label", "smoke")) == 1
    for args in (["--label", "nightly"], ["-k", "zzz"]):
        result = run_cli(["plan", "s.yaml", *args], cwd=tmp_path)
        assert result.exit_code == 2, (args, result.output)
        assert "the selection matched no case" in result.stderr
    unknown = run_cli(["plan", "s.yaml::nope"], cwd=tmp_path)
    assert unknown.exit_code == 2
    assert "no eval named 'nope'" in unknown.stderr


def test_an_eval_with_no_endpoint_is_an_error_at_its_line_without_a_project(run_cli, write_spec, tmp_path):
    (tmp_path / ".git").mkdir()  # no project file above this folder is looked at
    write_spec(
        tmp_path,
        "s",
        """
        evals:
          - name: none
            send: x
            expect: [succeeded]
          - name: unknown
            endpoint: demo
            send: x
            expect: [succeeded]
          - name: inline
            endpoint: {protocol: demo}
            send: x
            expect: [succeeded]
        """,
    )
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    assert lines[0].startswith("s.yaml:2:5: this eval has no endpoint: set endpoint:")
    assert lines[1].startswith("s.yaml:6:15: unknown endpoint 'demo': no specengine.yaml was found")
    write_spec(
        tmp_path, "inline", "evals: [{name: e, endpoint: {protocol: demo}, send: x, expect: [succeeded]}]"
    )
    (case,) = _cases(run_cli, tmp_path, "inline.yaml")
    assert case["endpoint"]["protocol"] == "demo"


def test_an_unknown_endpoint_name_gets_a_did_you_mean(run_cli, write_project, write_spec, tmp_path):
    _demo(write_project, tmp_path, defaults={"endpoint": "demo"})
    write_spec(tmp_path, "s", "evals: [{name: e, endpoint: dmeo, send: x, expect: [succeeded]}]\n")
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert "s.yaml:1:29: unknown endpoint 'dmeo' - did you mean 'demo'?" in result.stdout
