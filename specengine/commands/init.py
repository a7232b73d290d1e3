"""`specengine init [DIR]`: a starter project that validates and runs with no key and no network.

It writes `specengine.yaml` (a `demo` endpoint as the default, a commented judge block) and
`specs/example.yaml` (with the editor's schema line), and never overwrites a file: if either exists,
nothing is written and the command exits 2 naming it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, usage_exit
from specengine.validation.schema import editor_schema_line

PROJECT_TEMPLATE = """\
{schema_line}# The specengine project file: endpoints, judge and defaults for every spec below this folder.

endpoints:
  demo:
    protocol: demo             # the built-in scripted agent: no key, no network
  # my-agent:                 # then try it: specengine ask my-agent "Hello"
  #   protocol: openai-chat    # openai-chat | openai-responses | databricks | appkit | langgraph |
  #                            # a2a | adk | ag-ui | ai-sdk | http
  #   url: http://127.0.0.1:8000/v1/chat/completions
  #   headers: {{Authorization: "Bearer ${{AGENT_TOKEN}}"}}   # ${{VAR}} reads the environment

# Judge checks (judge: closed_qa / factuality / custom, or goal_completed / role_adherence / ... on the
# whole conversation) are skipped until a judge model is named:
# judge:
#   model: gpt-4o-mini
#   base_url: https://api.openai.com/v1    # any OpenAI-compatible server
#   api_key_env: OPENAI_API_KEY

defaults:
  endpoint: demo               # specs that name no endpoint go here: change it to your agent's name
  timeout: 60
"""

SPEC_TEMPLATE = """\
{schema_line}# Each eval sends a message to the agent and checks the reply and the tools it called.
# Check it with `specengine validate specs/`, run it with `specengine run specs/`.
suite: example
description: The demo agent answers weather questions and books tables.
endpoint: demo    # these evals are the demo agent's: your agent gets specs of its own
labels: [smoke]

evals:
  - name: weather in paris
    input: {{city: Paris}}
    send: "What's the weather in {{{{ input.city }}}}?"
    expect:
      - succeeded
      - includes: Sunny
      - called_tool_with:
          name: get_weather
          args: {{city: "{{{{ input.city }}}}"}}

  - name: weather per city      # runs once per row
    dataset:
      - {{id: london, input: {{city: London}}, expected: {{weather: Rainy}}}}
      - {{id: tokyo, input: {{city: Tokyo}}, expected: {{weather: Cloudy}}}}
    send: "What's the weather in {{{{ input.city }}}}?"
    expect:
      - includes: "{{{{ expected.weather }}}}"
      - called_tool: get_weather

  - name: booking follow-up     # a conversation: the second turn changes the booking
    turns:
      - send: Book a table for 2 at 7pm
        expect:
          - called_tool: book_table
      - send: Make it 4 people
        expect:
          - called_tool_with: {{name: book_table, args: {{people: 4}}}}
          - includes: "4"
          # With a judge configured in specengine.yaml, this grades the whole conversation:
          # - judge: goal_completed
          #   goal: a table for 4 people at 19:00

  # With a judge configured in specengine.yaml, add checks such as:
  #     - judge: closed_qa
  #       criteria: Does the reply state the weather for the city asked about?
  #       at_least: 0.7
"""


def _copy_schemas(directory: Path) -> list[Path]:
    """Give the project the installed schemas (schemas/*.schema.json) when it has none in reach, so
    editors complete keys offline; an existing copy, here or in a folder above, is left alone."""
    import shutil

    from specengine.validation.schema import EDITOR_SCHEMAS, SCHEMA_DIRS

    copied = []
    for name in EDITOR_SCHEMAS:
        filename = f"{name}.schema.json"
        if any((parent / "schemas" / filename).is_file() for parent in (directory, *directory.parents)):
            continue
        source = next((folder / filename for folder in SCHEMA_DIRS if (folder / filename).is_file()), None)
        if source is None:
            continue
        target = directory / "schemas" / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(target)
    return copied


@app.command()
def init(
    directory: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="Where to create the project (default: the current folder)."),
    ] = Path("."),
) -> None:
    """Write a starter specengine.yaml and specs/example.yaml (never overwrites a file)."""
    directory = Path(os.path.abspath(directory))
    if directory.exists() and not directory.is_dir():
        raise usage_exit(f"Error: {directory} is a file, not a folder")
    project_file = directory / "specengine.yaml"
    spec_file = directory / "specs" / "example.yaml"
    existing = [path for path in (project_file, spec_file) if path.exists()]
    if existing:
        names = ", ".join(str(path) for path in existing)
        raise usage_exit(f"Error: refusing to overwrite {names} (nothing was written)")
    try:
        spec_file.parent.mkdir(parents=True, exist_ok=True)
        copied = _copy_schemas(directory)
        project_text = PROJECT_TEMPLATE.format(schema_line=editor_schema_line("project", directory))
        spec_text = SPEC_TEMPLATE.format(schema_line=editor_schema_line("spec", spec_file.parent))
        project_file.write_text(project_text, encoding="utf-8")
        spec_file.write_text(spec_text, encoding="utf-8")
    except OSError as exc:
        raise usage_exit(f"Error: cannot write the project: {exc}") from None
    for path in (*copied, project_file, spec_file):
        typer.echo(f"wrote {path}")
    here = directory == Path(os.path.abspath("."))
    go = "" if here else f"cd {shlex.quote(os.path.relpath(directory))} && "
    typer.echo(f"next: {go}specengine validate specs/ && specengine run specs/", err=True)
