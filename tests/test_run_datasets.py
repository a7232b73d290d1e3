"""`specengine run` end to end: datasets (inline, CSV, JSONL, JSON, YAML), case ids, row merging."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from support.runs import run_spec, setup_project
from support.servers import Reply

WEATHER = {"Paris": "Sunny", "London": "Rainy", "Oslo": "Snowy"}


def weather_agent(messages):
    """`weather for CITY[ in UNITS]` → `CITY: Sunny (UNITS)` and a get_weather call with days: 3."""
    text = messages[-1]["content"]
    found = re.fullmatch(r"weather for (\w+)(?: in (\w+))?", text)
    if not found:
        return f"unknown request: {text}"
    city, units = found.group(1), found.group(2) or "none"
    return Reply(
        content=f"{city}: {WEATHER.get(city, 'Unknown')} ({units})",
        tool_calls=[{"name": "get_weather", "args": {"city": city, "days": 3}}],
    )


def content_id(input_: dict, expected: dict) -> str:
    canonical = json.dumps(
        {"input": input_, "expected": expected}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


def sent(case: dict) -> str:
    return case["trials"][0]["transcript"][0]["content"]


@pytest.fixture
def project(agent_server, tmp_path):
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server)
    return tmp_path


def test_inline_rows_merge_over_the_eval_input_and_expected(project, agent_server):
    run = run_spec(
        project,
        """
        evals:
          - name: city weather
            input: {city: Nowhere, units: metric}
            expected: {weather: Unknown, units: metric}
            send: "weather for {{ input.city }} in {{ input.units }}"
            expect:
              - includes: "{{ expected.weather }} ({{ expected.units }})"
            dataset:
              - {id: paris, input: {city: Paris}, expected: {weather: Sunny}}
              - id: london
                input: {city: London, units: imperial}
                expected: {weather: Rainy, units: imperial}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::city weather[paris]", "spec.yaml::city weather[london]"]
    assert sent(run.case("city weather[paris]")) == "weather for Paris in metric"
    assert sent(run.case("city weather[london]")) == "weather for London in imperial"
    assert run.case("city weather[paris]")["row"] == "paris"
    assert sorted(b["messages"][-1]["content"] for b in agent_server.bodies) == [
        "weather for London in imperial",
        "weather for Paris in metric",
    ]


def test_csv_columns_map_to_input_expected_id_labels_and_metadata(project):
    (project / "specs" / "data").mkdir(parents=True)
    (project / "specs" / "data" / "cities.csv").write_text(
        "id,input.city,units,expected.weather,labels,metadata.owner,days\n"
        'paris,Paris,metric,Sunny,"smoke, eu",alice,3\n'
        "oslo,Oslo,metric,Sunny,eu,bob,3\n"
        ",London,imperial,Rainy,,carol,3\n",
        encoding="utf-8",
    )
    run = run_spec(
        project,
        """
        labels: [weather]
        dataset: data/cities.csv
        evals:
          - name: by city
            send: "weather for {{ input.city }} in {{ input.units }}"
            expect:
              - includes: "{{ expected.weather }}"
              - called_tool_with:
                  name: get_weather
                  args: {city: "{{ input.city }}", days: "{{ input.days }}"}
              - {value: "{{ metadata.owner }}", matches: "^(alice|bob|carol)$"}
        """,
        name="specs/weather.yaml",
    )
    assert run.exit_code == 1, run.cli.output
    london = content_id({"city": "London", "units": "imperial", "days": "3"}, {"weather": "Rainy"})
    assert run.ids == [
        "specs/weather.yaml::by city[paris]",
        "specs/weather.yaml::by city[oslo]",
        f"specs/weather.yaml::by city[{london}]",
    ]
    paris = run.case("by city[paris]")
    assert paris["status"] == "passed"
    assert sent(paris) == "weather for Paris in metric"  # input.x and bare x both fill input
    assert paris["labels"] == ["weather", "smoke", "eu"]
    assert paris["row_line"] == 2
    oslo = run.case("by city[oslo]")
    assert oslo["status"] == "failed"  # expected.weather Sunny, the agent says Snowy
    assert oslo["trials"][0]["checks"][0]["expected"] == '"Sunny"'
    assert [c["status"] for c in oslo["trials"][0]["checks"][1:]] == ["passed", "passed"]
    assert run.case(f"by city[{london}]")["labels"] == ["weather"]
    assert run.case(f"by city[{london}]")["status"] == "passed"


def test_a_csv_label_selects_rows(project, agent_server):
    (project / "cities.csv").write_text(
        'id,city,labels\nparis,Paris,"smoke,eu"\noslo,Oslo,eu\n', encoding="utf-8"
    )
    run = run_spec(
        project,
        """
        dataset: cities.csv
        evals:
          - {name: by city, send: "weather for {{ input.city }}", expect: [succeeded]}
        """,
        "--label",
        "smoke",
    )
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::by city[paris]"]
    assert agent_server.hits() == 1


