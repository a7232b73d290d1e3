"""serve_app: starts the app command in its own process group, waits for its URL, reuses a running
app, explains failures with the command's last output, and stops the whole group on the way out."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import pytest
from support.servers import Reply, ScriptedHTTPServer

from specengine.engine.app_under_test import _group_alive, is_ready, probe, serve_app
from specengine.errors import WebServerError

PYTHON = shlex.quote(sys.executable)


def http_server_command(port: int) -> str:
    return f"{PYTHON} -m http.server {port} --bind 127.0.0.1"


def group_gone(pid: int, within: float = 5.0) -> bool:
    """True once the process group `pid` has no live member (polled: stopping is asynchronous)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _group_alive(pid):
            return True
        time.sleep(0.05)
    return False


def process_alive(pid: int) -> bool:
    """True when `pid` runs (a zombie waiting for init to reap it does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def test_starts_the_command_in_the_folder_waits_and_stops_it(tmp_path, free_port):
    (tmp_path / "health.txt").write_text("ok")
    url = f"http://127.0.0.1:{free_port}/health.txt"
    config = {"command": http_server_command(free_port), "url": url, "timeout": 20}
    with serve_app(config, tmp_path) as app:
        assert not app.reused and app.pid
        assert probe(url) == 200  # served from tmp_path: the command ran in the project folder
    assert group_gone(app.pid)
    assert probe(url) is None


def test_reuses_an_app_that_already_answers(tmp_path):
    marker = tmp_path / "started"
    with ScriptedHTTPServer() as running:
        running.route("/health", lambda request: {"ok": True}, method="GET")
        config = {"command": f"touch {marker}", "url": running.url_for("/health"), "reuse_existing": True}
        with serve_app(config, tmp_path) as app:
            assert app.reused and app.pid is None
        assert not marker.exists()
        assert running.hits("/health") == 1


def test_reuse_is_the_default(tmp_path):
    with ScriptedHTTPServer() as running:
        running.route("/", lambda request: "up", method="GET")
        with serve_app({"command": "exit 9", "url": running.url_for("/")}, tmp_path) as app:
            assert app.reused


def test_an_answering_url_without_reuse_is_an_error(tmp_path):
    with ScriptedHTTPServer() as running:
        running.route("/", lambda request: "up", method="GET")
        config = {"command": "exit 0", "url": running.url_for("/"), "reuse_existing": False}
        with (
            pytest.raises(WebServerError, match="already answers .*reuse_existing: true"),
            serve_app(config, tmp_path),
        ):
            pass


def test_a_failing_command_is_reported_with_its_last_output(tmp_path, free_port):
    command = "echo starting; echo 'Error: port config missing' >&2; exit 3"
    config = {"command": command, "url": f"http://127.0.0.1:{free_port}/", "timeout": 30}
    started = time.monotonic()
    with pytest.raises(WebServerError) as caught, serve_app(config, tmp_path):
        pass
    message = str(caught.value)
    assert "exited with code 3" in message
    assert "| starting" in message and "| Error: port config missing" in message
    assert time.monotonic() - started < 25  # did not wait for the timeout


def test_timeout_stops_the_command_and_says_what_answered(tmp_path):
    with ScriptedHTTPServer() as half_up:  # answers 404: up, but not the app
        half_up.route("/health", lambda request: Reply(status=404, body={"error": "nope"}), method="GET")
        config = {"command": "echo booting; exec sleep 30", "url": half_up.url_for("/health"), "timeout": 0.5}
        with pytest.raises(WebServerError) as caught, serve_app(config, tmp_path):
            pass
        message = str(caught.value)
        assert "did not answer within 0.5 s" in message
        assert "last answer was HTTP 404" in message
        assert "| booting" in message


def test_interrupt_inside_the_block_stops_the_group(tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/"
    config = {"command": http_server_command(free_port), "url": url, "timeout": 20}
    with pytest.raises(KeyboardInterrupt), serve_app(config, tmp_path) as app:
        raise KeyboardInterrupt
    assert group_gone(app.pid)


def test_a_command_that_ignores_sigterm_is_killed(tmp_path, free_port):
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import signal, sys, http.server\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"http.server.HTTPServer(('127.0.0.1', {free_port}), http.server.SimpleHTTPRequestHandler)"
        ".serve_forever()\n"
    )
    config = {"command": f"{PYTHON} {script}", "url": f"http://127.0.0.1:{free_port}/", "timeout": 20}
    with serve_app(config, tmp_path, stop_grace=0.3) as app:
        assert probe(config["url"]) == 200
    assert group_gone(app.pid)


def test_children_of_the_shell_are_stopped_too(tmp_path, free_port):
    pid_file = tmp_path / "child.pid"
    command = f"{http_server_command(free_port)} & echo $! > {pid_file}; wait"
    config = {"command": command, "url": f"http://127.0.0.1:{free_port}/", "timeout": 20}
    with serve_app(config, tmp_path) as app:
        child = int(pid_file.read_text())
        assert child != app.pid
    assert group_gone(app.pid)
    assert not process_alive(child)


def test_url_may_read_the_environment(tmp_path):
    with ScriptedHTTPServer() as running:
        running.route("/", lambda request: "up", method="GET")
        config = {"command": "exit 1", "url": "http://127.0.0.1:${APP_PORT}/"}
        with serve_app(config, tmp_path, environ={"APP_PORT": str(running.port)}) as app:
            assert app.reused
        with pytest.raises(WebServerError, match="APP_PORT not set"), serve_app(config, tmp_path, environ={}):
            pass


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"url": "http://127.0.0.1:1/"}, "web_server.command"),
        ({"command": "true"}, "web_server.url"),
        ({"command": "true", "url": "localhost:3000"}, "must start with http://"),
        ({"command": "true", "url": "http://127.0.0.1:1/", "timeout": 0}, "web_server.timeout"),
        ({"command": "true", "url": "http://127.0.0.1:1/", "reuse_existing": "yes"}, "reuse_existing"),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path, config, fragment):
    with pytest.raises(WebServerError, match=fragment), serve_app(config, tmp_path):
        pass


def test_readiness_rule():
    assert [is_ready(status) for status in (None, 200, 204, 302, 401, 403, 404, 405, 500, 502)] == [
        False,
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_the_app_gets_sigterm_first_for_a_clean_shutdown(tmp_path, free_port):
    """The app sees SIGTERM first (a clean shutdown), not SIGKILL."""
    flag = tmp_path / "terminated"
    script = tmp_path / "graceful.py"
    script.write_text(
        "import signal, sys, http.server, pathlib\n"
        f"def bye(*_):\n    pathlib.Path({str(flag)!r}).write_text('bye')\n    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        f"http.server.HTTPServer(('127.0.0.1', {free_port}), http.server.SimpleHTTPRequestHandler)"
        ".serve_forever()\n"
    )
    config = {"command": f"exec {PYTHON} {script}", "url": f"http://127.0.0.1:{free_port}/", "timeout": 20}
    with serve_app(config, tmp_path):
        pass
    assert flag.read_text() == "bye"
