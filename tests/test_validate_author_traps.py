"""`validate` finds what `run` would find, before a request: each first-week mistake is reported at
the file, line and column where it is written, with the fix, and `run` stops on it (exit 2) without
sending anything to the bot."""

from __future__ import annotations

import pytest
from support.cli import run_cli, write_project, write_spec
from support.support_bot import SupportBot

ENV_SET = {"BOT_PORT": None}  # the variable the ${VAR} traps use, unset


@pytest.fixture(scope="module")
def bot():
    with SupportBot() as bot:
        yield bot


ONE_EVAL = """
evals:
  - name: order status
    send: Where is ORD-123?
    expect:
      - includes: on its way
"""

# name: (endpoint settings over the bot's, spec text, where, what the message says)
ERRORS = {
    "url with a space at its start": (
        {"url": " {url}"},
        ONE_EVAL,
        "specengine.yaml:4:10",
        "url has white space at its start: remove it (url: http://127.0.0.1:",
    ),
    "url with a space inside": (
        {"url": "{url} x"},
        ONE_EVAL,
        "specengine.yaml:4:10",
        "url has a space inside, after 'http://127.0.0.1:",
    ),
    "blank criteria": (
        {},
        """
evals:
  - name: polite
    send: hi
    expect:
      - judge: closed_qa
        criteria:
""",
        "spec.yaml:6:18",
        "criteria is empty, and the judge has nothing to judge by: write the question the judge answers",
    ),
    "empty expected": (
        {},
        """
evals:
  - name: polite
    send: hi
    expect:
      - judge: factuality
        expected: "  "
""",
        "spec.yaml:6:19",
        "expected is empty, and the judge has nothing to judge by: write the reference answer",
    ),
    "blank role": (
        {},
        """
evals:
  - name: in character
    send: hi
    expect:
      - judge: role_adherence
        role: "   "
""",
        "spec.yaml:6:15",
        "role is empty, and the judge has nothing to judge by: write the role the agent must keep",
    ),
    "role with no text": (
        {},
        """
evals:
  - name: in character
    send: hi
    expect:
      - judge: role_adherence
        role:
""",
        "spec.yaml:6:14",
        "role is empty, and the judge has nothing to judge by: write the role the agent must keep",
    ),
    "pass_rate as a percentage": (
        {},
        "pass_rate: 80\n" + ONE_EVAL,
        "spec.yaml:1:12",
        "pass_rate is a share from 0 to 1: write 0.8 for 80%",
    ),
    "judge threshold out of 10": (
        {},
        """
evals:
  - name: polite
    send: hi
    expect:
      - judge: closed_qa
        criteria: Is it polite?
        at_least: 7
""",
        "spec.yaml:7:19",
        "at_least: judge scores run from 0 to 1; write 0.7",
    ),
    "labels as text": ({}, "labels: smoke\n" + ONE_EVAL, "spec.yaml:1:9", "write `labels: [smoke]`"),
    "tools list as text": (
        {},
        """
evals:
  - name: order status
    send: Where is ORD-123?
    expect:
      - tool_calls_in_order: lookup_order
""",
        "spec.yaml:5:30",
        "write `tool_calls_in_order: [lookup_order]`",
    ),
    "unset variable": (
        {"url": "http://127.0.0.1:${{BOT_PORT}}/chat"},
        ONE_EVAL,
        "specengine.yaml:4:10",
        "endpoint 'bot': environment variable BOT_PORT not set (used as ${...}): set it before the command",
    ),
}


def _write(folder, bot, settings, spec):
    endpoint = {
        key: value.format(url=bot.url_for("/chat")) if isinstance(value, str) else value
        for key, value in settings.items()
    }
    write_project(folder, endpoints={"bot": bot.endpoint(**endpoint)})
    write_spec(folder, "spec", spec)


@pytest.mark.parametrize("trap", list(ERRORS))
def test_run_stops_on_the_trap_before_a_request(tmp_path, bot, trap):
    settings, spec, where, fragment = ERRORS[trap]
    _write(tmp_path, bot, settings, spec)
    before = bot.hits()
    run = run_cli(["run", "spec.yaml"], cwd=tmp_path, env=ENV_SET)
    assert run.exit_code == 2, run.output
    assert f"{where}: " in run.output and fragment in run.output, run.output
    assert bot.hits() == before  # 0 requests
    if trap != "unset variable":  # validate needs no environment: that one is a warning there
        checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path, env=ENV_SET)
        assert checked.exit_code == 1 and fragment in checked.output


