"""Benchmark `specengine run`: wall time against the ideal, throughput, and memory with large datasets.

    python bench/run_bench.py [--cases 1000] [--concurrency 50] [--latency 0.05]

1. N cases at concurrency C against a local OpenAI-compatible server with a fixed latency: prints the
   wall time beside the ideal ceil(N/C)·latency and the CLI's start-up time (a 1-case run).
2. 10,000 and 100,000 dataset rows against a zero-latency server: prints peak RSS of each run, the
   growth between them, and cases per second.
Everything runs on 127.0.0.1; the CLI runs as a subprocess so its own start-up and memory count.
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(latency: float) -> tuple[subprocess.Popen, int]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_openai.py"), str(port), str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None and server.stdout.readline().strip() == "ready"
    return server, port


def write_suite(folder: Path, port: int, rows: int, concurrency: int) -> Path:
    (folder / "specengine.yaml").write_text(
        "endpoints:\n"
        f"  bench: {{protocol: openai-chat, url: 'http://127.0.0.1:{port}/v1/chat/completions',"
        f" model: bench, max_concurrency: {concurrency}}}\n"
        "defaults: {endpoint: bench}\n"
    )
    data = folder / "data"
    data.mkdir(exist_ok=True)
    with (data / "rows.csv").open("w") as out:
        out.write("id,city,expected.weather\n")
        for i in range(rows):
            out.write(f"r{i},Paris,Sunny\n")
    spec = folder / "bench.yaml"
    spec.write_text(
        "dataset: data/rows.csv\n"
        "evals:\n"
        "  - name: weather\n"
        '    send: "What\'s the weather in {{ input.city }}?"\n'
        "    expect:\n"
        "      - succeeded\n"
        '      - includes: "{{ expected.weather }}"\n'
        '      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}\n'
    )
    return spec


def run_cli(folder: Path, *args: str) -> tuple[float, int, int]:
    """(wall seconds, peak RSS in MB, exit code) of one `specengine run`."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "specengine", "run", "bench.yaml", "--output", "out.json", *args],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        print(process.stderr.read().decode() if process.stderr else "", file=sys.stderr)
    return wall, usage.ru_maxrss // 1024, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rows", type=int, nargs="*", default=[10_000, 100_000])
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, port = start_server(options.latency)
        try:
            write_suite(folder, port, 1, options.concurrency)
            startup, _, _ = run_cli(folder, "-j", "1")
            write_suite(folder, port, options.cases, options.concurrency)
            wall, rss, code = run_cli(folder, "-j", str(options.concurrency))
        finally:
            server.terminate()
        ideal = math.ceil(options.cases / options.concurrency) * options.latency
        latency_ms = options.latency * 1000
        print(f"latency run: {options.cases} cases, concurrency {options.concurrency}, {latency_ms:g} ms")
        print(f"  wall {wall:.2f} s   ideal {ideal:.2f} s   start-up (1 case) {startup:.2f} s   exit {code}")
        print(f"  wall / (ideal + start-up) = {wall / (ideal + startup):.2f}   peak RSS {rss} MB")

        server, port = start_server(0.0)
        try:
            measured = []
            for rows in options.rows:
                write_suite(folder, port, rows, options.concurrency)
                wall, rss, code = run_cli(folder, "-j", str(options.concurrency))
                measured.append((rows, wall, rss))
                steady = rows / max(wall - startup, 1e-9)
                print(
                    f"zero-latency run: {rows} rows  wall {wall:.2f} s  {rows / wall:,.0f} cases/s"
                    f" ({steady:,.0f}/s after start-up)  peak RSS {rss} MB  exit {code}"
                )
        finally:
            server.terminate()
        if len(measured) >= 2:
            (small, _, small_rss), (large, _, large_rss) = measured[0], measured[-1]
            print(f"  RSS growth {small:,} -> {large:,} rows: {large_rss - small_rss} MB")


if __name__ == "__main__":
    main()
