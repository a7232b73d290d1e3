"""`specengine run` end to end: choosing cases with --label, -k, PATH::eval and --limit."""

from __future__ import annotations

import pytest
from support.cli import write_spec
from support.runs import last_user, run_spec, setup_project, validate_results

from specengine.results.decode import read_selection
from specengine.results.selection import coverage

SPEC = """
labels: [weather]
evals:
  - {name: alpha one, labels: [smoke], send: a1, expect: [succeeded]}
  - {name: alpha two, labels: [slow], send: a2, expect: [succeeded]}
  - {name: beta, labels: [nightly], send: b, expect: [succeeded]}
  - {name: gamma, send: g, expect: [succeeded]}
"""


@pytest.fixture
def project(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "spec.yaml", SPEC)
    write_spec(
        tmp_path,
        "other.yaml",
        """
        evals:
          - {name: other alpha, labels: [smoke], send: o, expect: [succeeded]}
        """,
    )
    return tmp_path


def sent(server) -> list[str]:
    return sorted(last_user(body) for body in server.bodies)


def test_label_is_repeatable_and_selects_any_of_them(project, agent_server):
    run = run_spec(project, None, "--label", "smoke", "--label", "nightly", paths=["."])
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["other.yaml::other alpha", "spec.yaml::alpha one", "spec.yaml::beta"]
    assert sent(agent_server) == ["a1", "b", "o"]
    assert run.results["selection"] == {
        "paths": ["."],
        "labels": ["smoke", "nightly"],
        "plan_cases": 5,
        "selected_cases": 3,
    }
    validate_results(run.results)
    assert coverage(read_selection(run.results), 3).text() == "partial: --label smoke, --label nightly"


def test_file_labels_count_for_selection(project, agent_server):
    run = run_spec(project, None, "--label", "weather")
    assert [case["eval"] for case in run.cases] == ["alpha one", "alpha two", "beta", "gamma"]
    assert run.case("alpha one")["labels"] == ["weather", "smoke"]


def test_k_selects_case_ids_containing_the_text(project, agent_server):
    run = run_spec(project, None, "-k", "alpha", paths=["."])
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["other.yaml::other alpha", "spec.yaml::alpha one", "spec.yaml::alpha two"]
    assert agent_server.hits() == 3
    selection = {"paths": ["."], "keyword": "alpha", "plan_cases": 5, "selected_cases": 3}
    assert run.results["selection"] == selection


def test_k_ignores_upper_and_lower_case(project, agent_server):
    run = run_spec(project, None, "-k", "ALPHA T", paths=["."])
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::alpha two"]
    assert sent(agent_server) == ["a2"]


def test_k_and_label_combine(project, agent_server):
    run = run_spec(project, None, "-k", "alpha", "--label", "slow", paths=["."])
    assert run.ids == ["spec.yaml::alpha two"]
    assert sent(agent_server) == ["a2"]


def test_path_with_eval_name_selects_one_eval(project, agent_server):
    run = run_spec(project, None, paths=["spec.yaml::beta"])
    assert run.exit_code == 0, run.cli.output
    assert run.ids == ["spec.yaml::beta"]
    assert sent(agent_server) == ["b"]


def test_two_eval_names_from_one_file(project, agent_server):
    run = run_spec(project, None, paths=["spec.yaml::gamma", "spec.yaml::alpha two"])
    assert run.ids == ["spec.yaml::alpha two", "spec.yaml::gamma"]  # plan order, not argument order
    named = ["spec.yaml::gamma", "spec.yaml::alpha two"]
    assert run.results["selection"] == {"paths": named, "evals": named, "plan_cases": 4, "selected_cases": 2}
    assert coverage(read_selection(run.results), 2).reason == "spec.yaml::gamma, spec.yaml::alpha two"
    assert sent(agent_server) == ["a2", "g"]


def test_limit_takes_the_first_cases_in_plan_order(project, agent_server):
    run = run_spec(project, None, "--limit", "2")
    assert run.ids == ["spec.yaml::alpha one", "spec.yaml::alpha two"]
    assert agent_server.hits() == 2
    # the limit cut the plan: the rest is never compiled, so the plan's size is not recorded
    assert run.results["selection"] == {"paths": ["spec.yaml"], "limit": 2, "selected_cases": 2}
    assert coverage(read_selection(run.results), 2).text() == "partial: --limit 2"


def test_a_run_of_every_case_records_a_full_selection(project, agent_server):
    run = run_spec(project, None, "--limit", "9")  # a limit the plan does not reach cuts nothing
    selection = {"paths": ["spec.yaml"], "limit": 9, "plan_cases": 4, "selected_cases": 4}
    assert run.results["selection"] == selection
    assert coverage(read_selection(run.results), len(run.ids)).full


def test_limit_applies_after_the_filters(project, agent_server):
    run = run_spec(project, None, "-k", "a", "--label", "nightly", "--limit", "1")
    assert run.ids == ["spec.yaml::beta"]


@pytest.mark.parametrize(
    "args",
    [["--label", "nope"], ["-k", "no such case"], ["--label", "smoke", "-k", "beta"]],
    ids=["label", "keyword", "combined"],
)
def test_a_selection_matching_nothing_exits_2_and_sends_nothing(project, agent_server, args):
    run = run_spec(project, None, *args)
    assert run.exit_code == 2
    assert "matched no case" in run.cli.stderr
    assert agent_server.hits() == 0
    assert run.results is None


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param(
            "spec.yaml::delta",
            "error: no eval named 'delta' in spec.yaml - did you mean 'beta'?",
            id="unknown-eval",
        ),
        pytest.param(
            "spec.yaml::Alpha Tow",
            "error: no eval named 'Alpha Tow' in spec.yaml - did you mean 'alpha two' or 'alpha one'?",
            id="another-case-and-a-typo",
        ),
        pytest.param(
            "spec.yaml::refunds",
            "error: no eval named 'refunds' in spec.yaml"
            " (its evals: 'alpha one', 'alpha two', 'beta', 'gamma')",
            id="nothing-close",
        ),
        pytest.param("nowhere.yaml", "error: no such file or folder: nowhere.yaml", id="missing-path"),
    ],
)
def test_a_path_that_names_nothing_exits_2(project, agent_server, path, message):
    run = run_spec(project, None, paths=[path])
    assert run.exit_code == 2
    assert message in run.cli.stderr
    assert agent_server.hits() == 0
