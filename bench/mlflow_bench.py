"""Benchmark logging to MLflow: what `--mlflow` adds to a run, and what a stored run costs to log.

    python bench/mlflow_bench.py [--cases 1000] [--concurrency 50] [--latency 0.05] [--naive 100]

Starts a local `mlflow server` (SQLite, 4 workers: MLflow's default) and the fake agent of
run_bench.py, then prints:
1. naive: N cases sent one by one from one thread with MLflow's fluent API (a trace per case, then
   `log_feedback` for its one check after flushing the trace): the cost specengine avoids.
2. `specengine run` of the cases (three checks each, an expected value per row) without and with
   `--mlflow`: wall times, and the time the run spent after its last case (MLflow's share).
3. `specengine report RESULTS --mlflow`: logging the stored results of that run.
4. a check that the server holds one trace per case with every check's assessment.
Everything runs on 127.0.0.1; the CLI runs as a subprocess so its own start-up counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from run_bench import start_server, write_suite  # noqa: E402
from support.mlflow_server import MlflowServer  # noqa: E402


def naive(url: str, cases: int) -> float:
    """Seconds to log `cases` traces with one check each, one by one, the way the MLflow docs show."""
    import mlflow
    from mlflow.entities import AssessmentSource

    mlflow.set_tracking_uri(url)
    mlflow.set_experiment("naive")
    source = AssessmentSource(source_type="CODE", source_id="bench")
    started = time.perf_counter()
    with mlflow.start_run():
        for number in range(cases):
            with mlflow.start_span(name=f"case {number}") as root:
                root.set_inputs({"input": "What's the weather in Paris?"})
                with mlflow.start_span(name="turn 1") as turn:
                    turn.set_inputs({"message": "What's the weather in Paris?"})
                    turn.set_outputs({"reply": "The weather in Paris is Sunny."})
                root.set_outputs({"reply": "The weather in Paris is Sunny."})
            mlflow.flush_trace_async_logging()  # else log_feedback meets RESOURCE_DOES_NOT_EXIST
            mlflow.log_feedback(trace_id=root.trace_id, name="includes", value=True, source=source)
    return time.perf_counter() - started


def cli(folder: Path, env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "specengine", *args], cwd=folder, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        print(done.stdout, done.stderr, file=sys.stderr)
    mlflow_lines = [line for line in (done.stdout + done.stderr).splitlines() if "MLflow" in line]
    return wall, (mlflow_lines[0] if mlflow_lines else "(no MLflow line)")


def check_logged(url: str, experiment: str, cases: int) -> str:
    from mlflow import MlflowClient

    client = MlflowClient(url)
    found = client.get_experiment_by_name(experiment)
    assert found is not None, experiment
    [run] = client.search_runs([found.experiment_id])
    traces, token = [], None
    while True:
        page = client.search_traces(
            locations=[found.experiment_id], run_id=run.info.run_id, max_results=500, page_token=token
        )
        traces += list(page)
        token = page.token
        if not token:
            break
    marks = [len(trace.info.assessments) for trace in traces]
    ok = len(traces) == cases and all(count == 5 for count in marks)  # 3 checks, the verdict, 1 expectation
    return f"{len(traces)} traces, assessments per trace {sorted(set(marks))} -> {'ok' if ok else 'WRONG'}"


def run_figures(
    suite: Path, env: dict[str, str], cases: int, concurrency: int, latency: float, url: str
) -> None:
    """`specengine run` without and with --mlflow, then `report --mlflow` of the stored results."""
    j = str(concurrency)
    plain, _ = cli(suite, env, "run", "bench.yaml", "-o", "plain.json", "-j", j)
    logged, line = cli(suite, env, "run", "bench.yaml", "-o", "logged.json", "-j", j, "--mlflow", "bench")
    duration = json.loads((suite / "logged.json").read_text())["summary"]["duration_s"]
    print(f"run, {cases} cases x 3 checks, concurrency {j}, agent latency {latency:g} s:")
    print(f"  without --mlflow {plain:.1f} s   with --mlflow {logged:.1f} s   (+{logged - plain:.1f} s)")
    print(f"  the cases themselves took {duration:.1f} s")
    print(f"  {line}")
    print(f"  server check: {check_logged(url, 'bench', cases)}")
    stored, line = cli(suite, env, "report", "logged.json", "--mlflow", "bench-stored")
    print(f"report --mlflow of the stored results: {stored:.1f} s ({cases / stored:.0f} cases/s)")
    print(f"  {line}")
    print(f"  server check: {check_logged(url, 'bench-stored', cases)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--naive", type=int, default=100, help="cases for the one-by-one baseline (0: skip)")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        agent, port = start_server(options.latency)
        booting = time.perf_counter()
        server = MlflowServer(folder / "mlflow", workers=4).start()
        try:
            server.wait_ready()
            print(f"mlflow server ready in {time.perf_counter() - booting:.1f} s")
            env = {**os.environ, "MLFLOW_TRACKING_URI": server.url}
            if options.naive:
                seconds = naive(server.url, options.naive)
                print(
                    f"naive (one by one, 1 check each): {options.naive} cases in {seconds:.1f} s"
                    f" = {seconds / options.naive * 100:.1f} s per 100 cases"
                )
            suite = folder / "suite"
            suite.mkdir()
            write_suite(suite, port, options.cases, options.concurrency)
            run_figures(suite, env, options.cases, options.concurrency, options.latency, server.url)
        finally:
            server.stop()
            agent.terminate()


if __name__ == "__main__":
    main()
