"""`specengine ask ENDPOINT MESSAGE`: send one message to a named endpoint and show what happened.

The first thing to try when wiring a new agent: the request as sent, the raw response, and what
specengine read from it (specengine/ask/). Exit 0 when the agent answered, 1 when not, 2 when the
endpoint cannot be used (unknown name, a problem in the project file, a missing `${VAR}`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from specengine.commands import app
from specengine.commands.options import Config, ProjectFile

if TYPE_CHECKING:
    from specengine.source.project import Project


@app.command()
def ask(
    endpoint: Annotated[
        str, typer.Argument(metavar="ENDPOINT", help="An endpoint name from specengine.yaml.")
    ],
    message: Annotated[str, typer.Argument(metavar="MESSAGE", help="The message to send.")],
    project: ProjectFile = None,
    config: Config = None,
    inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            metavar="KEY=VALUE",
            help="A value for {{ input.KEY }} in an http endpoint's templates (repeatable).",
        ),
    ] = None,
    full: Annotated[bool, typer.Option("--full", help="Show whole bodies, not a screenful.")] = False,
    cell: Annotated[
        str | None,
        typer.Option(
            "--cell",
            metavar="CELL",
            help="The matrix cell whose vars the endpoint's settings read (default: the first).",
        ),
    ] = None,
) -> None:
    """Send one message to an endpoint; show the request, the response and what specengine read.

    \b
    Examples:
      specengine ask my-agent "What's the weather in Paris?"
      specengine ask support-bot "Where is my order?" --input customer_id=42

    Exit 0 when the agent answered, 1 when it did not, 2 when the endpoint cannot be used.
    """
    from specengine.ask.explain import explain
    from specengine.ask.send_message import AskRequest, find_endpoint, send
    from specengine.engine.terminal import consoles, usage_error
    from specengine.errors import UsageError
    from specengine.flows.run import app_under_test

    _, errors = consoles(False)
    try:
        request = AskRequest(endpoint, message, project, config, _pairs(inputs or []), cell)
        found, resolved = find_endpoint(request)
    except UsageError as exc:
        raise typer.Exit(usage_error(errors, exc)) from None
    with app_under_test(found, errors) as started:
        if not started:
            raise typer.Exit(2)
        answer = send(resolved, message, request.inputs, _turn_timeout(found))
    for line in explain(answer, full=full):
        typer.echo(line)
    raise typer.Exit(0 if answer.answered else 1)


def _turn_timeout(project: Project) -> float:
    """A turn's time limit as a run gives a case: the project's defaults.timeout, else the default."""
    from specengine.source.project import DEFAULT_TIMEOUT

    value = project.default("timeout")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else DEFAULT_TIMEOUT


def _pairs(values: list[str]) -> dict[str, str]:
    """--input KEY=VALUE options as a mapping; a value without `=` is a usage error."""
    from specengine.errors import UsageError

    pairs = {}
    for value in values:
        key, separator, text = value.partition("=")
        if not separator or not key.strip():
            raise UsageError(f"error: --input takes KEY=VALUE (got {value!r})")
        pairs[key.strip()] = text
    return pairs
