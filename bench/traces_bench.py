"""How fast `specengine run` grades recorded conversations, and in how much memory.

Writes N conversations in the GenAI conventions' attribute form (8 spans each: per user message an
`invoke_agent`, two `chat` spans and an `execute_tool`) as OTLP JSON lines, the shape
opentelemetry-instrumentation-openai-v2 records (tests/test_run_traces.py reads the real thing),
then runs `specengine run` over them with deterministic checks in a child process and prints the
wall time, the child's CPU time (user + sys, the helper process's included) and peak memory, and
the load average.

    python bench/traces_bench.py --conversations 125000   # 1,000,000 spans
    python bench/traces_bench.py --conversations 125000 --shard 1/4

Reading is streamed: a file is read a line at a time, each span read only for its trace id, start
and conversation id and kept as written in an SQLite file on disk until every file is read; the
conversations are then decoded and made one at a time (two in three by a helper process when the
machine has a second core) and kept in a second file for the plan's second pass, so memory stays
flat and the source is read once. Measured on the project's 2 cores shared with other engineers'
work, before (952576a: every span decoded as read, pickled parts, a query per conversation) and
after, one run after the other in one sitting; wall time, CPU time, peak memory (load average):

    conversations  spans      before                                after
    20,000         160,000    15.6 s, 13.0 s CPU, 122 MB (4.3)      12.7 s, 12.2 s CPU, 130 MB (4.3)
    125,000        1,000,000  96.2 s, 76.5 s CPU, 127 MB (3.4)      66.8 s, 72.1 s CPU, 133 MB (2.5)
      --shard 1/4  1,000,000  73.0 s, 50.1 s CPU, 125 MB (4.3)      37.0 s, 28.4 s CPU, 124 MB (3.9)
      --shard 1/4  160,000                                          5.8 s, 4.9 s CPU, 124 MB (4.1)

At 1,000,000 spans the run's own process took 58.9 s of CPU and the helper 13.2 s; in a second
sitting (after a rebase) 60.2 s and 13.1 s, 73.5 s of wall time at a load of 2.7, where the code
before took 104.5 s and 77.3 s of CPU at a load of 4.0. With a second core free the wall time
would be about the run's own CPU time, a minute (not measured: the machine was never idle). Run
as above with 125,000 conversations, at a load of 5.1, this script printed 109.6 s (74.9 s of
CPU), peak memory 134 MB. A shard still reads every file, but decodes and grades only its own
conversations: a quarter of the source took 39% of the whole run's CPU time. The helper's own peak
memory is 24 MB beside the run's 130 MB, at 160,000 spans as at 1,000,000 (ru_maxrss of
RUSAGE_CHILDREN counts the pages a forked child shares with the run before it starts Python).
Before the store (every trace in memory), 20,000 conversations took 33.7 s of CPU and 416 MB.

On a quiet machine (load average about 1), where wall time is about the run's own CPU time, the
grading of each case was then the larger part: at 1,000,000 spans 37.7 s of the run's 60.3 s
(73.1 s of CPU). Profiled at 20,000 conversations, the run's own process spent its time writing
each case's definitions and fingerprints (20%: a check whose YAML reads the trace is rendered and
written as YAML for every case), grading (19%), making its share of the conversations (14%),
writing the results (11%, more than half of it reading each written case twice and building its
trials and checks to count latencies and judge scores), reading the files (9%) and compiling the
cases, once to count them and once to run them (8%). The results writer now reads each written case once and
counts its cell's latencies and judge scores off the file's lists; then whether a check's
definition reads the row is found once per check. Back to back, medians of three (four) runs:

    conversations  spans      before                        after
    20,000         160,000    12.2 s, 12.4 s CPU (2.6-2.9)  11.5 s, 11.7 s CPU (2.8-3.2)   writer
    20,000         160,000    10.0 s, 12.1 s CPU (0.3-1.0)  9.8 s, 11.9 s CPU (0.5-1.1)    definitions
    125,000        1,000,000  60.3 s, 73.1 s CPU, 134 MB    57.2 s, 70.2 s CPU, 134 MB     both, one run
                              (1.2)                         each (0.8)

At 1,000,000 spans the grading took 34.3 s, not 37.7 s; the rest is the reading and making (about
23 s, the helper's share beside it), which these changes leave as they were.

Run to run, the 1,000,000-span figure moves by a few seconds at rest: the same code as the table's
"after" printed 59.5 s (73.1 s CPU) an hour later, and main with the later, unrelated merges 59.5,
62.4 and 63.6 s (71.8 to 77.1 s CPU, load 1.1; profiled at 5,000 conversations, nothing those
merges changed is on a run's path). So a million spans took about a minute on 2 idle cores.

The largest part of the grading was then this bench's first check: it reads the recording
(`{{ trace.last_user_message }}`), so its definition was rendered and written as YAML for every
case. A template that reads the recording now stays as written in the definition, as one reading
the reply does (results/definition.py: the recording is the agent's doing and never changes between
runs of its case), so the text is written once for the source. At 1,000,000 spans, at rest (load
0.5): 60.1 s, 73.2 s CPU before, the grading 36.8 s of it; after, the grading 24.0 s and 60.1 s of
CPU in all, 47.1 and 47.8 s of wall time at rest (the "before" of the table below).

Reading the files was then one core's work while the other idled (about 8 s a million spans, before
anything is graded). A source of 32 MB or more is now read by two processes, the second reading the
second half of its bytes into a file of its own that the run appends (traces/halves.py), each
holding 10,000 spans before spilling them. Back to back with main (716e6bb) before, at rest:

    conversations  spans      before                         after                          load
    125,000        1,000,000  47.1 s, 61.4 s CPU, 131 MB     43.7 s, 61.0 s CPU, 131 MB     1.1-1.3
                              47.8 s, 62.6 s CPU, 130 MB     44.3 s, 61.8 s CPU, 130 MB
      --shard 1/4  1,000,000  21.1 s, 25.8 s CPU, 123 MB     17.7 s, 25.7 s CPU, 97 MB      1.1
    20,000         160,000    8.3 s, 10.8 s CPU, 128 MB      8.0 s, 11.1 s CPU, 128 MB      1.1

Reading and grouping alone (to the first conversation, over the same 1,000,000 spans, three runs
each, load 0.9 to 1.1) took 8.2 to 9.2 s on one core and 5.1 to 5.2 s on two: the run's process
5.0 s of CPU (its half, then appending the other's file of about 500 MB and grouping), the second reader
3.7 s, peaking at 68 MB; the run's own peak while reading fell from 104 to 77 MB. On a busy machine
(load 2.3 to 4, other engineers' work on the second core) the change is lost in the noise: before
58.2 to 89.3 s, after 53.6 to 86.8 s, over six pairs of runs while it was written.

With all of it (7bbd2b2: a conversation's size now summed in the grouping, to refuse one larger
than 32 MB), this script printed at rest (load 1.2): 44.2 s, 61.7 s of CPU, peak memory 131 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """
evals:
  - name: refunds the order asked for
    source: prod
    expect:
      - called_tool_with: {name: issue_refund, args: {order_id: "{{ trace.last_user_message.split()[-1] }}"}}
      - latency_below: 30
