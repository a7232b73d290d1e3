"""CLI commands, one module each; importing a module registers its command on `app`, the typer app.

`specengine.cli` imports every command module (so every command is registered) and is the entry
point; the app lives here so that a command module imports its package, never the module above it.
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


def usage_exit(*lines: str) -> typer.Exit:
    """Print a problem with the command on stderr, a line each; the exit (2: nothing done) to raise."""
    for line in lines:
        typer.echo(line, err=True)
    return typer.Exit(2)


def cannot_write(target: object, exc: OSError) -> str:
    """What a command says of a file it could not write (`exc.filename` names it when `target` is None)."""
    return f"error: cannot write {target or exc.filename or 'the report'}: {exc.strerror or exc}"
