"""`specengine serve [DIR]`: the local web app over a project's runs (the `serve` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, usage_exit

EXTRA = 'pip install "specengine[serve]"'


@app.command()
def serve(
    folder: Annotated[
        Path,
        typer.Argument(metavar="DIR", help="The project folder (its runs are in DIR/.specengine/runs/)."),
    ] = Path("."),
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, metavar="N", help="Port (0: any free one).")
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Address to listen on; anything but loopback is reachable by others.",
        ),
    ] = "127.0.0.1",
    open_browser: Annotated[bool, typer.Option("--open", help="Open the app in a browser.")] = False,
    reindex: Annotated[
        bool, typer.Option("--reindex", help="Rebuild the index from the results files before serving.")
    ] = False,
) -> None:
    """Browse runs, cases and their history, compare runs, review verdicts and rerun failures in a browser.

    Local and offline: the pages are served from an index of .specengine/runs/ (kept in
    .specengine/index.sqlite) and reviews are stored in .specengine/reviews.jsonl. Ctrl-C stops.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise usage_exit(f"error: `specengine serve` needs the web app's libraries: {EXTRA}") from None
    from specengine.serve.server import bind, is_loopback
    from specengine.serve.server import serve as run_server

    if not folder.is_dir():
        raise usage_exit(f"error: {folder}: no such folder")
    try:
        sock = bind(host, port)
    except OSError as exc:
        hint = " (pass --port N, or --port 0 for any free port)" if port else ""
        raise usage_exit(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    if not is_loopback(host):
        typer.echo(
            f"warning: listening on {host}: anyone who can reach this machine can read these runs and start"
            " reruns; use the default 127.0.0.1 unless you mean it",
            err=True,
        )
    if reindex:
        from specengine.index.database import RunIndex

        RunIndex(folder).discard()
    run_server(folder.resolve(), sock, host, open_browser=open_browser, echo=typer.echo)
