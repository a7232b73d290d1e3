"""The two consoles a session prints to, and how it shows a command-line problem.

The report console is stdout, or stderr when a report (`--json`) holds stdout; errors always go to
stderr. Neither wraps or highlights: file:line texts must stay whole and copyable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specengine.engine.exit_codes import EXIT_USAGE

if TYPE_CHECKING:
    from rich.console import Console

    from specengine.errors import UsageError


def consoles(stdout_taken: bool) -> tuple[Console, Console]:
    """(the console for the report, the console for errors)."""
    from rich.console import Console

    report = Console(stderr=stdout_taken, highlight=False, soft_wrap=True)
    return report, Console(stderr=True, highlight=False)


def usage_error(errors: Console, exc: UsageError) -> int:
    """Print a command-line problem, one line each, unwrapped; exit 2."""
    for line in exc.lines:
        errors.print(line, markup=False, soft_wrap=True)
    return EXIT_USAGE