@pytest.mark.parametrize("kind", ["jsonl", "json", "yaml"])
def test_jsonl_json_and_yaml_datasets(project, kind):
    rows = [
        {"id": "p", "input": {"city": "Paris"}, "expected": {"weather": "Sunny"}, "labels": ["x"]},
        {"input": {"city": "London"}, "expected": {"weather": "Rainy"}, "metadata": {"note": "hashed"}},
    ]
    path = project / "data" / f"rows.{kind}"
    path.parent.mkdir()
    if kind == "jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    elif kind == "json":
        path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    else:
        import yaml

        path.write_text(yaml.safe_dump(rows, sort_keys=False), encoding="utf-8")
    run = run_spec(
        project,
        f"""
        dataset: data/rows.{kind}
        evals:
          - name: rows
            send: "weather for {{{{ input.city }}}}"
            expect: [{{includes: "{{{{ expected.weather }}}}"}}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    hashed = content_id({"city": "London"}, {"weather": "Rainy"})
    assert run.ids == ["spec.yaml::rows[p]", f"spec.yaml::rows[{hashed}]"]
    assert run.case("rows[p]")["labels"] == ["x"]
    assert sent(run.case(f"rows[{hashed}]")) == "weather for London"


def test_content_hash_ids_survive_reordering(project):
    spec = """
        evals:
          - name: hashed
            send: "weather for {{{{ input.city }}}}"
            expect: [succeeded]
            dataset:
              {rows}
    """
    rows = [
        "- {input: {city: Paris}, expected: {weather: Sunny}}",
        "- {input: {city: London}}",
        "- {input: {city: Oslo}, expected: {weather: Snowy}}",
    ]
    first = run_spec(project, spec.format(rows="\n              ".join(rows)))
    again = run_spec(project, spec.format(rows="\n              ".join(reversed(rows))))
    assert first.exit_code == again.exit_code == 0, again.cli.output
    for ids in (first.ids, again.ids):
        assert all(re.fullmatch(r"spec\.yaml::hashed\[[0-9a-f]{8}\]", case_id) for case_id in ids)
    assert first.ids == list(reversed(again.ids))
    by_id = {case["id"]: sent(case) for case in first.cases}
    assert by_id == {case["id"]: sent(case) for case in again.cases}
    assert by_id[f"spec.yaml::hashed[{content_id({'city': 'London'}, {})}]"] == "weather for London"


def test_an_eval_may_opt_out_of_the_file_dataset(project, agent_server):
    run = run_spec(
        project,
        """
        dataset:
          - {id: a, input: {city: Paris}}
          - {id: b, input: {city: Oslo}}
        evals:
          - {name: per row, send: "weather for {{ input.city }}", expect: [succeeded]}
          - {name: once, dataset: none, send: weather for London, expect: [{includes: Rainy}]}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::per row[a]", "spec.yaml::per row[b]", "spec.yaml::once"]
    assert run.case("once")["row"] is None
    assert agent_server.hits() == 3


def test_case_ids_are_relative_to_the_project_folder_wherever_the_run_starts(project):
    spec = "evals: [{name: here, send: weather for Paris, expect: [{includes: Sunny}]}]"
    from_root = run_spec(project, spec, name="specs/deep/weather.yaml")
    assert from_root.ids == ["specs/deep/weather.yaml::here"]
    from_inside = run_spec(project / "specs" / "deep", None, paths=["weather.yaml"])
    assert from_inside.exit_code == 0, from_inside.cli.output
    assert from_inside.ids == ["specs/deep/weather.yaml::here"]
    assert from_inside.case("here")["spec"] == "specs/deep/weather.yaml"


def test_without_a_project_file_ids_are_relative_to_the_working_folder(agent_server, tmp_path):
    agent_server.script(weather_agent)
    (tmp_path / ".git").mkdir()  # the project-file search stops here
    run = run_spec(
        tmp_path,
        f"""
        endpoint: {{protocol: openai-chat, url: "{agent_server.url}"}}
        evals: [{{name: inline, send: weather for Oslo, expect: [{{includes: Snowy}}]}}]
        """,
        name="suite/inline.yaml",
    )
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["suite/inline.yaml::inline"]


def test_metadata_merges_file_then_eval_then_row(project):
    run = run_spec(
        project,
        """
        metadata: {owner: file, team: weather, tier: gold}
        evals:
          - name: merged
            metadata: {owner: eval, tier: silver}
            send: weather for Paris
            expect:
              - value: "{{ metadata.owner }}/{{ metadata.team }}/{{ metadata.tier }}"
                equals: row/weather/silver
            dataset:
              - {id: r, metadata: {owner: row}}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert run.status("merged[r]") == "passed"


def test_duplicate_row_ids_stop_the_run_naming_both_lines(project, agent_server):
    (project / "rows.jsonl").write_text(
        '{"id": "a", "input": {"city": "Paris"}}\n{"id": "b", "input": {"city": "Oslo"}}\n'
        '{"id": "a", "input": {"city": "London"}}\n',
        encoding="utf-8",
    )
    run = run_spec(
        project,
        """
        dataset: rows.jsonl
        evals: [{name: dup, send: "weather for {{ input.city }}", expect: [succeeded]}]
        """,
    )
    assert run.exit_code == 2
    assert "rows.jsonl:3:" in run.cli.stderr
    assert "line 1" in run.cli.stderr  # where the id was first used
    assert agent_server.hits() == 0
