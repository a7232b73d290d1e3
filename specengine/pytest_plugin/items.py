"""A spec file as a pytest collector, and each of its cases as a pytest item that reports the
outcome the session's one run stored for it: passed; failed with the failed checks' reasons and no
traceback; a pytest skip for a skipped case; an error (in setup) for an errored one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from specengine.results.loaded import Case

if TYPE_CHECKING:
    from specengine.pytest_plugin.spec_session import Outcome, SpecSession


class SpecProblem(Exception):
    """The specs cannot be read: specengine's diagnostics, shown as the collection error."""


class SpecFile(pytest.File):
    """A spec file; its items are its cases."""

    spec_session: SpecSession

    @classmethod
    def from_parent(cls, parent: Any, *, spec_session: SpecSession, **kw: Any) -> SpecFile:  # type: ignore[override]
        node = super().from_parent(parent, **kw)
        node.spec_session = spec_session
        return node

    def collect(self) -> Iterator[pytest.Item]:
        try:
            cases = self.spec_session.cases_of(self.path)
        except SpecProblem as exc:
            raise self.CollectError(str(exc)) from None
        for case in cases:
            # the id given as text, as --lf stores it: pytest then reads a row's `[id]` as params
            nodeid = f"{self.nodeid}::{case.name}"
            yield SpecItem.from_parent(self, name=case.name, nodeid=nodeid, case_id=case.id, line=case.line)


class SpecItem(pytest.Item):
    """One case of a spec."""

    case_id: str
    line: int

    @classmethod
    def from_parent(cls, parent: Any, *, case_id: str, line: int, **kw: Any) -> SpecItem:  # type: ignore[override]
        node = super().from_parent(parent, **kw)
        node.case_id, node.line = case_id, line
        return node

    def _outcome(self) -> Outcome:
        assert isinstance(self.parent, SpecFile)
        return self.parent.spec_session.outcome(self, self.case_id)

    def setup(self) -> None:
        """Run the session's cases (the first item only), then skip or error as the case did."""
        from specengine.results.loaded import error_text

        outcome = self._outcome()
        case = outcome.case
        if case is None and outcome.exit_code is None:  # under xdist: the worker running them died
            pytest.fail(outcome.output, pytrace=False)
        if case is None:
            why = "the specengine run could not start" if outcome.exit_code == 2 else "the case did not run"
            pytest.fail(f"{why} (exit {outcome.exit_code})\n{outcome.output.strip()}", pytrace=False)
        if case.status == "skipped":  # reported at the case's line, as a skip mark is
            raise pytest.skip.Exception(case.why_skipped, _use_item_location=True)
        if case.status == "error":  # failing in setup: pytest counts it an error
            error = case.first_error
            pytest.fail(error_text(error) if error else "the case errored", pytrace=False)

    def runtest(self) -> None:
        case = self._outcome().case
        if case is not None and case.status == "failed":
            pytest.fail(failure_text(case), pytrace=False)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.line - 1, self.name  # a dotless name: pytest shows its dots as ::


def failure_text(case: Case) -> str:
    """Each failed check at its line with its reason, expected and got: JUnit's words."""
    from specengine.report import junit

    message, _, details = junit.failure_text(case, case.spec)
    return details or message
