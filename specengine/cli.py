"""The `specengine` command line: the typer app of specengine/commands/, every command registered on it.

This module holds no logic of its own. Command modules import only typer at module level, so that
`--help` and `validate` start fast; heavy libraries load inside the command that needs them.
"""

from __future__ import annotations

# Registration: each module adds its command(s) to `app` when imported.
from specengine.commands import (  # noqa: F401
    agreement,
    app,
    ask,
    cache,
    compare,
    demo_agent,
    freeze,
    github,
    init,
    merge,
    plan,
    query,
    regrade,
    report,
    review_queue,
    run,
    serve,
    validate,
)


def main() -> None:
    """Console-script entry point."""
    app()
