"""`source:` end to end: a support agent's production traces, recorded by real instrumentation
(`opentelemetry-instrumentation-openai-v2` with util-genai's agent and tool spans, and
`openinference-instrumentation-openai`), exported as the Collector's file exporter writes them,
graded by the CLI with no request to any agent; the planted bug (a refund to the wrong order in one
conversation in a hundred) found, frozen, and failing the same way against the live agent. Also
JSONL chat logs, an unreadable trace reported with the rest scored, shards, the helper process, and
mistakes located. The other forms instrumentations record in: tests/test_run_traces_forms.py."""

from __future__ import annotations

import json
import select
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from support.cli import run_cli, write_project, write_spec
from support.recorded_traces import SPEC, project, results
from support.traced_agent import ScriptedModel, conversations, record

from specengine.traces.otlp import hex_id, read_file

pytest.importorskip("opentelemetry.instrumentation.openai_v2")
pytest.importorskip("openinference.instrumentation.openai")


@pytest.fixture(scope="module")
def model():
    with ScriptedModel() as server:
        yield server


@pytest.fixture(scope="module")
def recorded(model, tmp_path_factory) -> Path:
    """100 conversations in two files (GenAI attribute form) and 10 in OpenInference's form, two of
    them tagged `vip` (`using_tags`)."""
    folder = tmp_path_factory.mktemp("traces")
    everything = conversations(100)
    split = [*everything[:50], {"out": str(folder / "genai-1.json")}, *everything[50:]]
    record("genai", model, folder / "genai-2.json", split)
    tagged = [
        {**one, "tags": ["vip"]} if one["id"] in TAGGED else one for one in conversations(10, bug_every=10)
    ]
    record("openinference", model, folder / "openinference.json", tagged)
    return folder


TAGGED = ("conv-0003", "conv-0009")  # the OpenInference conversations tagged vip


def test_genai_traces_are_graded_without_a_request_and_the_wrong_refund_is_found(tmp_path, recorded, model):
    folder = project(tmp_path, recorded, "genai-*.json")
    before = model.hits()
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    assert run.exit_code == 1, run.output
    assert model.hits() == before  # nothing was sent to any agent
    data = results(folder / "out.json")
    assert data["summary"]["passed"] == 99 and data["summary"]["failed"] == 1
    failed = [case for case in data["cases"] if case["status"] == "failed"]
    assert [case["row"] for case in failed] == ["conv-0099"]
    check = next(
        check for check in failed[0]["trials"][0]["checks"] if check["matcher"] == "called_tool_with"
    )
    assert check["got"] == 'issue_refund({"order_id": "ORD-0099"})'
    assert check["expected"] == 'issue_refund({"order_id": "ORD-9099"})'
    transcript = failed[0]["trials"][0]["transcript"]
    assert [message["content"] for message in transcript if message["role"] == "user"] == [
        "Where is my order ORD-0099?",
        "I ordered ORD-0099 and ORD-9099; please refund ORD-9099",
    ]
    # the execute_tool span and the tool call in the chat span's answer are one call, with its result
    assert transcript[-1]["tool_calls"] == [
        {"name": "issue_refund", "args": {"order_id": "ORD-0099"}, "result": {"refunded": "ORD-0099"}}
    ]
    recorded_case = failed[0]["recorded"]
    assert recorded_case["source"] == "prod" and recorded_case["conversation"] == "conv-0099"
    assert len(recorded_case["trace_ids"]) == 2 and all(len(one) == 32 for one in recorded_case["trace_ids"])
    assert recorded_case["file"].endswith("genai-2.json")