def test_an_unset_variable_is_a_warning_from_validate_and_an_error_from_plan(tmp_path, bot):
    _write(tmp_path, bot, {"url": "http://127.0.0.1:${{BOT_PORT}}/chat"}, ONE_EVAL)
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path, env=ENV_SET)
    assert checked.exit_code == 0, checked.output
    assert "specengine.yaml:4:10: warning: ${BOT_PORT} is not set here" in checked.output
    assert "export BOT_PORT=" in checked.output
    planned = run_cli(["plan", "spec.yaml"], cwd=tmp_path, env=ENV_SET)
    assert planned.exit_code == 2
    assert "specengine.yaml:4:10: endpoint 'bot': environment variable BOT_PORT not set" in planned.output
    shown = run_cli(["plan", "spec.yaml"], cwd=tmp_path, env={"BOT_PORT": "8080"})
    assert shown.exit_code == 0 and "${BOT_PORT}" in shown.output  # plan reads no value


def test_replay_naming_a_field_the_rows_lack_lists_those_they_have(tmp_path, bot):
    (tmp_path / "rows.jsonl").write_text(
        '{"input": {"chat": [{"role": "user", "content": "hi"}]}, "expected": {"x": 1}}\n', encoding="utf-8"
    )
    _write(
        tmp_path,
        bot,
        {},
        "dataset: rows.jsonl\nevals:\n  - name: replayed\n    replay: input.messages\n"
        "    expect: [succeeded]\n",
    )
    before = bot.hits()
    for command in ("validate", "run"):
        result = run_cli([command, "spec.yaml"], cwd=tmp_path)
        assert result.exit_code in (1, 2)
        assert "spec.yaml:4:13: replay: undefined variable input.messages: input has no key 'messages'" in (
            result.output
        )
        assert "it has: chat" in result.output
    assert bot.hits() == before  # 0 requests


@pytest.mark.parametrize(
    ("spec", "where", "fragment"),
    [
        ("timeout: 30000\n" + ONE_EVAL, "spec.yaml:1:10", "timeout: 30000 is in seconds: did you mean 30?"),
        (
            ONE_EVAL + "      - latency_below: 500\n",
            "spec.yaml:6:24",
            "latency_below: 500 is in seconds: did you mean 0.5?",
        ),
    ],
)
def test_a_number_in_the_wrong_unit_is_a_warning(tmp_path, bot, spec, where, fragment):
    _write(tmp_path, bot, {}, spec)
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 0
    assert f"{where}: warning: {fragment}" in checked.output


@pytest.mark.parametrize(
    ("setting", "warned"), [("timeout: 300", False), ("timeout: 3600", False), ("timeout: 3601", True)]
)
def test_a_timeout_warns_only_past_an_hour(tmp_path, bot, setting, warned):
    _write(tmp_path, bot, {}, setting + "\n" + ONE_EVAL)
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 0
    assert ("is in seconds: did you mean" in checked.output) is warned


def test_merge_keys_and_x_keys_work_as_in_compose_files(tmp_path, bot):
    (tmp_path / "specengine.yaml").write_text(
        f"""x-http: &http
  protocol: http
  body: {{message: "{{{{ message }}}}", session: "{{{{ session_id }}}}"}}
  reply: json.reply
  tool_calls: json.actions
endpoints:
  bot:
    <<: *http
    url: {bot.url_for("/chat")}
defaults: {{endpoint: bot}}
""",
        encoding="utf-8",
    )
    write_spec(
        tmp_path,
        "spec",
        """
        x-order: &order
          called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
        evals:
          - name: order status
            send: Where is ORD-123?
            expect: [*order, {includes: on its way}]
        """,
    )
    checked = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert checked.exit_code == 0, checked.output
    run = run_cli(["run", "spec.yaml"], cwd=tmp_path)
    assert run.exit_code == 0, run.output