"""


def attribute(key: str, value: object) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def span(trace: str, number: int, parent: int | None, name: str, start: int, attributes: dict) -> dict:
    out = {
        "traceId": trace,
        "spanId": f"{number:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 5_000_000),
        "attributes": [attribute(key, value) for key, value in attributes.items()],
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def conversation_spans(index: int) -> list[dict]:
    order = f"ORD-{index:06d}"
    spans = []
    history: list[dict] = []
    start = 1_796_000_000_000_000_000 + index * 1_000_000_000
    for turn, (message, tool) in enumerate(
        ((f"Where is my order {order}?", "lookup_order"), (f"Please refund order {order}", "issue_refund"))
    ):
        trace = f"{index:024x}{turn:08x}"
        base = index * 16 + turn * 8
        history.append(text("user", message))
        call = {"type": "tool_call", "id": f"call_{turn}", "name": tool, "arguments": {"order_id": order}}
        answer = f"Done with {order}."
        common = {
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 100,
            "gen_ai.usage.output_tokens": 10,
        }
        spans.append(
            span(
                trace,
                base + 1,
                base,
                "chat",
                start,
                {
                    **common,
                    "gen_ai.input.messages": list(history),
                    "gen_ai.output.messages": [{"role": "assistant", "parts": [call]}],
                },
            )
        )
        spans.append(
            span(
                trace,
                base + 2,
                base,
                f"execute_tool {tool}",
                start + 1,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call_{turn}",
                    "gen_ai.tool.call.arguments": {"order_id": order},
                    "gen_ai.tool.call.result": {"ok": True},
                },
            )
        )
        history += [
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": f"call_{turn}", "response": {"ok": True}}],
            },
        ]
        spans.append(
            span(
                trace,
                base + 3,
                base,
                "chat",
                start + 2,
                {
                    **common,
                    "gen_ai.input.messages": list(history),
                    "gen_ai.output.messages": [text("assistant", answer)],
                },
            )
        )
        history.append(text("assistant", answer))
        spans.append(
            span(
                trace,
                base,
                None,
                "invoke_agent support",
                start,
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "support",
                    "gen_ai.conversation.id": f"conv-{index:06d}",
                },
            )
        )
        start += 100_000_000
    return spans


def write_traces(folder: Path, count: int, per_line: int = 100) -> int:
    written = 0
    with (folder / "traces.json").open("w", encoding="utf-8") as out:
        batch: list[dict] = []
        for index in range(count):
            batch.extend(conversation_spans(index))
            if len(batch) >= per_line:
                out.write(
                    json.dumps(
                        {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": batch}]}]}
                    )
                    + "\n"
                )
                written += len(batch)
                batch = []
        if batch:
            out.write(
                json.dumps(
                    {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": batch}]}]}
                )
                + "\n"
            )
            written += len(batch)
    return written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--shard", help="i/n: grade one shard of the conversations, as a CI job would")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        spans = write_traces(folder, args.conversations)
        (folder / "specengine.yaml").write_text(
            "sources:\n  prod:\n    otlp: traces.json\n", encoding="utf-8"
        )
        (folder / "spec.yaml").write_text(SPEC, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        started = time.perf_counter()
        shard = ["--shard", args.shard] if args.shard else []
        done = subprocess.run(
            [sys.executable, "-m", "specengine", "run", "spec.yaml", "-o", "out.json", *shard],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - started
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mb = child.ru_maxrss / 1024
        cpu = child.ru_utime + child.ru_stime
        print(done.stdout.strip().splitlines()[-2] if done.stdout.strip() else done.stderr[-500:])
        which = f" (shard {args.shard})" if args.shard else ""
        print(
            f"{spans:,} spans, {args.conversations:,} conversations{which}: {took:.1f} s"
            f" ({cpu:.1f} s of CPU, the helper process's included), peak memory {peak_mb:.0f} MB,"
            f" load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