def test_a_frozen_production_failure_fails_the_same_way_against_the_live_agent(tmp_path, recorded, model):
    folder = project(tmp_path, recorded, "genai-2.json", model)
    assert run_cli(["run", "specs", "-o", "out.json"], cwd=folder).exit_code == 1
    case_id = "specs/refunds.yaml::refunds the order asked for[conv-0099]"
    frozen = run_cli(["freeze", "out.json", case_id], cwd=folder)
    assert frozen.exit_code == 0, frozen.output
    assert not (folder / "specs" / "frozen").exists()  # not where the run over the source reads
    path = next((folder / "frozen").glob("*.yaml"))
    text = path.read_text(encoding="utf-8")
    assert "source" not in yaml.safe_load(text)["evals"][0]
    assert "send: I ordered ORD-0099 and ORD-9099; please refund ORD-9099" in text
    before = model.hits()
    assert run_cli(["run", "specs", "-o", "again.json"], cwd=folder).exit_code == 1
    assert model.hits() == before  # the nightly run over the source still sends nothing
    live = run_cli(["run", str(path), "-o", "live.json"], cwd=folder)
    assert live.exit_code == 1, live.output
    assert model.hits() > before  # this time the agent was asked
    case = results(folder / "live.json")["cases"][0]
    check = next(check for check in case["checks"] if check["matcher"] == "called_tool_with")
    assert check["status"] == "failed"
    trial_check = next(c for c in case["trials"][0]["checks"] if c["matcher"] == "called_tool_with")
    assert trial_check["got"] == 'issue_refund({"order_id": "ORD-0099"})'


def test_openinference_tags_are_labels_an_eval_keeps_conversations_by(tmp_path, recorded):
    folder = project(tmp_path, recorded, "openinference.json")
    write_spec(
        folder,
        "specs/vip",
        """
        evals:
          - name: vip
            source: {name: prod, label: vip}
            expect:
              - equals: "{{ trace.labels }}"
        """,
    )
    run = run_cli(["run", "specs/vip.yaml", "-o", "out.json"], cwd=folder)
    cases = results(folder / "out.json")["cases"]
    assert [(case["row"], case["labels"]) for case in cases] == [(key, ["vip"]) for key in TAGGED], run.output
    assert cases[0]["trials"][0]["checks"][0]["expected"] == '"[\\"vip\\"]"'


def test_openinference_traces_are_read_as_the_same_conversations(tmp_path, recorded):
    folder = project(tmp_path, recorded, "openinference.json")
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    assert run.exit_code == 1, run.output
    data = results(folder / "out.json")
    assert [(case["row"], case["status"]) for case in data["cases"] if case["status"] != "passed"] == [
        ("conv-0009", "failed")
    ]
    assert data["summary"]["passed"] == 9
    last = data["cases"][0]["trials"][0]["transcript"][-1]
    assert last["content"] == "Done: order ORD-0000 is refunded."
    assert last["tool_calls"] == [
        {"name": "issue_refund", "args": {"order_id": "ORD-0000"}, "result": {"refunded": "ORD-0000"}}
    ]


def test_sample_and_limit_choose_the_same_conversations_on_every_run(tmp_path, recorded):
    write_project(
        tmp_path, sources={"prod": {"otlp": str(recorded / "genai-*.json"), "sample": 0.3, "limit": 20}}
    )
    write_spec(tmp_path, "specs/refunds", SPEC)
    rows = []
    for name in ("one.json", "two.json"):
        run_cli(["run", "specs", "-o", name], cwd=tmp_path)
        rows.append([case["row"] for case in results(tmp_path / name)["cases"]])
    assert rows[0] == rows[1] and 10 <= len(rows[0]) <= 20 and rows[0] == sorted(rows[0])


CHAT_LOG = [
    {
        "id": "chat-1",
        "timestamp": "2026-12-01T10:00:00Z",
        "agent": "support",
        "labels": ["vip"],
        "messages": [
            {"role": "user", "content": "Refund ORD-1"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "issue_refund", "arguments": '{"order_id": "ORD-1"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"refunded": "ORD-1"}'},
            {
                "role": "assistant",
                "content": "Done.",
                "latency_s": 1.5,
                "usage": {"prompt_tokens": 100, "completion_tokens": 5},
            },
        ],
    },
    {
        "id": "chat-2",
        "timestamp": "2026-11-01T10:00:00Z",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello"}],
    },
]


