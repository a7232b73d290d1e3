"""The console entry point. `specengine --help` is answered from a stored text, before the CLI
framework is imported: pre-commit hooks and shells call it often, and importing typer alone costs
several times a bare interpreter's start-up. A test keeps the stored text equal to typer's own.

`specengine run` reads a plainly written command line itself (commands/run_argv.py): typer and the
validators it builds take longer than a small run's requests. Anything else goes to typer.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--help"]:
        from specengine.help_text import HELP

        sys.stdout.write(HELP)
        return
    if sys.argv[1:2] == ["run"]:
        from specengine.commands.run_argv import run_without_typer

        run_without_typer(sys.argv[2:])  # exits, unless typer must read the command line
    from specengine.cli import main as cli_main

    cli_main()
