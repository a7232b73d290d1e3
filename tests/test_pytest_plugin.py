"""The pytest plugin, run by pytest's own `pytester`: inert unless asked, a case per item named as
specengine names it, -k and --lf choosing what is sent, the chosen cases sent concurrently in one
run, and each item reporting its case's stored outcome (failed checks' reasons, skips, errors);
under pytest-xdist too, where the workers share that one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import REPO_ROOT, write_project
from support.runs import validate_results
from support.servers import AgentServer, Reply

pytest_plugins = ("pytester",)
PLUGIN = ("-p", "specengine.pytest_plugin")
XDIST = ("-p", "xdist", "-n", "2")

SPEC = """
dataset:
  - {id: paris, input: {city: Paris}, expected: {weather: Sunny}}
  - {id: oslo, input: {city: Oslo}, expected: {weather: Snowy}}
evals:
  - name: weather by city
    send: "What's the weather in {{ input.city }}?"
    expect:
      - includes: "{{ expected.weather }}"
  - name: broken tool
    dataset: none
    send: boom
    expect: [succeeded]
  - name: later
    dataset: none
    skip: not built yet
    send: later
"""
WEATHER = "specs/weather.yaml::weather by city"


def agent(messages):
    text = messages[-1]["content"]
    if text == "boom":
        return Reply(status=500)
    return Reply(content="Sunny today" if "Paris" in text else "Rainy today", delay=0.3)


@pytest.fixture(scope="module")
def server():
    with AgentServer() as agent_server:
        agent_server.script(agent)
        yield agent_server


@pytest.fixture
def project(pytester, server):
    server.clear()
    write_project(pytester.path, endpoints={"agent": server.endpoint(retries=0)})
    (pytester.path / "specs").mkdir()
    (pytester.path / "specs" / "weather.yaml").write_text(SPEC, encoding="utf-8")
    pytester.makepyfile(test_unit="def test_unit():\n    assert True\n")
    return pytester


def sent(server) -> list[str]:
    return sorted(body["messages"][-1]["content"] for body in server.bodies)


def test_each_case_is_an_item_with_its_stored_outcome_and_they_run_together(project, server):
    result = project.runpytest(*PLUGIN, "--specengine", "specs/", "-v", "-rA")
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            f"{WEATHER}[[]paris[]] PASSED*",
            f"{WEATHER}[[]oslo[]] FAILED*",
            "specs/weather.yaml::broken tool ERROR*",
            "specs/weather.yaml::later SKIPPED (not built yet)*",
        ]
    )
    text = result.stdout.str()
    assert (
        'specs/weather.yaml:9: includes "Snowy" (turn 1): the reply does not include "Snowy"\n'
        '  expected: "Snowy"\n  got:      Rainy today' in text
    )
    assert "SKIPPED [1] specs/weather.yaml:14: not built yet" in text  # at the case's line
    assert "HTTP 500" in text  # the errored case's reason
    assert sent(server) == ["What's the weather in Oslo?", "What's the weather in Paris?", "boom"]
    assert server.max_in_flight >= 2  # one run, concurrently: not one request per item in turn
    assert "results: " in text and "specengine report" in text


def test_a_run_that_cannot_start_fails_each_item_with_why(project, server, free_port):
    kept = ("--specengine-output", "out/results.json")
    project.runpytest(*PLUGIN, "--specengine", "specs/", "-k", "paris", *kept).assert_outcomes(
        passed=1, deselected=3
    )
    server.clear()
    web_server = {"command": "exit 3", "url": f"http://127.0.0.1:{free_port}/health", "timeout": 5}
    write_project(project.path, endpoints={"agent": server.endpoint()}, web_server=web_server)
    result = project.runpytest(*PLUGIN, "--specengine", "specs/", "-k", "paris", *kept)
    result.assert_outcomes(errors=1, deselected=3)  # not the earlier run's pass, still in the file
    result.stdout.fnmatch_lines(
        ["*the specengine run could not start (exit 2)*", "*web_server: `exit 3` exited with code 3*"]
    )
    assert server.hits() == 0


def test_a_missing_variable_is_a_collection_error_naming_it(project, server):
    endpoint = server.endpoint(headers={"Authorization": "${NO_SUCH_TOKEN}"})
    write_project(project.path, endpoints={"agent": endpoint})
    result = project.runpytest(*PLUGIN, "--specengine", "specs/")
    result.stdout.fnmatch_lines(["*specengine.yaml:*NO_SUCH_TOKEN*"])
    assert result.ret != pytest.ExitCode.OK and server.hits() == 0


def test_k_and_lf_choose_what_is_sent(project, server):
    chosen = project.runpytest(*PLUGIN, "--specengine", "specs/", "-k", "oslo")
    chosen.assert_outcomes(failed=1, deselected=3)
    assert sent(server) == ["What's the weather in Oslo?"]  # deselected cases are never sent

    project.runpytest(*PLUGIN, "--specengine", "specs/")
    server.clear()
    again = project.runpytest(*PLUGIN, "--specengine", "specs/", "--lf")
    again.assert_outcomes(failed=1, errors=1)  # the passed and skipped cases are not even collected
    assert sent(server) == ["What's the weather in Oslo?", "boom"]


def test_without_being_asked_it_does_nothing(project, server):
    result = project.runpytest(*PLUGIN, "specs/")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    everything = project.runpytest(*PLUGIN)
    everything.assert_outcomes(passed=1)  # the unit test alone
    assert server.hits() == 0


def test_the_ini_file_names_the_specs_beside_the_unit_tests(project, server):
    project.makeini("[pytest]\nspecengine_paths = specs\n")
    result = project.runpytest(*PLUGIN, "-k", "paris or unit")
    result.assert_outcomes(passed=2, deselected=3)
    assert sent(server) == ["What's the weather in Paris?"]


def test_a_spec_problem_is_a_collection_error_at_its_place(project, server):
    (project.path / "specs" / "weather.yaml").write_text(
        "evals:\n  - name: x\n    sendd: hi\n", encoding="utf-8"
    )
    result = project.runpytest(*PLUGIN, "--specengine", "specs/")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*specs/weather.yaml:3:5: *sendd*"])
    assert server.hits() == 0


def test_asking_without_paths_says_how(project):
    result = project.runpytest(*PLUGIN, "--specengine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*name the spec files or folders (pytest --specengine specs/)*"])


def test_an_unasked_session_loads_none_of_specengine(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # other plugins load what they load
    pytester.makepyfile(
        test_light="""
        import sys

        def test_nothing_heavy_loaded():
            heavy = ("specengine.", "aiohttp", "yaml", "jinja2")
            loaded = [name for name in sys.modules if name.startswith(heavy)]
            assert loaded == ["specengine.pytest_plugin"]
        """
    )
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def reported(result) -> list[str]:
    """The short summary's lines (-rA), worker labels aside, in order."""
    kinds = ("PASSED ", "FAILED ", "ERROR ", "SKIPPED ")
    return sorted(line for line in result.stdout.lines if line.startswith(kinds))