def test_jsonl_logs_with_an_unreadable_line_reported_and_the_rest_scored(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [json.dumps(line) for line in CHAT_LOG] + ['{"id": "broken", "messages": "not a list"}']
    (logs / "day.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_project(tmp_path, sources={"support-logs": {"jsonl": "logs/*.jsonl", "since": "2026-11-15"}})
    write_spec(
        tmp_path,
        "specs/logs",
        """
        evals:
          - name: refunds
            source: {name: support-logs, label: vip}
            expect:
              - called_tool_with: {name: issue_refund, args: {order_id: ORD-1}}
              - latency_below: 1
              - tokens_below: 200
          - name: by agent
            source: {name: support-logs, agent: support}
            expect:
              - equals: "{{ trace.agent }}"
        """,
    )
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path)
    data = results(tmp_path / "out.json")
    statuses = {case["row"]: case["status"] for case in data["cases"] if case["eval"] == "refunds"}
    assert statuses == {"unreadable logs/day.jsonl:3": "skipped", "chat-1": "failed"}, run.output
    by_agent = [case for case in data["cases"] if case["eval"] == "by agent" and case["status"] != "skipped"]
    assert [case["row"] for case in by_agent] == ["chat-1"]  # the line's agent, read by the filter
    assert by_agent[0]["trials"][0]["checks"][0]["expected"] == '"support"'  # trace.agent too
    skipped = next(case for case in data["cases"] if case["status"] == "skipped")
    assert skipped["skip_reason"] == "unreadable trace: logs/day.jsonl:3: no messages list"
    refunded = next(case for case in data["cases"] if case["row"] == "chat-1" and case["eval"] == "refunds")
    checks = {check["matcher"]: check["status"] for check in refunded["checks"]}
    assert checks == {"called_tool_with": "passed", "latency_below": "failed", "tokens_below": "passed"}


def test_a_trace_recorded_without_its_messages_or_a_span_without_a_trace_id_is_named_and_the_rest_scored(
    tmp_path, recorded, model
):
    """openai-v2 records no message content unless asked: such a trace is a skipped case naming its
    file, trace id and why (not a conversation of empty turns that passes), as is a line whose spans
    lost their trace id; the other conversations are graded."""
    traces = tmp_path / "traces"
    traces.mkdir()
    shutil.copy(recorded / "openinference.json", traces)
    dark = [{"id": "dark-1", "messages": ["Please refund order ORD-0001"]}]
    record("genai", model, traces / "uncaptured.json", dark, captured=False)
    batch = json.loads((recorded / "genai-1.json").read_text(encoding="utf-8").splitlines()[0])
    spans = batch["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in spans:
        del span["traceId"]
    (traces / "torn.json").write_text(json.dumps(batch) + "\n", encoding="utf-8")
    folder = project(tmp_path, traces, "*.json")
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    assert run.exit_code == 1, run.output
    cases = results(folder / "out.json")["cases"]
    counts = {status: sum(case["status"] == status for case in cases) for status in ("passed", "failed")}
    assert counts == {"passed": 9, "failed": 1}  # the other source's conversations, graded
    trace_id = hex_id(next(iter(read_file(traces / "uncaptured.json")))[1]["traceId"])
    assert sorted(case["skip_reason"] for case in cases if case["status"] == "skipped") == [
        f"unreadable trace: traces/torn.json:1: {len(spans)} spans without a traceId",
        f"unreadable trace: traces/uncaptured.json: trace {trace_id}: no model call with its messages"
        " (is message content captured? OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;"
        " OpenLLMetry: TRACELOOP_TRACE_CONTENT)",
    ]


def test_compare_says_a_recorded_conversation_changed_rather_than_what_a_case_sends(tmp_path, recorded):
    """conv-0009 passes in the GenAI recording and fails in the OpenInference one (other traces of
    another agent): compare puts it apart from regressions, naming the recording as the change."""
    project(tmp_path, recorded, "genai-1.json")
    assert run_cli(["run", "specs", "-o", "before.json"], cwd=tmp_path).exit_code == 0
    project(tmp_path, recorded, "openinference.json")
    assert run_cli(["run", "specs", "-o", "after.json"], cwd=tmp_path).exit_code == 1
    compared = run_cli(["compare", "before.json", "after.json"], cwd=tmp_path)
    assert "0 regressions" in compared.output, compared.output
    line = next(line for line in compared.output.splitlines() if "[conv-0009]" in line)
    assert "passed -> failed  spec changed (the recorded conversation changed)" in line


def test_plan_shows_a_recorded_case_as_read_and_sends_nothing(tmp_path, recorded, model):
    folder = project(tmp_path, recorded, "openinference.json", model)
    before = model.hits()
    shown = run_cli(["plan", "specs"], cwd=folder)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    start = lines.index("specs/refunds.yaml::refunds the order asked for[conv-0009]  (specs/refunds.yaml:2)")
    assert lines[start + 1 : start + 4] == [
        f"  recorded: conversation conv-0009 of source prod ({recorded / 'openinference.json'}), graded as"
        " it happened: nothing is sent",
        "  turn 1 recorded: 'Where is my order ORD-0009?'",
        "  turn 2 recorded: 'I ordered ORD-0009 and ORD-9009; please refund ORD-9009'",
    ]
    as_json = run_cli(["plan", "specs", "--json"], cwd=folder)
    case = json.loads(as_json.stdout)["cases"][0]
    assert case["endpoint"] == {"name": "source:prod", "protocol": "recorded", "url": None}
    assert case["recorded"]["conversation"] == "conv-0000" and len(case["recorded"]["trace_ids"]) == 2
    assert [list(step)[0] for step in case["steps"]] == ["recorded", "recorded"]
    assert model.hits() == before


def test_the_production_alarm_rings_on_the_pass_rate_not_on_one_failed_conversation(tmp_path, recorded):
    """README's nightly job: one planted failure in 100 keeps a 98% alarm quiet (exit 0); a pass
    rate under a budget rings it (exit 1), the budget named."""
    folder = project(tmp_path, recorded, "genai-*.json")
    quiet = run_cli(["run", "specs", "--min-pass-rate", "0.98", "-o", "quiet.json"], cwd=folder)
    assert quiet.exit_code == 0, quiet.output
    alarm = [
        "run",
        "specs",
        "--min-pass-rate",
        "0.98",
        "--budget",
        "pass_rate_at_least=0.995",
        "-o",
        "a.json",
    ]
    rung = run_cli(alarm, cwd=folder)
    assert rung.exit_code == 1
    assert "FAILED budget pass_rate_at_least: pass rate 99.0%: needs at least 99.5%" in rung.output, (
        rung.output
    )


def test_a_nightly_window_and_folder_are_read_from_the_environment(tmp_path, recorded):
    """`${VAR}` works in a source as anywhere in the project file: a nightly job sets the day it grades."""
    write_project(tmp_path, sources={"prod": {"otlp": "${TRACES}/genai-1.json", "since": "${SINCE}"}})
    write_spec(tmp_path, "specs/refunds", SPEC)
    env = {"TRACES": str(recorded), "SINCE": "2000-01-01"}
    graded = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path, env=env)
    assert graded.exit_code == 0, graded.output
    assert results(tmp_path / "out.json")["summary"]["passed"] == 50
    later = run_cli(["run", "specs", "-o", "out.json"], cwd=tmp_path, env={**env, "SINCE": "2999-01-01"})
    assert later.exit_code == 2 and "the sources' since, until" in later.output, later.output
    unset = run_cli(
        ["run", "specs", "-o", "out.json"], cwd=tmp_path, env={"TRACES": str(recorded), "SINCE": None}
    )
    assert unset.exit_code == 2
    assert "specengine.yaml:4:12: source 'prod': environment variable SINCE not set" in unset.output, (
        unset.output
    )
    checked = run_cli(["validate", "specs"], cwd=tmp_path, env={"TRACES": None, "SINCE": "not a date"})
    assert checked.exit_code == 1
    assert "specengine.yaml:4:12: since must be a date or a time" in checked.output, checked.output
    assert "specengine.yaml:3:11: warning: ${TRACES} is not set here" in checked.output


def test_a_run_of_recorded_conversations_only_starts_no_app_under_test(tmp_path, recorded, model):
    """The project's `web_server` starts the agent for runs that send; a nightly run over a source
    sends nothing, so it neither starts the app nor waits for it (in CI it may not even start)."""
    folder = project(tmp_path, recorded, "openinference.json", model)
    data = yaml.safe_load((folder / "specengine.yaml").read_text(encoding="utf-8"))
    data["web_server"] = {"command": "echo started > started.txt; exit 3", "url": model.url, "timeout": 5}
    data["web_server"]["reuse_existing"] = False
    (folder / "specengine.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    assert run.exit_code == 1, run.output  # the planted failure, graded
    assert not (folder / "started.txt").exists()
    write_spec(folder, "specs/live", "evals:\n  - name: hello\n    send: hi\n    expect: [succeeded]\n")
    live = run_cli(["run", "specs/live.yaml", "-o", "live.json"], cwd=folder)
    assert live.exit_code == 2 and "exited with code 3" in live.output, (
        live.output
    )  # a run that sends starts it
    assert (folder / "started.txt").exists()


def test_traces_spilled_in_small_batches_make_the_same_conversations_and_are_read_once(recorded, monkeypatch):
    """A trace whose spans are spilled to the store in several fragments is put back together; a
    second pass over the same files reads the conversations kept, not the files."""
    from specengine.source.sources import source_config
    from specengine.traces import read

    config = source_config("prod", {"otlp": "genai-*.json", "sample": 0.5})
    whole = list(read.conversations(config, recorded))
    monkeypatch.setattr(read, "FLUSH_SPANS", 3)
    monkeypatch.setattr(read, "_read", {})
    lines_read = []
    monkeypatch.setattr(
        read, "read_file", lambda *given: (lines_read.append(given[0]), *read_file(*given))[1:]
    )
    spilled = list(read.conversations(config, recorded))
    assert spilled == whole and 30 < len(whole) < 70
    assert len(lines_read) == 2
    assert list(read.conversations(config, recorded)) == whole and len(lines_read) == 2


def test_a_temporary_folder_that_cannot_hold_the_traces_stops_the_run_saying_so(
    tmp_path, recorded, monkeypatch
):
    import tempfile

    folder = project(tmp_path, recorded, "openinference.json")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    run = run_cli(["run", "specs"], cwd=folder)
    assert run.exit_code == 2
    assert "source 'prod': its traces could not be kept on disk while read (FileNotFoundError:" in run.output
    assert f"point TMPDIR at a folder with room (now {tmp_path / 'missing'})" in run.output


def test_mistakes_are_located_before_anything_is_read(tmp_path):
    write_project(
        tmp_path,
        endpoints={"support": {"protocol": "openai-chat", "url": "http://127.0.0.1:9/v1"}},
        sources={"prod": {"otlp": "traces/*.json", "sample": 2}},
    )
    write_spec(
        tmp_path,
        "specs/refunds",
        """
        evals:
          - name: refunds
            source: prdo
            expect: [succeeded]
          - name: both
            source: prod
            send: hi
          - name: scripted
            endpoint: support
            send: hi
            expect:
              - includes: "{{ trace.first_user_message }}"
          - name: names
            source: prod
            expect:
              - includes: "{{ trace.user_messages[0] }} {{ trace.attributes.tier }}"
              - includes: "{{ trace.last_user_mesage }}"
              - includes: "{{ trace.foo }}"
        """,
    )
    run = run_cli(["validate", "specs"], cwd=tmp_path)
    assert run.exit_code != 0
    assert "trace.attributes) - did you mean 'last_user_message'?" in run.output
    assert "refunds.yaml:18:19: includes: trace has no 'foo' (a recorded conversation has id," in run.output
    assert run.output.count("trace has no") == 2  # user_messages[0], attributes.tier: known
    assert (
        "specs/refunds.yaml:12:19: includes: undefined variable 'trace'; known here: expected, input,"
        " metadata, reply, session_id, tool_calls, turn (trace is a recorded conversation, known only in"
        " the checks of an eval with source: NAME; read the case's own values from input or expected here)"
    ) in run.output
    assert "specs/refunds.yaml:3:13: unknown source 'prdo' - did you mean 'prod'?" in run.output
    assert (
        "sends nothing: it has no send, turns, replay, simulate, dataset or endpoint; remove them"
        in run.output
    )
    assert "specengine.yaml:10:13: sample must be a fraction in (0, 1], e.g. 0.1 (got 2)" in run.output


def test_the_case_page_links_each_trace_and_freezes_the_conversation(tmp_path, recorded, model):
    from support.app_server import AppServer

    folder = project(tmp_path, recorded, "openinference.json", model)
    assert run_cli(["run", "specs"], cwd=folder).exit_code == 1
    case_id = "specs/refunds.yaml::refunds the order asked for[conv-0009]"
    with AppServer(folder) as app:
        run_id = app.client.get("/api/runs").json()["runs"][0]["run_id"]
        page = app.client.get(f"/runs/{run_id}/case", params={"id": case_id}).text
        assert 'id="recorded">conversation <span class="mono">conv-0009</span> of source prod' in page
        assert page.count('<a class="mono trace" href="http://jaeger.test/trace/') == 2
        returned = '<div class="fn result">returned</div><pre class="result">{\n  &#34;refunded&#34;: '
        returned += "&#34;ORD-0009&#34;\n}</pre>"
        assert returned in page  # what the tool returned, as recorded
        frozen = app.client.post(
            f"/runs/{run_id}/freeze",
            data={"case": case_id},
            headers={"Origin": app.url},
            follow_redirects=True,
        )
        assert frozen.status_code == 200 and 'id="frozen"' in frozen.text, frozen.text
        assert "<code>frozen/refunds-refunds-the-order-asked-for-conv-0009.yaml</code>" in frozen.text
    before = model.hits()
    assert run_cli(["run", "specs", "-o", "again.json"], cwd=folder).exit_code == 1
    assert model.hits() == before  # the frozen spec is not among the source's: nothing was sent
    live = run_cli(["run", "frozen", "-o", "live.json"], cwd=folder)
    assert live.exit_code == 1 and model.hits() > before, live.output  # it fails against the live agent


def test_shards_split_a_source_by_conversation_decode_only_their_own_and_merge_into_the_whole(
    tmp_path, recorded, monkeypatch
):
    from specengine.sharding import shard_of
    from specengine.source.sources import source_config
    from specengine.traces import maker, read
    from specengine.traces.model import Conversation, Elsewhere

    decoded: list[str] = []
    decode = maker._decoded
    monkeypatch.setattr(maker, "_decoded", lambda *given: (decoded.append(given[-1]), decode(*given))[1])
    monkeypatch.setattr(read, "_read", {})
    items = list(read.conversations(source_config("prod", {"otlp": "genai-*.json"}), recorded, (1, 3)))
    mine = {item.key for item in items if isinstance(item, Conversation)}
    others = {item.key for item in items if isinstance(item, Elsewhere)}
    assert len(mine) + len(others) == 100 and 15 < len(mine) < 50
    assert set(decoded) == mine  # the other shards' spans were never decoded
    assert {shard_of(key, 3) for key in mine} == {1} and 1 not in {shard_of(key, 3) for key in others}

    folder = project(tmp_path, recorded, "genai-*.json")
    shards = []
    for index in (1, 2, 3):
        run = run_cli(["run", "specs", "--shard", f"{index}/3", "-o", f"s{index}.json"], cwd=folder)
        assert run.exit_code in (0, 1), run.output
        shards.append(results(folder / f"s{index}.json"))
    rows = [case["row"] for data in shards for case in data["cases"]]
    assert len(rows) == len(set(rows)) == 100  # every conversation graded once, in one shard
    assert {case["row"] for case in shards[0]["cases"]} == mine
    assert len({data["shard"]["plan_hash"] for data in shards}) == 1
    merged = run_cli(["merge", "s1.json", "s2.json", "s3.json", "--output", "all.json"], cwd=folder)
    assert merged.exit_code == 0, merged.output
    whole = results(folder / "all.json")
    assert whole["summary"]["passed"] == 99 and whole["summary"]["failed"] == 1
    assert whole["selection"]["plan_cases"] == whole["selection"]["selected_cases"] == 100
    assert "shard" not in whole["selection"]


def test_a_helper_process_makes_most_conversations_and_they_are_the_same(recorded, monkeypatch):
    """A large source's conversations are made partly here, mostly by a second process: the same
    conversations, in the same order, with a sample and a shard alike; and the same again when the
    helper is late (the run makes what has not come yet itself)."""
    from specengine.source.sources import source_config
    from specengine.traces import maker, read

    config = source_config("prod", {"otlp": "genai-*.json", "sample": 0.8})
    helped: list[object] = []
    take, poll = maker.Helper.take, maker.select.poll

    def counted(helper: maker.Helper) -> object:
        helped.append(made := take(helper))
        return made

    class Waiting:
        """The helper's pipe, polled as the run does, with a machine as slow as the test says."""

        def __init__(self) -> None:
            self.pipe = poll()

        def register(self, *given: Any) -> None:
            self.pipe.register(*given)

        def poll(self, timeout: float) -> object:
            if len(helped) < skipped:  # not sent yet: made here, and the helper's copy let go later
                return []
            return self.pipe.poll(None)  # waited for: all it sends, to its end

    for shard, skipped in ((None, 0), ((2, 3), 0), (None, 3)):
        helped.clear()
        monkeypatch.setattr(read, "_read", {})
        alone = list(read.conversations(config, recorded, shard))
        monkeypatch.setattr(read, "_read", {})
        monkeypatch.setattr(maker, "HELPER_FROM", 1)
        monkeypatch.setattr(maker.os, "cpu_count", lambda: 2)
        monkeypatch.setattr(maker.Helper, "take", counted)
        monkeypatch.setattr(maker, "select", SimpleNamespace(poll=Waiting, POLLIN=select.POLLIN))
        together = list(read.conversations(config, recorded, shard))
        monkeypatch.undo()
        assert together == alone and len(alone) > 20
        assert len(helped) > 5  # two conversations in three were the helper's
        assert helped.count(None) == skipped  # and it made all but those it had not sent in time


def test_a_source_that_matches_no_file_or_keeps_no_conversation_stops_the_run_saying_why(tmp_path, recorded):
    folder = project(tmp_path, recorded, "genia-*.json")
    run = run_cli(["run", "specs", "-o", "out.json"], cwd=folder)
    assert run.exit_code == 2 and not (folder / "out.json").exists()
    assert f"error: source 'prod': otlp: {recorded / 'genia-*.json'} matches no file in" in run.stderr
    write_project(folder, sources={"prod": {"otlp": str(recorded / "genai-*.json"), "since": "2999-01-01"}})
    run = run_cli(["run", "specs"], cwd=folder)
    assert run.exit_code == 2
    assert "the sources' since, until, sample and limit and the evals' source filters left no" in run.stderr
    write_project(
        folder, sources={"prod": {"otpl": "traces/*.json", "since": "yesterday", "until": "2020-01-01"}}
    )
    run = run_cli(["validate", "specs"], cwd=folder)
    assert "unknown key 'otpl' in source 'prod' - did you mean 'otlp'?" in run.output
    assert (
        'specengine.yaml:4:12: since must be a date or a time ("2026-12-01", "2026-12-01T08:00:00Z"),'
        " not 'yesterday'" in run.output
    )
    write_project(
        folder, sources={"prod": {"otlp": "t/*.json", "since": "2026-12-08", "until": "2026-12-01"}}
    )
    run = run_cli(["validate", "specs"], cwd=folder)
    assert "until must be later than since, or no conversation is kept (got '2026-12-01')" in run.output


def test_the_trace_names_validate_knows_are_the_names_a_recorded_case_fills():
    from specengine.compile.recorded import trace_variables
    from specengine.templates import TRACE_NAMES
    from specengine.traces.model import Conversation

    conversation = Conversation("conv-1", "prod", "traces/a.json", ("ab",), ())
    assert tuple(trace_variables(conversation, None)) == TRACE_NAMES
