"""specengine's pytest plugin (`pip install "specengine[pytest]"`): specs as pytest tests, when asked.

Installed, it is loaded into every pytest run but does nothing there unless asked: by
`pytest --specengine specs/` (the spec paths are the paths given) or by `specengine_paths` in the
ini file. Until then this module, which imports only pytest, is all that is loaded: no spec is read
and no request is sent. It sends nothing of its own anywhere, ever (no telemetry).

Asked, each case is a test item named as specengine names it (`specs/weather.yaml::sunny in
paris[paris]`), so `-k` and `--lf` select cases. The selected items run together, concurrently, in
one specengine run when the first of them is set up; each item then reports its case's stored
outcome (items.py, spec_session.py). Under pytest-xdist (`pytest -n 2 --specengine specs/`) the workers
share that one run: each case is still sent once (shared_run.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ENABLE = "--specengine"
PATHS_INI = "specengine_paths"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specengine", "specengine: specs as tests")
    group.addoption(
        ENABLE,
        action="store_true",
        default=False,
        help="Collect the specengine specs under the given paths as tests (one item per case).",
    )
    group.addoption(
        "--specengine-config", metavar="NAME", default=None, help="A run config from the project file."
    )
    group.addoption(
        "--specengine-output",
        metavar="FILE",
        default=None,
        help="Where the run's results file is written (default: a temporary folder).",
    )
    parser.addini(PATHS_INI, "Spec files or folders pytest collects as specengine cases.", type="paths")
    parser.addini("specengine_config", "The run config specengine uses (as run --config).", default="")
    parser.addini("specengine_concurrency", "Cases in flight at once (as run -j).", default="8")


def pytest_configure(config: pytest.Config) -> None:
    roots = _spec_roots(config)
    if roots is None:
        return
    from specengine.pytest_plugin.spec_session import SpecSession

    spec_session = SpecSession(config, roots)
    config.pluginmanager.register(spec_session, "specengine-session")
    if config.getini(PATHS_INI) and config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args.extend(str(root) for root in roots if str(root) not in config.args)


def _spec_roots(config: pytest.Config) -> list[Path] | None:
    """The spec paths when the plugin is asked for, else None (then it does nothing at all)."""
    configured: list[Any] = list(config.getini(PATHS_INI) or ())
    if configured:
        return [Path(path) for path in configured]
    if not config.getoption(ENABLE):
        return None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        raise pytest.UsageError(
            f"{ENABLE}: name the spec files or folders (pytest {ENABLE} specs/), or set {PATHS_INI} "
            "in the ini file"
        )
    return [Path(config.invocation_params.dir, arg.split("::", 1)[0]) for arg in config.args]
