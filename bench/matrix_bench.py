"""A 4-cell matrix run beside the four single runs it replaces, run one after another.

    python bench/matrix_bench.py [--rows 1000] [--repeat 3] [--latency-ms 0 --latency-ms 50]

Four endpoints, each its own mock agent (bench/fake_openai.py) at a fixed latency; a spec of
`--rows` cases. The single runs are `run bench.yaml --config eK` for each endpoint in turn; the
matrix run is `run bench.yaml --matrix` over the four. Every figure is the best wall time of the
whole command (start-up included) over `--repeat` interleaved rounds, so a noisy neighbour hits
both ways alike. The matrix should take no more than 1.1x the singles at 0 ms (the same CPU work,
done once) and less at 50 ms, where its cells run side by side (-j is per cell, each endpoint
within its own max_concurrency).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from run_bench import mock_server, posts_served, write_suite
from timing import best_rounds, command

ENDPOINTS = ("e1", "e2", "e3", "e4")


def write_project(folder: Path, bases: list[str], rows: int) -> None:
    """run_bench's dataset spec, with a project file of four endpoints, a config each and a matrix."""
    write_suite(folder, bases[0], rows, concurrency=8)
    lines = ["endpoints:"]
    for name, base in zip(ENDPOINTS, bases, strict=True):
        lines.append(f"  {name}: {{protocol: openai-chat, url: '{base}/v1/chat/completions', model: bench}}")
    lines.append("defaults: {endpoint: e1}")
    lines.append(f"matrix: {{endpoint: [{', '.join(ENDPOINTS)}]}}")
    lines.append("configs:")
    lines += [f"  {name}: {{defaults: {{endpoint: {name}}}}}" for name in ENDPOINTS]
    (folder / "specengine.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, action="append")
    args = parser.parse_args()
    for latency_ms in args.latency_ms or [0.0, 50.0]:
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
            folder = Path(tmp)
            bases = [servers.enter_context(mock_server(latency_ms / 1000)) for _ in ENDPOINTS]
            write_project(folder, bases, args.rows)
            singles = [
                command(
                    ["-m", "specengine", "run", "bench.yaml", "--config", name, "-o", f"{name}.json"], folder
                )
                for name in ENDPOINTS
            ]
            matrix = command(
                ["-m", "specengine", "run", "bench.yaml", "--matrix", "-o", "matrix.json"], folder
            )

            def one_after_another(singles: list = singles) -> None:
                for single in singles:
                    single()

            best = best_rounds({"4 single runs": one_after_another, "4-cell matrix": matrix}, args.repeat)
            sent = sum(posts_served(base) for base in bases)
            expected = 2 * args.repeat * len(ENDPOINTS) * args.rows
            if sent != expected:
                sys.exit(f"the mocks served {sent} requests, not {expected}")
            single, whole = best["4 single runs"], best["4-cell matrix"]
            print(
                f"{args.rows} cases x 4 cells at {latency_ms:g} ms: 4 single runs {single:.2f} s,"
                f" matrix {whole:.2f} s ({whole / single:.2f}x)"
            )


if __name__ == "__main__":
    main()
