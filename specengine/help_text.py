"""`specengine --help`, stored so that it prints without importing typer (see entry.py).

tests/test_cli_help.py keeps it equal to what typer renders; after changing a command's help, run
`python -m specengine.help_text` to store the new text.
"""

from __future__ import annotations

HELP = """\
Usage: specengine [OPTIONS] COMMAND [ARGS]...

  Declarative evals for LLM agents: YAML specs in, pass/fail per case out.

Options:
  --install-completion  Install completion for the current shell.
  --show-completion     Show completion for the current shell, to copy it or
                        customize the installation.
  --help                Show this message and exit.

Commands:
  agreement   Judge agreement with human reviews: agreement rate, Cohen's...
  ask         Send one message to an endpoint; show the request, the...
  cache       Inspect or empty the judge verdict cache (.specengine/cache).
  compare     Compare two results files case by case.
  demo-agent  Serve the built-in demo agent (OpenAI chat completions) until...
  freeze      Write a simulated or recorded conversation as a scripted...
  github      In GitHub Actions: fetch the main branch's results, keep one...
  init        Write a starter specengine.yaml and specs/example.yaml (never...
  merge       Merge results files into one.
  plan        Show what would be sent, to where, and which checks apply (no...
  query       Run a read-only SQL query over the runs, cases, checks and...
  queue       List what most needs a human review next, ranked:...
  regrade     Grade stored transcripts again with the current checks,...
  report      Write reports from a results file.
  run         Run specs against their agents and report pass/fail per case.
  serve       Browse runs, cases and their history, compare runs, review...
  validate    Check specs and the project file without running anything:...

  New here? `specengine init` writes a project that runs as it is; then
  `specengine run specs/`.
"""


def render() -> str:
    """The top-level help as typer renders it (80 columns)."""
    from typer.testing import CliRunner

    from specengine.cli import app

    return CliRunner().invoke(app, ["--help"], prog_name="specengine", terminal_width=80).stdout


def store() -> None:
    """Rewrite this file's HELP with the current rendering."""
    from pathlib import Path

    source = Path(__file__)
    head, _, rest = source.read_text(encoding="utf-8").partition('HELP = """\\\n')
    _, _, tail = rest.partition('"""\n')
    source.write_text(head + 'HELP = """\\\n' + render() + '"""\n' + tail, encoding="utf-8")


if __name__ == "__main__":
    store()
