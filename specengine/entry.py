"""The console entry point. `specengine --help` is answered from a stored text, before the CLI
framework is imported: pre-commit hooks and shells call it often, and importing typer alone costs
several times a bare interpreter's start-up. A test keeps the stored text equal to typer's own.
Every other command line is typer's to read.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--help"]:
        from specengine.help_text import HELP

        sys.stdout.write(HELP)
        return
    from specengine.cli import main as cli_main

    cli_main()
