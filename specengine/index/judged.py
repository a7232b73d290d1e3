"""The judge verdicts and reviews that `specengine agreement RUNS…` measures.

RUNS are run ids of the project's index or results files; a file in the project's runs folder is
taken from the index, any other file is read directly (and its reviews still come from the project's
store, matched by reply). No RUNS: every indexed run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from specengine.errors import ResultsError, UsageError
from specengine.index import queries
from specengine.index.database import RunIndex
from specengine.index.extract import judge_verdicts_of, run_rows
from specengine.review.agreement import JudgeVerdict
from specengine.review.store import Review


def judge_verdicts_for(project: Path, runs: Sequence[str]) -> tuple[list[JudgeVerdict], list[Review]]:
    from specengine.results.reader import load_results

    index = RunIndex(project)
    verdicts: list[JudgeVerdict] = []
    with index.open() as conn:
        reviews = queries.all_reviews(conn)
        if not runs:
            return queries.judge_verdicts(conn), reviews
        run_ids = []
        for argument in runs:
            path = Path(argument)
            if path.is_file():
                inside = path.resolve().parent == index.runs_folder
                row = (
                    conn.execute("SELECT run_id FROM sources WHERE file = ?", (path.name,)).fetchone()
                    if inside
                    else None
                )
                if row is not None and row[0] is not None:
                    run_ids.append(row[0])
                    continue
                try:
                    verdicts.extend(judge_verdicts_of(run_rows(load_results(path), path)))
                except ResultsError as exc:
                    raise UsageError(f"error: {exc}") from None
            elif queries.run_row(conn, argument) is not None:
                run_ids.append(argument)
            else:
                raise UsageError(
                    f"error: {argument}: neither a results file nor a run id of {index.runs_folder}"
                )
        if run_ids:
            verdicts.extend(queries.judge_verdicts(conn, run_ids))
    return verdicts, reviews


def case_documents(
    project: Path, runs: Sequence[str], wanted: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The whole entries of the cases named by (run id, case id): from the index, else from the
    results files among RUNS (runs outside the project's runs folder)."""
    from specengine.results.decode import read_run
    from specengine.results.reader import load_results

    missing = set(wanted)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    with RunIndex(project).open(refresh=False) as conn:
        for run_id, case_id in sorted(missing):
            document = queries.case_document(conn, run_id, case_id)
            if document is not None:
                found[(run_id, case_id)] = document
    missing -= set(found)
    for argument in runs:
        path = Path(argument)
        if not missing or not path.is_file():
            continue
        try:
            results = load_results(path)
        except ResultsError:
            continue  # judge_verdicts_for has said why
        run = read_run(results, path)
        for case, document in zip(run.cases, results["cases"], strict=True):
            key = (run.run_id or path.stem, case.id)
            if key in missing:
                found[key] = document
                missing.discard(key)
    return found
