"""`import specengine`: run specs, load and compare runs, validate specs from Python, the same flow
the command line runs, against a scripted agent on loopback; a notebook's view of a run; and an
import that loads nothing heavy until it is used."""

from __future__ import annotations

import asyncio
import io
import pydoc

import pytest
from support.cli import REPO_ROOT, loaded_modules, write_project, write_spec
from support.servers import AgentServer, Reply

import specengine
from specengine import api
from specengine.results.decode import read_run

SPEC = """
dataset:
  - {id: paris, input: {city: Paris}, expected: {weather: Sunny}}
  - {id: oslo, input: {city: Oslo}, expected: {weather: Snowy}}
evals:
  - name: weather by city
    send: "What's the weather in {{ input.city }}?"
    expect:
      - includes: "{{ expected.weather }}"
  - name: later
    dataset: none
    skip: not built yet
    send: later
"""
HOSTILE = "got <script>alert(1)</script>"
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "results"


def agent(messages):
    return Reply(content="Sunny <b>today</b>" if "Paris" in messages[-1]["content"] else "Rainy today")


@pytest.fixture(scope="module")
def server():
    with AgentServer() as agent_server:
        agent_server.script(agent)
        yield agent_server


@pytest.fixture
def project(tmp_path, server):
    server.clear()
    write_project(tmp_path, endpoints={"agent": server.endpoint(retries=0)})
    write_spec(tmp_path / "specs", "weather", SPEC)
    return tmp_path


def test_run_returns_the_typed_run_it_wrote_and_load_reads_it_back(project, server):
    log = io.StringIO()
    run = specengine.run(project / "specs", output=project / "out.json", name="api", log=log)
    assert isinstance(run, specengine.Run) and run.path == project / "out.json" and run.name == "api"
    by_id = {case.id: case for case in run}
    assert sorted(by_id) == [
        "specs/weather.yaml::later",
        "specs/weather.yaml::weather by city[oslo]",
        "specs/weather.yaml::weather by city[paris]",
    ]
    oslo = by_id["specs/weather.yaml::weather by city[oslo]"]
    assert (oslo.status, oslo.title, oslo.row, oslo.passed_trials, oslo.n_trials) == (
        "failed",
        "weather by city[oslo]",
        "oslo",
        0,
        1,
    )
    (check,) = oslo.trials[0].checks
    assert isinstance(check, specengine.Check)
    assert (check.matcher, check.status, check.gate, check.line) == ("includes", "failed", True, 8)
    assert by_id["specs/weather.yaml::later"].why_skipped == "not built yet"
    assert (run.summary.passed, run.summary.failed, run.summary.skipped, run.pass_rate) == (1, 1, 1, 0.5)
    assert [case.id for case in run.failed] == ["specs/weather.yaml::weather by city[oslo]"]
    assert len(server.bodies) == 2
    assert "1 failed" in log.getvalue()  # the summary the command prints, where `log` said
    again = specengine.load(project / "out.json")
    assert again == run
    assert specengine.compare(run, again).regressions == ()


def test_a_spec_problem_raises_before_anything_is_sent_and_validate_lists_it(project, server):
    bad = write_spec(
        project / "specs", "bad", "evals:\n  - name: x\n    send: hi\n    expect:\n      - includs: a\n"
    )
    with pytest.raises(specengine.UsageError) as raised:
        specengine.run(project / "specs", output=project / "out.json")
    assert any("bad.yaml:5:9" in line for line in raised.value.lines), raised.value.lines
    assert server.bodies == [] and not (project / "out.json").exists()
    (problem,) = specengine.validate(bad)
    assert isinstance(problem, specengine.Diagnostic)
    assert (problem.line, problem.col, problem.severity) == (5, 9, "error")
    assert "includes" in problem.message  # the "did you mean"
    bad.unlink()
    assert specengine.validate(project / "specs") == []


def test_run_async_runs_where_an_event_loop_is_already_running(project, server):
    async def notebook_cell():
        other = asyncio.create_task(asyncio.sleep(0))  # the notebook's loop keeps running its work
        run = await specengine.run_async(project / "specs", output=project / "async.json", labels=())
        await other
        return run

    run = asyncio.run(notebook_cell())
    assert run.summary.cases == 3 and run.path == project / "async.json"


def test_endpoint_and_matrix_run_the_cells_the_command_line_would(project, server):
    run = specengine.run(project / "specs", endpoint="agent", output=project / "m.json", keyword="paris")
    assert [case.id for case in run] == ["specs/weather.yaml::weather by city[paris] @ agent"]
    assert run.cases[0].cell == "agent"


def test_compare_reads_paths_and_names_the_regressions():
    comparison = specengine.compare(FIXTURES / "base.json", specengine.load(FIXTURES / "head.json"))
    assert comparison.regressed
    assert [change.id for change in comparison.regressions] == [
        "specs/cmp.yaml::breaks",
        "specs/cmp.yaml::errors now",
    ]
    assert [change.id for change in comparison.fixes] == ["specs/cmp.yaml::gets fixed"]


def test_a_notebook_shows_a_run_as_a_table_with_agent_text_escaped():
    run = read_run(
        {
            "run_id": "r1<i>",
            "cases": [
                {"id": "s.yaml::ok", "status": "passed"},
                {
                    "id": "s.yaml::bad",
                    "status": "failed",
                    "trials": [
                        {
                            "status": "failed",
                            "latency_s": 1.5,
                            "checks": [{"name": "equals", "status": "failed", "reason": HOSTILE}],
                        }
                    ],
                },
            ],
        }
    )
    shown = run._repr_html_()
    assert "<script>" not in shown and "got &lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert "r1&lt;i&gt;" in shown and "2 cases, 1 passed, 1 failed" in shown and "50.0% pass rate" in shown
    assert shown.count("<tr>") == 3  # the header and one row per case
    pandas = pytest.importorskip("pandas")
    frame = run.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert frame["status"].tolist() == ["passed", "failed"]
    assert frame["latency_s"].tolist()[1] == 1.5
    assert frame["why"].tolist() == ["", "equals: got <script>alert(1)</script>"]


def test_import_specengine_loads_nothing_heavy_and_help_reads_well(tmp_path):
    code, modules = loaded_modules("import specengine\nspecengine.load", tmp_path)
    assert code == 0
    heavy = {"httpx", "aiohttp", "openai", "rich", "pandas", "typer", "jinja2"}
    assert heavy & modules == set()
    overview = pydoc.render_doc(specengine, renderer=pydoc.plaintext)
    assert 'specengine.run("specs/")' in overview and "help(specengine.api)" in overview
    functions = pydoc.render_doc(api, renderer=pydoc.plaintext)
    for shown in ("run(paths", "run_async(paths", "load(path", "compare(base", "validate(paths"):
        assert shown in functions, shown


def test_the_api_names_stay_the_api_functions_whatever_the_stages_import():
    """Importing a package sets it on its parent: no stage package is named `run` or `validate`."""
    import specengine.engine.prepare
    import specengine.validation.validator  # noqa: F401

    assert specengine.run is api.run and specengine.validate is api.validate
    assert not callable(specengine.engine) and not callable(specengine.validation)
