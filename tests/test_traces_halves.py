"""A large OTLP source read by two processes (`traces/halves.py`): the same results file as one
process reading it all, the lines that cannot be read reported with their file and line in file
order, and the same again when the second reader cannot start or dies; the child processes (second
reader and helper, `traces/maker.py`) reaped when they end early, and their files and pipes reached
wherever the temporary folder or the descriptor is."""

from __future__ import annotations

import fcntl
import io
import json
import marshal
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.cli import run_cli, write_project, write_spec
from support.traced_agent import ScriptedModel, conversations, record

from specengine.source.sources import source_config
from specengine.traces import halves, maker, read
from specengine.traces.halves import Part, SecondReader
from specengine.traces.model import Elsewhere, Unreadable
from specengine.traces.store import Fragments, TraceStore, made_row, unreadable

pytest.importorskip("opentelemetry.instrumentation.openai_v2")

SPEC = """
evals:
  - name: refunds the order asked for
    source: prod
    expect:
      - called_tool_with:
          name: issue_refund
          args: {order_id: "{{ trace.last_user_message.split()[-1] }}"}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """20 conversations recorded by openai-v2 (5 spans a line), with a line that is not JSON near
    the start and one that is not OTLP near the end: one in each half."""
    folder = tmp_path_factory.mktemp("recorded")
    with ScriptedModel() as model:
        record("genai", model, folder / "raw.json", conversations(20, bug_every=10), batch=5)
    lines = (folder / "raw.json").read_bytes().splitlines(keepends=True)
    assert len(lines) > 20
    lines[1:1] = [b"not json\n"]
    lines[-2:-2] = [b'{"resource": "not OTLP"}\n']
    (folder / "traces.json").write_bytes(b"".join(lines))
    return folder / "traces.json"


@pytest.fixture
def project(tmp_path, recorded, monkeypatch) -> Path:
    (tmp_path / "traces").mkdir()
    shutil.copy(recorded, tmp_path / "traces" / "traces.json")
    write_project(tmp_path, sources={"prod": {"otlp": "traces/*.json"}})
    write_spec(tmp_path, "specs/refunds", SPEC)
    monkeypatch.setattr(halves, "second_core", lambda: True)
    return tmp_path


def graded(folder: Path, name: str, *shard: str) -> dict[str, Any]:
    """The CLI's results file over the project's source, without what differs from run to run."""
    run = run_cli(["run", "specs", "-o", name, *shard], cwd=folder)
    assert run.exit_code in (0, 1), run.output
    return timeless(json.loads((folder / name).read_text(encoding="utf-8")))


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: timeless(item) for key, item in value.items() if key not in _TIMES}
    if isinstance(value, list):
        return [timeless(item) for item in value]
    return value


_TIMES = {"run_id", "started_at", "duration_s"}  # what differs from run to run


def read_here(monkeypatch) -> list[list[Part]]:
    """The parts of the source this process reads, as they are read."""
    parts_read: list[list[Part]] = []
    parts = read._otlp_parts
    monkeypatch.setattr(
        read, "_otlp_parts", lambda given, *rest: (parts_read.append(given), parts(given, *rest))[1]
    )
    return parts_read


def test_a_large_source_read_by_two_processes_gives_the_results_of_one(project, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_FROM", 2**62)
    parts_read = read_here(monkeypatch)
    alone = graded(project, "alone.json")
    assert parts_read == [[Part(project / "traces" / "traces.json")]]
    rows = [case["row"] for case in alone["cases"]]
    lines = (project / "traces" / "traces.json").read_bytes().count(b"\n")
    assert rows[:2] == ["unreadable traces/traces.json:2", f"unreadable traces/traces.json:{lines - 2}"]
    assert alone["summary"]["passed"] == 18 and alone["summary"]["failed"] == 2
    shard = graded(project, "shard.json", "--shard", "2/3")

    monkeypatch.setattr(halves, "SPLIT_FROM", 1)
    parts_read.clear()
    decoy = project / "specengine" / "traces"  # a folder of that name where the run is started
    decoy.mkdir(parents=True)
    for name in ("../__init__.py", "__init__.py", "read.py"):
        (decoy / name).write_text("", encoding="utf-8")
    together = graded(project, "together.json")
    (first,) = parts_read  # the second half was read by the second reader
    assert first[0].end is not None and 0 < first[0].end < (project / "traces" / "traces.json").stat().st_size
    assert together == alone
    assert graded(project, "together-shard.json", "--shard", "2/3") == shard
    assert 0 < len(shard["cases"]) < len(alone["cases"])


def test_a_second_reader_that_fails_or_dies_leaves_its_half_to_this_process(project, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_FROM", 2**62)
    alone = graded(project, "alone.json")
    monkeypatch.setattr(halves, "SPLIT_FROM", 1)
    parts_read = read_here(monkeypatch)
    start = halves.start_python
    monkeypatch.setattr(halves, "start_python", lambda _, *given: start("specengine.traces.absent", *given))
    assert graded(project, "failed.json") == alone
    assert len(parts_read) == 2  # both halves read here, in order
    assert parts_read[0][-1].end == parts_read[1][0].start
    monkeypatch.setattr(halves, "start_python", lambda *given: None)  # no Python could be started
    parts_read.clear()
    assert graded(project, "unstarted.json") == alone and len(parts_read) == 2

    monkeypatch.undo()
    monkeypatch.setattr(halves, "second_core", lambda: True)
    monkeypatch.setattr(halves, "SPLIT_FROM", 1)
    parts_read = read_here(monkeypatch)
    begin = SecondReader.start

    def killed(*given: Any) -> SecondReader | None:
        reader = begin(*given)
        assert reader is not None and reader.process is not None
        reader.process.kill()
        return reader

    monkeypatch.setattr(SecondReader, "start", killed)
    assert graded(project, "died.json") == alone
    assert len(parts_read) == 2


def test_a_python_that_ends_before_taking_its_input_is_waited_for_and_none_started(monkeypatch):
    """A second process that ends before it has read what it is given (here it cannot import its
    module, and is given more than a pipe holds, so the write can only fail) is no second process:
    start_python reaps it and closes its pipes, and the caller reads its half itself."""
    started: list[subprocess.Popen[bytes]] = []

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen(*args, **kwargs))
        return started[-1]

    pipes = {"PIPE": subprocess.PIPE, "DEVNULL": subprocess.DEVNULL}
    monkeypatch.setattr(maker, "subprocess", SimpleNamespace(Popen=recorded, **pipes))
    assert maker.start_python("specengine.traces.absent", b"x" * 2**22, subprocess.PIPE) is None
    (child,) = started
    assert child.returncode is not None  # waited for: no process left behind
    assert child.stdin is not None and child.stdin.closed
    assert child.stdout is not None and child.stdout.closed


def test_a_helper_whose_pipe_is_a_descriptor_past_1023_is_read():
    """A run holding many connections and files gives the helper's pipe a high descriptor, which
    select() refuses (ValueError: filedescriptor out of range): the pipe is polled instead."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"no descriptor past 1023 can be opened here (at most {hard} files)")
    frame = marshal.dumps([made_row(Elsewhere("c1"))])
    sent = len(frame).to_bytes(4, "big") + frame
    process = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdout.buffer.write({sent!r})"], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    if soft != resource.RLIM_INFINITY and soft <= 1024:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1025, hard))
    try:
        high = fcntl.fcntl(process.stdout.fileno(), fcntl.F_DUPFD_CLOEXEC, 1024)  # the first free past 1023
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    process.stdout.close()
    process.stdout = open(high, "rb", buffering=0)  # noqa: SIM115 (the helper closes it)
    assert process.wait() == 0  # all it sends is in the pipe: nothing is left to chance
    helper = maker.Helper(process)
    assert helper.take() == [Elsewhere("c1")]
    helper.close()
    assert process.stdout.closed


