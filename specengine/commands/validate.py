"""`specengine validate PATH...`: check specs and project files, report every problem, run nothing.

pre-commit runs this on every commit, so it imports only what checking needs (PyYAML, jsonschema,
and Jinja2 only when a spec holds a template) and never touches the network.
"""

from __future__ import annotations

import json
import re
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specengine.commands import app, usage_exit
from specengine.diagnostics import problems_line
from specengine.words import counted

if TYPE_CHECKING:
    from specengine.validation.validator import Validation


class OutputFormat(str, Enum):
    text = "text"
    github = "github"
    json = "json"


def _safe(text: str) -> str:
    """Text that any output stream can write (a spec may hold lone surrogates from YAML escapes)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _one_line(text: str) -> str:
    """One problem per line, whatever a key or value holds: control characters (line breaks,
    terminal escapes) are shown escaped, as \\n or \\x85."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


@app.command()
def validate(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH",
            help="Spec files or folders (every *.yaml / *.yml below a folder).",
            show_default=False,
        ),
    ],
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--format", help="text (default), github (Actions annotations) or json.", case_sensitive=False
        ),
    ] = OutputFormat.text,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            metavar="FILE",
            help="The project file to use (default: the nearest specengine.yaml).",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            metavar="NAME",
            help="A run config of the project file to merge in (as `run --config`).",
        ),
    ] = None,
) -> None:
    """Check specs and the project file without running anything: every problem, with file:line:col.

    Exit 0 when everything is valid (warnings are shown, never fail), 1 when a file has problems,
    2 on a command-line error.
    """
    from specengine.errors import UsageError
    from specengine.validation.validator import validate_paths

    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise usage_exit(_safe(f"Error: no such file or folder: {', '.join(missing)}"))
    try:
        result = validate_paths(list(paths), project_file=project, config=config)
    except UsageError as exc:
        raise usage_exit(_safe(f"Error: {exc}")) from None

    diagnostics = result.diagnostics
    shown = sorted((*diagnostics, *result.warnings))
    for note in result.notes:  # nothing named on the command line is skipped silently
        typer.echo(_one_line(_safe(note)), err=True)
    if output_format is OutputFormat.json:
        typer.echo(_safe(json.dumps([d.as_dict() for d in shown], ensure_ascii=False, indent=2)))
    elif output_format is OutputFormat.github:
        from specengine.report.github import diagnostic_annotation

        for d in shown:
            typer.echo(_safe(diagnostic_annotation(d.path, d.line, d.col, d.message, level=d.severity)))
    else:
        for d in shown:
            typer.echo(_one_line(_safe(str(d))))
        if diagnostics:
            summary = problems_line(diagnostics)
        elif result.checked:
            summary = _valid_summary(result)
        else:
            summary = "no spec files found"
        if result.warnings:
            summary += f", {counted(len(result.warnings), 'warning')}"
        typer.echo(summary, err=True)
    sys.stdout.flush()
    raise typer.Exit(1 if diagnostics else 0)


def _valid_summary(result: Validation) -> str:
    """`1 spec valid, project file valid`: specs, datasets and project files counted apart, since a
    spec that names a project file has both checked."""
    projects = len(result.project_files)
    specs = len(result.specs)
    datasets = len(result.checked) - specs - projects
    parts = [f"{counted(specs, 'spec')} valid"] if specs else []
    if datasets > 0:
        parts.append(f"{counted(datasets, 'dataset')} valid")
    if projects:
        parts.append("project file valid" if projects == 1 else f"{projects} project files valid")
    return ", ".join(parts) or f"{counted(len(result.checked), 'file')} valid"
