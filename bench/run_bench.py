"""specengine beside a bare aiohttp loop: the same requests, the same mock, one sitting, ratios printed.

    python bench/run_bench.py [--repeat 3] [--cases N --latency-ms MS] [--concurrency 50]
                              [--only rows startup plan memory judge]

Every workload starts bench/fake_openai.py (a tiny OpenAI-compatible server) on a free 127.0.0.1
port and runs each contender as a subprocess, so interpreter start-up, imports and memory count:

- specengine: `specengine run` of a dataset spec (one case per row: one chat completion, three
  checks), results written to a file as usual.
- aiohttp: bench/raw_clients.py, a bare loop of the same requests on one aiohttp.ClientSession.

Workloads (names for --only; the default is rows):
- rows:       each row N cases at concurrency 50 against an agent answering in MS, specengine
              beside the aiohttp loop; by default three rows: 1,000 cases at 500 ms (an LLM agent),
              1,000 at 50 ms (a fast one) and 10,000 at 0 ms (none: what the engine itself costs).
              --cases and --latency-ms give one row of your own instead.
- startup:    one case, 50 ms; beside `python -c pass` and the aiohttp loop.
- plan:       `specengine plan` of 100,000 rows: wall and peak memory.
- memory:     `specengine run` of 100,000 rows, concurrency 50, 0 ms: wall and peak memory.
- judge:      10,000 judged cases run once, then `specengine regrade` with the judge cache warm:
              requests the regrade made (must be 0) and its wall.

The machine may be shared: each row runs --repeat times, the contenders back to back, and every
ratio is taken within one repetition; each figure shows its range and median.

specengine's bytecode is written first, as installing the package does (the aiohttp loop's aiohttp
has its own from its install): a checkout run with PYTHONDONTWRITEBYTECODE set would otherwise
compile every module at every start.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = ("rows", "startup", "plan", "memory", "judge")
DEFAULT_ROWS = ((1000, 500.0), (1000, 50.0), (10_000, 0.0))  # (cases, latency in ms)


@dataclass(frozen=True)
class Measure:
    """One subprocess: wall, user and system CPU seconds, peak RSS in MB, exit code, and what it
    printed on stderr.

    CPU time (user + system) is steadier than wall time on a shared machine.
    """

    wall: float
    user: float
    system: float
    rss_mb: int
    code: int
    stderr: str = ""

    @property
    def cpu(self) -> float:
        return self.user + self.system


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def mock_server(latency: float) -> Iterator[str]:
    """The mock's base URL (http://127.0.0.1:PORT) while it runs."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(HERE / "fake_openai.py"), str(port), str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def posts_served(base: str) -> int:
    with urllib.request.urlopen(f"{base}/count") as answer:
        return int(answer.read())