def test_a_store_appends_only_a_finished_file_after_its_own_fragments(tmp_path):
    store = TraceStore()
    store.add_raw([("t1", "c1", 5, "a.json", [("span", {"n": 1})])])
    half = Fragments(tmp_path / "half.sqlite3")
    half.add_raw([("t1", None, 7, "a.json", [("span", {"n": 2})])])
    assert not store.append(tmp_path / "half.sqlite3")  # still being written (or its reader died)
    (tmp_path / "garbage.sqlite3").write_bytes(b"not a database" * 100)
    assert not store.append(tmp_path / "garbage.sqlite3")
    assert not store.append(tmp_path / "absent.sqlite3")
    half.finish()
    assert store.append(tmp_path / "half.sqlite3")
    store.group()
    ((key, _, _, fragments),) = store.conversations()
    assert key == "c1" and fragments is not None
    assert store.traces(fragments) == [("t1", "a.json", [("span", {"n": 1}), ("span", {"n": 2})])]
    store.close()


def test_a_temporary_folder_whose_name_holds_uri_characters_is_read_by_both_processes(tmp_path, monkeypatch):
    """The second reader's file and the store the helper process reads are opened by URI: a TMPDIR
    whose name holds `#`, `?` or `%` is still theirs (before, the URI ended at the `#`)."""
    folder = tmp_path / "runs #1?%41"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    store = TraceStore()
    assert store.folder.parent == folder
    half = Fragments(store.folder / "later.sqlite3")
    half.add_unreadable(Unreadable("traces.json", None, "not JSON", 2))
    half.finish()
    assert list(unreadable(store.folder / "later.sqlite3")) == [
        Unreadable("traces.json", None, "not JSON", 2)
    ]

    span = {"traceId": "01" * 16, "spanId": "02" * 8, "name": "chat", "startTimeUnixNano": "5"}
    store.add_raw([(f"{n:032x}", f"c{n}", n, "traces.json", [("span", span)]) for n in (1, 2, 3)])
    assert store.group() == 3
    sent = io.BytesIO()
    maker._serve(str(store.path), source_config("prod", {"otlp": "*.json"}), None, 2**20, sent)
    frames = sent.getvalue()  # two conversations in three are the helper's: c1 and c2, each a frame
    first = int.from_bytes(frames[:4], "big")
    assert len(frames) == 8 + first + int.from_bytes(frames[4 + first : 8 + first], "big")
    store.close()


def test_a_source_is_cut_where_a_line_or_a_file_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(halves, "SPLIT_FROM", 1)
    monkeypatch.setattr(halves, "second_core", lambda: True)
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_bytes(b"0123456789\n" * 2)  # 22 bytes
    b.write_bytes(b"x" * 30 + b"\n" + b"y\n")  # 33 bytes: the middle of a and b (27) is in its first line
    assert halves.halves([a, b]) == ([Part(a), Part(b, 0, 31)], [Part(b, 31)])
    c.write_bytes(b"z" * 22)
    assert halves.halves([a, c]) == ([Part(a)], [Part(c)])  # the middle is where c starts
    assert halves.halves([c]) is None  # one line
    assert halves.halves([a]) == ([Part(a, 0, 11)], [Part(a, 11)])
    monkeypatch.setattr(halves, "second_core", lambda: False)
    assert halves.halves([a, b]) is None
