"""A number setting of an endpoint read from the matrix (`timeout: "{{ vars.timeout }}"`), through
the CLI: each cell sends with its own value, and a value that renders to no number stops `validate`
and `run` before anything is sent, at the setting and naming the cell."""

from __future__ import annotations

import json
import threading

import pytest
from support.cli import run_cli, write_project, write_spec
from support.servers import AgentServer, Reply, last_user_message

SLOW_S = 1.0  # the agent's answer takes this long: the 0.2 s cell times out, the 10 s cell does not
SPEC = "evals: [{name: a, send: question 1, expect: [{includes: right}]}]"


@pytest.fixture(scope="module")
def slow_agent():
    with AgentServer() as agent:
        agent.script(lambda messages: Reply(content="right", delay=SLOW_S))
        yield agent


def place(folder, fragment: str) -> str:
    """`specengine.yaml:L:C` of the value after `fragment` in the project file."""
    for number, line in enumerate((folder / "specengine.yaml").read_text(encoding="utf-8").splitlines(), 1):
        if fragment in line:
            return f"specengine.yaml:{number}:{line.index(fragment) + len(fragment) + 1}"
    raise AssertionError(f"{fragment!r} is not in the project file")


def test_each_cell_sends_with_its_own_timeout(slow_agent, tmp_path):
    endpoint = slow_agent.endpoint(timeout="{{ vars.timeout }}", retries="{{ vars.retries }}")
    write_project(
        tmp_path, endpoints={"agent": endpoint}, matrix={"vars": {"timeout": [0.2, 10], "retries": [0]}}
    )
    write_spec(tmp_path, "spec.yaml", SPEC)
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 0, checked.output
    slow_agent.clear()
    result = run_cli(["run", "spec.yaml", "--matrix", "-o", "out/r.json"], cwd=tmp_path)
    assert result.exit_code == 1, result.output  # the short cell's case errored
    results = json.loads((tmp_path / "out" / "r.json").read_text(encoding="utf-8"))
    cases = {case["cell"]: case for case in results["cases"]}
    assert set(cases) == {"0.2 · 0", "10 · 0"}
    assert cases["10 · 0"]["status"] == "passed"
    short = cases["0.2 · 0"]
    assert short["status"] == "error"
    assert short["error"]["message"].startswith("request timed out"), short["error"]
    assert slow_agent.hits() == 2  # retries: 0 from the matrix, so one request per cell


class CellsInFlight:
    """Answers `right`, counting the requests in flight per cell (the cell is the message's first
    word) and holding the first ones until `wanted` are in flight together (or 2 s pass): so the
    endpoint's limit is reached, and the counts show it is never exceeded."""

    def __init__(self, wanted: int):
        self.wanted = wanted
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.peak_total = 0
        self._arrivals = threading.Condition()
        self._released = False

    def __call__(self, messages):
        cell = last_user_message(messages).split()[0]
        with self._arrivals:
            self.now[cell] = self.now.get(cell, 0) + 1
            self.peak[cell] = max(self.peak.get(cell, 0), self.now[cell])
            self.peak_total = max(self.peak_total, sum(self.now.values()))
            self._arrivals.notify_all()
            if not self._released:
                self._arrivals.wait_for(lambda: sum(self.now.values()) >= self.wanted, timeout=2.0)
                self._released = True
            self.now[cell] -= 1
        return Reply(content="right")


