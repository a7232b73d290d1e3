"""Start the app under test for a run, the way Playwright's `webServer` does, and stop it afterwards.

The project file's `web_server: {command, url, timeout, reuse_existing}` names a shell command that
serves the agent and a URL that answers once it is ready. `serve_app` runs the command in the
project folder, in its own process group, waits until the URL answers, and on the way out stops the
whole group (SIGTERM, then SIGKILL after a grace period), also when the run is interrupted.

Choices the contract leaves open:
- "answers" means an HTTP status of 2xx, 3xx or 400-403, as Playwright counts it: a 404 or a 5xx is
  a server that is up but not serving the app yet (a dev server still compiling, a proxy whose
  upstream is down). Redirects are not followed; a 3xx already proves the app is there.
- `reuse_existing` defaults to true: when the URL already answers, the running app is used and no
  command runs. With `reuse_existing: false` an URL that already answers is an error, because the
  command would start a second app and the run would test whichever holds the port.
- The command's output is kept (its last lines), and shown only when it fails to start.
- A command that exits with code 0 before the URL answers may have started the app in the
  background (`docker compose up -d`), so waiting goes on; a non-zero exit fails at once.
- `${VAR}` in `url` reads the environment; in `command` the shell expands it.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import os
import signal
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specengine.errors import WebServerError
from specengine.source.project import resolve_variables

DEFAULT_TIMEOUT = 60.0
STOP_GRACE_S = 5.0
POLL_S = 0.1
PROBE_TIMEOUT_S = 2.0
OUTPUT_LINES = 20


@dataclass
class RunningApp:
    """The app a run talks to: started by us (`pid`), or already running (`reused`)."""

    url: str
    reused: bool
    pid: int | None = None
    output: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=OUTPUT_LINES))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx already proves the app is there: it is the answer, not a hop to follow."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> int | None:
    """The HTTP status `url` answers a GET with (redirects not followed), or None when nothing does."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a local dev server's certificate proves nothing either way
    opener = urllib.request.build_opener(_NoRedirect, urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(urllib.request.Request(url, method="GET"), timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, http.client.HTTPException, ValueError):
        return None


def is_ready(status: int | None) -> bool:
    """2xx, 3xx and 400-403 count as the app answering (Playwright's rule)."""
    return status is not None and 200 <= status <= 403


@contextlib.contextmanager
def serve_app(
    config: Mapping[str, Any],
    folder: Path,
    *,
    environ: Mapping[str, str] | None = None,
    stop_grace: float = STOP_GRACE_S,
) -> Iterator[RunningApp]:
    """Make sure the app of `web_server:` answers for the duration of the block.

    Raises WebServerError when the settings are unusable, the command fails, or the URL does not
    answer within `timeout` seconds; in every case the started process group is stopped.
    """
    command, url, timeout, reuse = _settings(config, os.environ if environ is None else environ)
    status = probe(url)
    if is_ready(status):
        if reuse:
            yield RunningApp(url=url, reused=True)
            return
        raise WebServerError(
            f"web_server: {url} already answers (HTTP {status}) before the command ran; stop the app "
            "that is running there, or set web_server.reuse_existing: true to use it"
        )
    process = subprocess.Popen(
        command,
        shell=True,
        cwd=str(folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopped as a whole, spared the terminal's Ctrl-C
    )
    app = RunningApp(url=url, reused=False, pid=process.pid)
    reader = threading.Thread(target=_collect, args=(process, app.output), daemon=True)
    reader.start()
    try:
        _wait_until_ready(process, app, command, timeout)
        yield app
    finally:
        stop_process_group(process, stop_grace)
        reader.join(timeout=1.0)  # EOF once the group is gone; a detached grandchild may hold the pipe
        if not reader.is_alive() and process.stdout is not None:
            process.stdout.close()


def _settings(config: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[str, str, float, bool]:
    if not isinstance(config, Mapping):
        raise WebServerError("web_server must be a mapping with command and url")
    command = config.get("command")
    url = config.get("url")
    if not isinstance(command, str) or not command.strip():
        raise WebServerError("web_server.command must be the shell command that starts the app")
    if not isinstance(url, str) or not url.strip():
        raise WebServerError("web_server.url must be a URL that answers once the app is ready")
    resolved = resolve_variables(url, environ)
    if resolved.missing:
        names = ", ".join(resolved.missing)
        raise WebServerError(f"web_server.url: environment variable {names} not set (used as ${{...}})")
    url = str(resolved.value)
    if not url.startswith(("http://", "https://")):
        raise WebServerError(f"web_server.url must start with http:// or https:// (got {url!r})")
    timeout = config.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise WebServerError("web_server.timeout must be a number of seconds above 0")
    reuse = config.get("reuse_existing", True)
    if not isinstance(reuse, bool):
        raise WebServerError("web_server.reuse_existing must be true or false")
    return command, url, float(timeout), reuse


def _collect(process: subprocess.Popen[bytes], lines: collections.deque[str]) -> None:
    """Keep the command's last output lines; reading also keeps its pipe from filling up."""
    stream = process.stdout
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError):
        for raw in stream:
            lines.append(raw.decode("utf-8", "replace").rstrip())


def _wait_until_ready(
    process: subprocess.Popen[bytes], app: RunningApp, command: str, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    status: int | None = None
    while True:
        status = probe(app.url, timeout=min(PROBE_TIMEOUT_S, max(0.1, deadline - time.monotonic())))
        if is_ready(status):
            return
        code = process.poll()
        if code not in (None, 0):
            time.sleep(0.05)  # let the reader take the last lines
            raise WebServerError(
                f"web_server: `{command}` exited with code {code} before {app.url} answered"
                + _tail(app.output)
            )
        if time.monotonic() >= deadline:
            last = f"its last answer was HTTP {status}" if status is not None else "nothing answered"
            raise WebServerError(
                f"web_server: {app.url} did not answer within {timeout:g} s after `{command}` started "
                f"({last}); raise web_server.timeout if the app needs longer" + _tail(app.output)
            )
        time.sleep(POLL_S)


def _tail(lines: collections.deque[str]) -> str:
    shown = [line for line in lines if line.strip()]
    if not shown:
        return "; it printed nothing"
    return "; its last output:\n" + "\n".join(f"  | {line}" for line in shown)


def stop_process_group(process: subprocess.Popen[bytes], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the command's process group, then SIGKILL whatever is left after `grace` seconds."""
    group = process.pid
    if not _signal_group(group, signal.SIGTERM):
        process.wait()
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # reap the leader, so a dead group really is gone
        if not _group_alive(group):
            break
        time.sleep(0.05)
    else:
        _signal_group(group, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


def _signal_group(group: int, signum: int) -> bool:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(group: int) -> bool:
    """True while a live (not zombie) process is in the group.

    An orphaned child that died is a zombie until init reaps it, which some container inits do
    only every second or so; it still counts for `killpg(group, 0)`, so on Linux /proc decides.
    """
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(group) and fields[0] not in ("Z", "X"):
            return True
    return False
