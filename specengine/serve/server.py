"""Starting the app: bind the socket first (so the URL printed is the one that answers), then uvicorn.

uvicorn owns the signals: Ctrl-C stops accepting, finishes requests in flight, runs the app's
shutdown (which interrupts running reruns so their finished cases are written) and returns.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from specengine.index.database import RunIndex
from specengine.review.store import reviewer_name
from specengine.serve.limits import server_config


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free port); OSError when it cannot be had."""
    info = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = info[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def serve(
    project: Path, sock: socket.socket, host: str, *, open_browser: bool, echo: Callable[[str], None]
) -> None:
    """Index the project, print the URL, and serve until interrupted."""
    import uvicorn

    from specengine.serve.app import create_app

    port = sock.getsockname()[1]
    index = RunIndex(project)
    if not index.exists:
        echo(f"indexing {index.runs_folder} (once; later runs are added as they end)…")
    with index.open() as conn:
        count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    names = (host, socket.gethostname()) if host in ("0.0.0.0", "::") else (host,)
    app = create_app(project, port=port, host_names=names, reviewer=reviewer_name(project))
    url = url_for(host, port)
    echo(f"specengine serve: {count} run{'s' if count != 1 else ''} of {project}")
    echo(f"open {url}  (Ctrl-C stops)")
    config = server_config(
        app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=10
    )
    server = uvicorn.Server(config)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn stops cleanly, then raises the Ctrl-C it held
        server.run(sockets=[sock])
    echo("stopped")