def measure(command: Sequence[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Measure:
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace")  # small: the CLI prints little there
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    return Measure(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss // 1024, code, stderr)


def write_suite(folder: Path, base: str, rows: int, concurrency: int, judged: bool = False) -> None:
    judge = f"judge: {{model: bench-judge, base_url: '{base}/v1', max_concurrency: 8}}\n" if judged else ""
    (folder / "specengine.yaml").write_text(
        "endpoints:\n"
        f"  bench: {{protocol: openai-chat, url: '{base}/v1/chat/completions',"
        f" model: bench, max_concurrency: {concurrency}}}\n"
        f"defaults: {{endpoint: bench}}\n{judge}"
    )
    data = folder / "data"
    data.mkdir(exist_ok=True)
    with (data / "rows.csv").open("w") as out:
        out.write("id,city,expected.weather\n")
        for i in range(rows):  # a judged run needs distinct questions, or the judge cache answers all
            out.write(f"r{i},{f'Paris {i}' if judged else 'Paris'},Sunny\n")
    checks = (
        "      - {judge: closed_qa, criteria: 'Does it give the weather in {{ input.city }}?'}\n"
        if judged
        else '      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}\n'
    )
    (folder / "bench.yaml").write_text(
        "dataset: data/rows.csv\n"
        "evals:\n"
        "  - name: weather\n"
        '    send: "What\'s the weather in {{ input.city }}?"\n'
        "    expect:\n"
        "      - succeeded\n"
        '      - includes: "{{ expected.weather }}"\n' + checks
    )


def specengine(folder: Path, *args: str, env: dict[str, str] | None = None) -> Measure:
    result = measure([sys.executable, "-m", "specengine", *args], cwd=folder, env=env)
    if result.code not in (0, 1):
        print(result.stderr, file=sys.stderr)
    return result


def run_duration(folder: Path) -> float:
    """The run's own duration as its results file states it (start-up and compilation excluded).

    Only the file's head is read: this process must stay small, because a child's peak memory as
    the kernel reports it starts from the size of the process that forked it.
    """
    with (folder / "out.json").open(encoding="utf-8") as results:
        head = results.read(8192)
    start = head.index('"summary": ') + len('"summary": ')
    summary, _ = json.JSONDecoder().raw_decode(head, start)
    return float(summary["duration_s"])


def raw(client: str, base: str, cases: int, concurrency: int) -> Measure:
    url = f"{base}/v1/chat/completions"
    script = str(HERE / "raw_clients.py")
    return measure([sys.executable, script, client, url, str(cases), str(concurrency)])


def span(values: Sequence[float], digits: int = 2, unit: str = "") -> str:
    """The range of `values`, and their median when there are three or more: on a shared machine
    one slow repetition stretches the range, the median shows where most of them fell."""
    low, high = min(values), max(values)
    if round(low, digits) == round(high, digits):
        return f"{low:.{digits}f}{unit}"
    shown = f"{low:.{digits}f}–{high:.{digits}f}{unit}"
    if len(values) >= 3:
        shown += f" (median {statistics.median(values):.{digits}f}{unit})"
    return shown


def contest(folder: Path, cases: int, concurrency: int, latency: float, repeat: int) -> None:
    """specengine and the aiohttp loop back to back, `repeat` times."""
    rows: dict[str, list[float]] = {}
    with mock_server(latency) as base:
        write_suite(folder, base, cases, concurrency)
        for _ in range(repeat):
            mine = specengine(folder, "run", "bench.yaml", "--output", "out.json", "-j", str(concurrency))
            aiohttp = raw("aiohttp", base, cases, concurrency)
            rows.setdefault("specengine wall", []).append(mine.wall)
            rows.setdefault("specengine run", []).append(run_duration(folder))
            rows.setdefault("specengine peak MB", []).append(mine.rss_mb)
            rows.setdefault("aiohttp loop wall", []).append(aiohttp.wall)
            rows.setdefault("specengine / aiohttp", []).append(mine.wall / aiohttp.wall)
            rows.setdefault("specengine CPU", []).append(mine.cpu)
            rows.setdefault("specengine CPU ms/case", []).append(mine.cpu * 1000 / cases)
            rows.setdefault("aiohttp loop CPU", []).append(aiohttp.cpu)
            rows.setdefault("specengine / aiohttp CPU", []).append(mine.cpu / aiohttp.cpu)
    ideal = math.ceil(cases / concurrency) * latency
    print(f"\n{cases:,} cases, concurrency {concurrency}, {latency * 1000:g} ms per reply", end="")
    print(f" (ideal {ideal:.2f} s)" if latency else "")
    for name, values in rows.items():
        unit = "" if "/" in name or "MB" in name else " s"
        print(f"  {name:25s} {span(values, 0 if 'MB' in name else 2, unit)}")


def startup(folder: Path, repeat: int) -> None:
    walls: dict[str, list[float]] = {}
    with mock_server(0.05) as base:
        write_suite(folder, base, 1, 1)
        for _ in range(repeat):
            walls.setdefault("specengine run, 1 case", []).append(
                specengine(folder, "run", "bench.yaml", "--output", "out.json").wall
            )
            walls.setdefault("aiohttp loop, 1 case", []).append(raw("aiohttp", base, 1, 1).wall)
            walls.setdefault("python -c pass", []).append(measure([sys.executable, "-c", "pass"]).wall)
            walls.setdefault("specengine --help", []).append(specengine(folder, "--help").wall)
    print("\nstart-up: one case against a 50 ms agent")
    for name, values in walls.items():
        print(f"  {name:25s} {span(values, unit=' s')}")


def big(folder: Path, rows: int, repeat: int, command: str) -> None:
    results: list[Measure] = []
    with mock_server(0.0) as base:
        write_suite(folder, base, rows, 50)
        for _ in range(repeat):
            if command == "plan":
                results.append(specengine(folder, "plan", "bench.yaml"))
            else:
                results.append(specengine(folder, "run", "bench.yaml", "--output", "out.json", "-j", "50"))
    walls = [result.wall for result in results]
    peaks = [float(result.rss_mb) for result in results]
    wall, peak = span(walls, unit=" s"), span(peaks, 0, " MB")
    print(f"\n`specengine {command}` of {rows:,} rows: wall {wall}, peak {peak}")


def judged(folder: Path, cases: int, repeat: int) -> None:
    with mock_server(0.0) as base:
        write_suite(folder, base, cases, 50, judged=True)
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench-key-0123456789abcdef"}  # redacted in results
        first = specengine(folder, "run", "bench.yaml", "--output", "out.json", "-j", "50", env=env)
        print(f"\n{cases:,} judged cases: first run {first.wall:.2f} s, {posts_served(base):,} requests")
        walls, requests = [], []
        for _ in range(repeat):
            before = posts_served(base)
            again = specengine(
                folder, "regrade", "out.json", "bench.yaml", "--output", "again.json", "-j", "50", env=env
            )
            walls.append(again.wall)
            requests.append(float(posts_served(base) - before))
        print(f"  regrade, judge cache warm: wall {span(walls, unit=' s')}, requests {span(requests, 0)}")


def compile_bytecode() -> None:
    """Write the bytecode of the specengine package the contenders import, as an install does."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("specengine")
    assert spec is not None and spec.submodule_search_locations, "specengine is not installed"
    compileall.compile_dir(spec.submodule_search_locations[0], quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=WORKLOADS, default=["rows"])
    parser.add_argument("--cases", type=int, help="one row of N cases (with --latency-ms)")
    parser.add_argument("--latency-ms", type=float, help="the agent's answer time of that row")
    parser.add_argument("--concurrency", type=int, default=50)
    options = parser.parse_args()
    rows = DEFAULT_ROWS
    if options.cases is not None or options.latency_ms is not None:
        rows = ((options.cases or 1000, options.latency_ms or 0.0),)
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    python = sys.version.split()[0]
    compile_bytecode()
    print(f"Python {python}, {os.cpu_count()} CPUs, event loop {loop}, {options.repeat} runs each")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "rows" in options.only:
            for cases, latency_ms in rows:
                contest(folder, cases, options.concurrency, latency_ms / 1000, options.repeat)
        if "startup" in options.only:
            startup(folder, options.repeat)
        if "plan" in options.only:
            big(folder, 100_000, options.repeat, "plan")
        if "memory" in options.only:
            big(folder, 100_000, 1, "run")
        if "judge" in options.only:
            judged(folder, 10_000, options.repeat)


if __name__ == "__main__":
    main()