@pytest.fixture
def workers(project, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the workers are processes of their own
    return project


def test_under_xdist_each_case_is_sent_once_with_the_outcomes_of_one_process(workers, server):
    alone = workers.runpytest(*PLUGIN, "--specengine", "specs/", "-rA")
    server.clear()
    result = workers.runpytest(
        *PLUGIN, *XDIST, "--specengine", "specs/", "-v", "-rA", "--specengine-output", "out/results.json"
    )
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=1)
    # both workers were handed cases (by two), each needing outcomes: one run served them both
    assert {"[gw0]", "[gw1]"} <= {line.split()[0] for line in result.stdout.lines if " specs/" in line}
    assert sent(server) == ["What's the weather in Oslo?", "What's the weather in Paris?", "boom"]
    assert server.max_in_flight >= 2  # still one concurrent run
    assert reported(result) == reported(alone)  # the same outcomes, failure texts and skip places
    assert (
        'specs/weather.yaml:9: includes "Snowy" (turn 1): the reply does not include "Snowy"\n'
        '  expected: "Snowy"\n  got:      Rainy today' in result.stdout.str()
    )
    written = workers.path / "out" / "results.json"
    assert f"results: {written} (specengine report" in result.stdout.str()  # named by the controller
    results = json.loads(written.read_text(encoding="utf-8"))
    validate_results(results)
    assert sorted(case["status"] for case in results["cases"]) == ["error", "failed", "passed", "skipped"]


def test_under_xdist_k_sends_only_the_chosen_cases(workers, server):
    result = workers.runpytest(*PLUGIN, *XDIST, "--specengine", "specs/", "-k", "paris or broken")
    result.assert_outcomes(passed=1, errors=1)
    assert sent(server) == ["What's the weather in Paris?", "boom"]
    named = [line for line in result.stdout.lines if line.startswith("results: ")]
    written = json.loads(Path(named[0].split()[1]).read_text(encoding="utf-8"))  # the default place
    assert sorted(case["id"].rsplit("::", 1)[1] for case in written["cases"]) == [
        "broken tool",
        "weather by city[paris]",
    ]


def test_a_worker_that_dies_running_the_cases_frees_the_others_who_do_not_send_them_again(tmp_path):
    from specengine.pytest_plugin.shared_run import SharedRun

    shared = SharedRun(tmp_path, tmp_path / "results.json")
    dies = (
        "import os, sys; from pathlib import Path\n"
        "from specengine.pytest_plugin.shared_run import SharedRun\n"
        "SharedRun(Path(sys.argv[1]), Path(sys.argv[1], 'results.json')).run_once(lambda: os._exit(9), 'gw1')"
    )
    died = subprocess.run([sys.executable, "-c", dies, str(tmp_path)], cwd=REPO_ROOT, check=False)
    assert died.returncode == 9

    def sent_again():
        raise AssertionError("the cases were sent a second time")

    ran = shared.run_once(sent_again, "gw0")  # the lock died with its holder: no wait
    assert ran.exit_code is None
    assert "pytest-xdist worker gw1 ran it and stopped" in ran.printed
    assert shared.finished() is None  # the controller names no results file
