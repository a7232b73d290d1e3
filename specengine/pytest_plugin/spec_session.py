"""The plugin's one specengine run for a pytest session: the plan read once at collection, the
selected cases run together when the first of them is set up, and their stored outcomes kept for
the items to report.

pytest would call items one at a time; an agent answers in seconds, so the cases pytest kept after
`-k`, `--lf` and the like run concurrently in one specengine run (as `specengine run` would run
them), and a deselected case is never sent. Under pytest-xdist, the first worker that needs an
outcome runs them for every worker (shared_run.py).
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from specengine.engine.prepare import Prepared
    from specengine.pytest_plugin.shared_run import Ran, SharedRun
    from specengine.results.loaded import Case


@dataclass(frozen=True)
class CollectedCase:
    """A case as pytest shows it: its id, its name within the spec, where it is declared."""

    id: str
    name: str
    line: int


@dataclass(frozen=True)
class Outcome:
    """What the run stored for a case (None when it did not run), what the run printed and its exit
    code (None when it stopped midway: under pytest-xdist, the worker running it died)."""

    case: Case | None
    output: str
    exit_code: int | None


class SpecSession:
    """Registered as a plugin when specengine is asked for; owns the plan and the run."""

    def __init__(self, config: pytest.Config, roots: list[Path]):
        self.config = config
        self.roots = roots
        self._prepared: Prepared | None = None
        self._problem: str | None = None
        self._cases: dict[str, list[CollectedCase]] = {}
        self._outcomes: dict[str, Outcome] | None = None
        self._results: Path | None = None  # the run's results file, once written
        self._shared: SharedRun | None = None  # xdist's controller: the run its workers share

    # --- collection ---

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.suffix not in (".yaml", ".yml") or not self._under_roots(file_path):
            return None
        self._plan()
        resolved = str(file_path.resolve())
        if self._problem is None and resolved not in self._cases:
            return None  # a project file, a dataset: not a spec
        from specengine.pytest_plugin.items import SpecFile

        return SpecFile.from_parent(parent, path=file_path, spec_session=self)

    def _under_roots(self, path: Path) -> bool:
        resolved = path.resolve()
        return any(
            resolved == root.resolve() or resolved.is_relative_to(root.resolve()) for root in self.roots
        )

    def cases_of(self, file_path: Path) -> list[CollectedCase]:
        """The cases of one spec file, or a collection error with specengine's diagnostics."""
        self._plan()
        if self._problem is not None:
            from specengine.pytest_plugin.items import SpecProblem

            raise SpecProblem(self._problem)
        return self._cases.get(str(file_path.resolve()), [])

    def _plan(self) -> None:
        """Validate and compile every spec under the roots once (nothing is sent)."""
        if self._prepared is not None or self._problem is not None:
            return
        from specengine.engine.prepare import prepare
        from specengine.errors import UsageError

        try:
            prepared = prepare([str(root) for root in self.roots], self._options(resolve_endpoints=False))
        except UsageError as exc:
            self._problem = "\n".join(exc.lines)
            return
        for case in prepared.cases():
            file = prepared.spec_files.get(case.spec, case.spec)
            name = case.id.split("::", 1)[1] if "::" in case.id else case.id
            self._cases.setdefault(file, []).append(CollectedCase(case.id, name, case.line))
        self._prepared = prepared

    def _options(self, **more: Any) -> Any:
        from specengine.engine.prepare import PrepareOptions

        config = self.config.getoption("--specengine-config") or self.config.getini("specengine_config")
        return PrepareOptions(config=config or None, **more)

    # --- the run ---

    def outcome(self, item: pytest.Item, case_id: str) -> Outcome:
        """The stored outcome of `case_id`, running every selected case first if nothing ran yet."""
        if self._outcomes is None:
            self._outcomes = self._run_selected(item.session)
        return self._outcomes.get(case_id) or Outcome(None, "", 0)

    def _run_selected(self, session: pytest.Session) -> dict[str, Outcome]:
        """Every selected case's outcome, from this process's run or, under pytest-xdist, from the
        one run all workers share (shared_run.py)."""
        from specengine.pytest_plugin.items import SpecItem
        from specengine.pytest_plugin.shared_run import SharedRun

        wanted = frozenset(item.case_id for item in session.items if isinstance(item, SpecItem))
        shared = SharedRun.of_worker(self.config)
        if shared is None:
            output = self._output()
            ran = self._run(wanted, output)
        else:
            output = shared.output
            worker = str(self.config.workerinput.get("workerid", "?"))  # type: ignore[attr-defined]
            ran = shared.run_once(lambda: self._run(wanted, output), worker)
        cases: dict[str, Case] = {}
        if ran.wrote:
            from specengine import load

            self._results = output
            cases = {case.id: case for case in load(output).cases}
        return {case_id: Outcome(cases.get(case_id), ran.printed, ran.exit_code) for case_id in wanted}

    def _run(self, wanted: frozenset[str], output: Path) -> Ran:
        """The wanted cases, run together in one specengine run that writes `output` (the Python
        API's run, its progress and summary kept for the items to show)."""
        from specengine.api import run_request, run_with
        from specengine.engine.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
        from specengine.errors import UsageError
        from specengine.pytest_plugin.shared_run import Ran

        config = self.config.getoption("--specengine-config") or self.config.getini("specengine_config")
        request = run_request(
            [str(root) for root in self.roots],
            config=config or None,
            only_ids=wanted,
            output=output,
            concurrency=int(self.config.getini("specengine_concurrency")),
        )
        printed = io.StringIO()
        try:
            run = run_with(request, log=printed)
        except UsageError as exc:
            return Ran(EXIT_USAGE, "\n".join([printed.getvalue().rstrip(), *exc.lines]).strip())
        return Ran(EXIT_FAILED if run.failed else EXIT_OK, printed.getvalue(), wrote=True)

    # --- under pytest-xdist, in its controller ---

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist's controller starting a worker: every worker gets the same shared run."""
        from specengine.pytest_plugin.shared_run import SharedRun

        if self._shared is None:
            given = self.config.getoption("--specengine-output")
            self._shared = SharedRun.create(Path(given).resolve() if given else None)
        node.workerinput.update(self._shared.worker_input())

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Where the run's results are, for `specengine report` and `compare`."""
        results = self._results
        if self._shared is not None:  # xdist's controller: the file its workers' run wrote
            results = self._shared.output if self._shared.finished() else None
        if results is not None:
            terminalreporter.write_sep("-", "specengine")
            terminalreporter.write_line(f"results: {results} (specengine report {results} --html F)")

    @pytest.hookimpl
    def pytest_unconfigure(self) -> None:
        if self._shared is not None:
            self._shared.close()

    def _output(self) -> Path:
        given = self.config.getoption("--specengine-output")
        if given:
            return Path(given).resolve()
        return Path(tempfile.mkdtemp(prefix="specengine-pytest-")) / "results.json"
