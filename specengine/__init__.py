"""specengine: declarative evals for LLM agents, from the command line or from Python.

    import specengine

    run = specengine.run("specs/")                 # what `specengine run specs/` does; a Run
    run.summary.pass_rate                          # 0.95
    [case.id for case in run.failed]               # the cases that failed or errored
    run.to_pandas()                                # one row per case (needs pandas)
    run = await specengine.run_async("specs/")     # in a notebook whose event loop is running
    old = specengine.load("last")                  # a results file (or `last`, `previous`)
    specengine.compare(old, run).regressions       # what passed before and fails now
    specengine.validate("specs/")                  # [Diagnostic(...)]: every problem, nothing run

A `Run` holds its `cases` (`Case`), each with its `trials` (`Trial`) and their `checks` (`Check`),
read the same way from any results file specengine has written. In a notebook a run shows as a
table. Problems with specs or options raise `UsageError` (its `lines` say what and where); a file
that is not a results file raises `ResultsError`. Importing specengine loads none of this until it
is used. `help(specengine.api)` documents every function and its options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from specengine.api import compare as compare
    from specengine.api import load as load
    from specengine.api import run as run
    from specengine.api import run_async as run_async
    from specengine.api import validate as validate
    from specengine.diagnostics import Diagnostic as Diagnostic
    from specengine.errors import ResultsError as ResultsError
    from specengine.errors import UsageError as UsageError
    from specengine.results.loaded import Case as Case
    from specengine.results.loaded import CaseCheck as CaseCheck
    from specengine.results.loaded import Run as Run
    from specengine.results.loaded import Summary as Summary
    from specengine.results.model import CheckResult as Check
    from specengine.results.model import TrialResult as Trial

_LAZY = {
    "run": ("specengine.api", "run"),
    "run_async": ("specengine.api", "run_async"),
    "load": ("specengine.api", "load"),
    "compare": ("specengine.api", "compare"),
    "validate": ("specengine.api", "validate"),
    "Run": ("specengine.results.loaded", "Run"),
    "Case": ("specengine.results.loaded", "Case"),
    "CaseCheck": ("specengine.results.loaded", "CaseCheck"),
    "Summary": ("specengine.results.loaded", "Summary"),
    "Trial": ("specengine.results.model", "TrialResult"),
    "Check": ("specengine.results.model", "CheckResult"),
    "Diagnostic": ("specengine.diagnostics", "Diagnostic"),
    "UsageError": ("specengine.errors", "UsageError"),
    "ResultsError": ("specengine.errors", "ResultsError"),
}

__all__ = [
    "Case",
    "CaseCheck",
    "Check",
    "Diagnostic",
    "ResultsError",
    "Run",
    "Summary",
    "Trial",
    "UsageError",
    "compare",
    "load",
    "run",
    "run_async",
    "validate",
]


def __getattr__(name: str) -> Any:
    """The API's names, imported when first used: `import specengine` stays as cheap as `--help`."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'specengine' has no attribute {name!r}") from None
    from importlib import import_module

    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
