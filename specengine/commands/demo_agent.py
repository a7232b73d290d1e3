"""`specengine demo-agent`: serve the built-in demo agent in the foreground until Ctrl-C.

Useful to try specs against a live endpoint by hand (curl, a project file with `protocol:
openai-chat`), or to point another tool at it. `specengine run` does not need it: endpoints with
`protocol: demo` start their own copy for the run.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer

from specengine.commands import app, usage_exit

DEFAULT_PORT = 8000


@app.command("demo-agent")
def demo_agent(
    port: Annotated[
        int,
        typer.Option(
            "--port", min=0, max=65535, metavar="PORT", help="Port to listen on; 0 picks a free one."
        ),
    ] = DEFAULT_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="HOST", help="Address to listen on. Keep 127.0.0.1 unless others must reach it."
        ),
    ] = "127.0.0.1",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not log each request.")] = False,
) -> None:
    """Serve the built-in demo agent (OpenAI chat completions) until Ctrl-C."""
    from specengine.demo.server import start_demo_agent

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        server = start_demo_agent(port=port, host=host, log=None if quiet else log)
    except OSError as exc:
        raise usage_exit(
            f"error: cannot listen on {host}:{port}: {exc.strerror or exc}. "
            "Choose another port with --port N (--port 0 picks a free one)."
        ) from None
    try:
        with server:
            typer.echo(f"Demo agent listening on {server.url}")
            typer.echo(
                "Use it from specengine.yaml:\n"
                "  endpoints:\n"
                "    demo-agent:\n"
                "      protocol: openai-chat\n"
                f"      url: {server.url}\n"
                "Press Ctrl-C to stop."
            )
            if host not in ("127.0.0.1", "localhost", "::1"):
                typer.echo(f"note: listening on {host}, so other machines may reach it.", err=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        # Ctrl-C is how this command is meant to end, so it is a normal exit.
        typer.echo("Demo agent stopped.", err=True)
