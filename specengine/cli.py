"""The `specengine` command line: one typer app; each command lives in specengine/commands/.

This module holds no logic of its own. Command modules import only typer at module level, so that
`--help` and `validate` start fast; heavy libraries load inside the command that needs them.
"""

from __future__ import annotations

import typer
from typer.core import TyperGroup


class _SortedGroup(TyperGroup):
    """Commands listed by name, whatever order their modules were imported in."""

    def list_commands(self, ctx: object) -> list[str]:  # the order needs no context
        return sorted(self.commands)


app = typer.Typer(
    name="specengine",
    cls=_SortedGroup,
    help="Declarative evals for LLM agents: YAML specs in, pass/fail per case out.",
    epilog="New here? `specengine init` writes a project that runs as it is; then `specengine run specs/`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    rich_markup_mode=None,
)

# Registration: each module adds its command(s) to `app` when imported.
from specengine.commands import (  # noqa: E402,F401
    agreement,
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