def test_a_max_concurrency_from_the_matrix_is_each_cells_own_and_the_endpoints_largest(tmp_path):
    counter = CellsInFlight(wanted=3)
    with AgentServer() as agent:
        agent.script(counter)
        endpoint = agent.endpoint(max_concurrency="{{ vars.slots }}")
        write_project(tmp_path, endpoints={"agent": endpoint}, matrix={"vars": {"slots": [1, 3]}})
        rows = ", ".join(f"{{id: q{n}}}" for n in range(6))
        send = "send: '{{ vars.slots }} question'"
        spec = f"evals: [{{name: a, {send}, dataset: [{rows}], expect: [succeeded]}}]"
        write_spec(tmp_path, "spec.yaml", spec)
        result = run_cli(["run", "spec.yaml", "--matrix", "-j", "4"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert counter.peak["1"] == 1  # the 1 cell: one at a time, though -j 4 gave it four workers
    assert counter.peak_total == 3  # together: the largest value, 3, reached and never passed
    assert counter.peak["3"] >= 2


def test_a_value_that_is_no_number_stops_validate_and_run_at_the_setting(slow_agent, tmp_path):
    endpoint = slow_agent.endpoint(timeout="{{ vars.timeout }}")
    write_project(tmp_path, endpoints={"agent-a": endpoint}, matrix={"vars": {"timeout": [30, "fast"]}})
    write_spec(tmp_path, "spec.yaml", SPEC)
    where = place(tmp_path, "timeout: ")
    message = f'{where}: timeout renders to "fast" in cell fast: write a number of seconds above 0, e.g. 30'
    before = slow_agent.hits()
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 1
    assert message in checked.stdout
    assert "renders to 30" not in checked.stdout  # the good cell is not named
    run = run_cli(["run", "spec.yaml", "--matrix"], cwd=tmp_path)
    assert run.exit_code == 2
    assert message in run.output
    # a value given on the command line only is proven when the run compiles its cells
    write_project(tmp_path, endpoints={"agent-a": endpoint}, matrix={"vars": {"timeout": [30]}})
    assert run_cli(["validate", "spec.yaml"], cwd=tmp_path).exit_code == 0
    given = run_cli(["run", "spec.yaml", "--matrix", "vars.timeout=0"], cwd=tmp_path)
    assert given.exit_code == 2
    assert (
        f"{where}: timeout renders to 0 in cell 0: write a number of seconds above 0, e.g. 30" in given.stderr
    )
    # without --matrix nothing fills the setting in
    plain = run_cli(["run", "spec.yaml"], cwd=tmp_path)
    assert plain.exit_code == 2
    assert (
        f"{where}: timeout reads {{{{ vars.timeout }}}}, which only a matrix cell gives: run with --matrix"
        in (plain.stderr)
    )
    assert slow_agent.hits() == before


def test_validate_proves_every_number_setting_in_every_cell(slow_agent, tmp_path):
    endpoint = slow_agent.endpoint(
        max_concurrency="{{ vars.slots }}",
        price={"input_per_million": "{{ vars.price }}", "output_per_million": 1},
    )
    matrix = {"endpoint": ["a", "b"], "vars": {"slots": [2, 1.5], "price": ["-1", "0.5"]}}
    write_project(
        tmp_path,
        endpoints={"a": endpoint, "b": slow_agent.endpoint(timeout="soon")},
        defaults={"endpoint": "a"},
        matrix=matrix,
    )
    write_spec(tmp_path, "spec.yaml", SPEC)
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 1
    lines = checked.stdout
    slots, price = place(tmp_path, "max_concurrency: "), place(tmp_path, "input_per_million: ")
    assert (
        f"{slots}: max_concurrency renders to 1.5 in cell a · 1.5 · -1: write a whole number of requests"
        " in flight, 1 or more, e.g. 8"
    ) in lines
    assert (
        f'{price}: price.input_per_million renders to "-1" in cell a · 2 · -1: write a price per million'
        " tokens, 0 or more, e.g. 2.5"
    ) in lines
    assert lines.count("renders to") == 2  # b never reads them; a wrong value is named once
    # a number setting takes a number or {{ vars.NAME }}, nothing else
    assert f"{place(tmp_path, 'timeout: ')}: timeout: write a number, or {{{{ vars.NAME }}}}" in lines


def test_an_inline_endpoint_is_proven_in_every_cell(slow_agent, tmp_path):
    write_project(tmp_path, matrix={"vars": {"retries": [1, 2.5]}})
    inline = json.dumps(slow_agent.endpoint(retries="{{ vars.retries }}"))
    write_spec(tmp_path, "spec.yaml", f"endpoint: {inline}\n{SPEC}\n")
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 1
    assert (
        "spec.yaml:1:" in checked.stdout
        and "retries renders to 2.5 in cell 2.5: write a whole number of retries, 0 or more, e.g. 2"
        in checked.stdout
    )
