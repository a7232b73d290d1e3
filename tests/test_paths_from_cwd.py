"""validate, plan and run name a file from the folder the command runs in (absolute when the file is
outside it), alike in every message, whatever folder the case ids are relative to."""

from __future__ import annotations

import pytest
from support.cli import run_cli, write_project, write_spec
from support.support_bot import SupportBot

SPEC = """
labels: smoke
evals:
  - name: order status
    send: Where is ORD-123?
    expect:
      - includes: on its way
"""


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_paths_are_relative_to_the_working_folder(tmp_path, command):
    with SupportBot() as bot:
        write_project(tmp_path, endpoints={"bot": bot.endpoint(url="http://127.0.0.1:${BOT_PORT}/chat")})
        write_spec(tmp_path / "specs", "orders", SPEC)
        result = run_cli([command, "orders.yaml"], cwd=tmp_path / "specs", env={"BOT_PORT": None})
        write_spec(tmp_path / "specs", "orders", SPEC.replace("labels: smoke", "labels: [smoke]"))
        fixed = run_cli([command, "orders.yaml"], cwd=tmp_path / "specs", env={"BOT_PORT": None})
        assert bot.hits() == 0
    assert result.exit_code in (1, 2)
    assert "\norders.yaml:1:9: labels must be a list" in "\n" + result.output
    assert "specs/orders.yaml" not in result.output  # not from the project's folder
    project = (tmp_path / "specengine.yaml").resolve().as_posix()
    if command == "validate":
        assert f"{project}:4:10: warning: ${{BOT_PORT}} is not set here" in fixed.output
    else:
        assert f"{project}:4:10: endpoint 'bot': environment variable BOT_PORT not set" in fixed.output
