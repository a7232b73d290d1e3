"""`specengine run` starts the project's `web_server` for the run and stops it afterwards."""

from __future__ import annotations

import json
import socket
import sys

from support.cli import run_cli_subprocess, write_spec


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_run_starts_the_app_waits_for_it_and_stops_it(tmp_path, free_port):
    (tmp_path / "specengine.yaml").write_text(
        "endpoints:\n"
        "  app:\n"
        "    protocol: openai-chat\n"
        f"    url: http://127.0.0.1:{free_port}/v1/chat/completions\n"
        "defaults: {endpoint: app}\n"
        "web_server:\n"
        f"  command: {sys.executable} -m specengine demo-agent --port {free_port} -q\n"
        f"  url: http://127.0.0.1:{free_port}/health\n"
        "  timeout: 30\n"
    )
    write_spec(
        tmp_path, "specs/w", "evals: [{name: paris, send: Weather in Paris?, expect: [{includes: Sunny}]}]"
    )
    result = run_cli_subprocess(["run", "specs", "--output", "out.json"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "started the app under test" in result.stderr
    assert json.loads((tmp_path / "out.json").read_text())["cases"][0]["status"] == "passed"
    assert not _answers(free_port)  # stopped after the run


def test_an_app_that_never_answers_stops_the_run_before_any_case(tmp_path, free_port):
    (tmp_path / "specengine.yaml").write_text(
        "endpoints:\n"
        f"  app: {{protocol: openai-chat, url: 'http://127.0.0.1:{free_port}/v1/chat/completions'}}\n"
        "defaults: {endpoint: app}\n"
        "web_server:\n"
        f"  command: {sys.executable} -c \"import time; print('booting'); time.sleep(30)\"\n"
        f"  url: http://127.0.0.1:{free_port}/health\n"
        "  timeout: 1\n"
    )
    write_spec(tmp_path, "specs/w", "evals: [{name: paris, send: hi, expect: [succeeded]}]")
    result = run_cli_subprocess(["run", "specs", "--output", "out.json"], cwd=tmp_path)
    assert result.exit_code == 2, result.output
    assert "web_server" in result.stderr and "booting" in result.stderr
    assert not (tmp_path / "out.json").exists()
