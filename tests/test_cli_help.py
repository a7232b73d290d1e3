"""`specengine --help` is served from a stored text; it must match typer's own rendering."""

from __future__ import annotations

import subprocess
import sys

from specengine.help_text import HELP, render


def test_stored_help_matches_typer():
    assert render() == HELP, "run `python -m specengine.help_text` to store the new help text"


def test_help_lists_every_command():
    from typer.main import get_command

    from specengine.cli import app

    for name in get_command(app).commands:
        assert f"\n  {name} " in HELP


def test_help_does_not_import_the_cli_framework():
    code = (
        "import sys; sys.argv = ['specengine', '--help']; from specengine.entry import main; main(); "
        "heavy = ('typer', 'yaml', 'jsonschema', 'httpx', 'rich'); "
        "sys.stderr.write(' '.join(m for m in heavy if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == HELP
    assert result.stderr == ""


def test_other_arguments_reach_typer():
    result = subprocess.run(
        [sys.executable, "-m", "specengine", "run", "--help"], capture_output=True, text=True, check=True
    )
    assert "--concurrency" in result.stdout
