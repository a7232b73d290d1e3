"""The JSON API under the pages, for scripts (documented in the README's "specengine serve" section).

Answers are built from the index like the pages. State changes take JSON bodies only
(`application/json`), which a browser cannot send across sites without asking first.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from specengine.errors import UsageError
from specengine.index import queries
from specengine.review.verdicts import review_counts
from specengine.serve.state import app_state
from specengine.serve.views import case_history
from specengine.untrusted_json import read_json


def runs(request: Request) -> JSONResponse:
    state = app_state(request)
    with state.db() as conn:
        found = state.run_summaries(conn, request.query_params.get("suite") or None)
    return JSONResponse({"runs": [item.as_dict() for item in found]})


def run(request: Request) -> JSONResponse:
    state = app_state(request)
    run_id = request.path_params["run_id"]
    with state.db() as conn:
        row = state.run(conn, run_id)
        reviews = state.run_reviews(conn, run_id)
        cases = queries.run_documents(conn, run_id)
    for case in cases:
        found = reviews.get(case["id"])
        case["review"] = found.as_dict() if found else None
    return JSONResponse(
        {
            "run_id": row["run_id"],
            "name": row["name"],
            "started_at": row["started_at"],
            "file": row["file"],
            "summary": json.loads(row["summary"]),
            "selection": json.loads(row["selection"]) if row["selection"] else None,
            "reviews": review_counts(reviews.values()),
            "cases": cases,
        }
    )


def history(request: Request) -> JSONResponse:
    state = app_state(request)
    case_id = request.query_params.get("id")
    if not case_id:
        raise HTTPException(400, "which case? add ?id=CASE_ID")
    with state.db() as conn:
        rows = queries.case_history(conn, case_id)
    if not rows:
        raise HTTPException(404, f"no run has a case {case_id!r}")
    strip = case_history(rows)
    return JSONResponse(
        {
            "case": case_id,
            "flaky": strip.flaky,
            "trend": strip.label,
            "runs": [
                {
                    "run_id": entry.run_id,
                    "name": entry.name,
                    "started_at": entry.started_at,
                    "status": entry.status,
                    "passed_trials": entry.passed_trials,
                    "n_trials": entry.n_trials,
                    "flipped": entry.flipped,
                    "spec_changed": entry.spec_changed,
                }
                for entry in strip.entries
            ],
        }
    )


async def _json_body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise HTTPException(415, "send a JSON body with Content-Type: application/json")
    try:
        body = read_json(await request.body())  # a body nested past MAX_DEPTH is not JSON either
    except ValueError as exc:
        raise HTTPException(400, f"the body is not valid JSON ({exc.args[0]})") from None
    if not isinstance(body, dict):
        raise HTTPException(400, "the body must be a JSON object")
    if not _is_unicode(body):
        raise HTTPException(400, "the body holds text that is not Unicode (a lone surrogate such as \\ud800)")
    return body


def _is_unicode(value: Any) -> bool:
    """False when some text in a parsed JSON body holds a lone surrogate (`"\\ud800"` parses to
    one), which no file or database can store."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_is_unicode(key) and _is_unicode(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_is_unicode(item) for item in value)
    return True


async def add_review(request: Request) -> JSONResponse:
    state = app_state(request)
    body = await _json_body(request)
    case_id, check, note = body.get("case"), body.get("check"), body.get("note") or ""
    if not isinstance(case_id, str) or not case_id:
        raise HTTPException(400, '"case" must be a case id')
    if check is not None and not isinstance(check, str):
        raise HTTPException(400, '"check" must be a check name or null')
    if not isinstance(note, str):
        raise HTTPException(400, '"note" must be text')
    try:
        review = await run_in_threadpool(
            state.add_review, request.path_params["run_id"], case_id, check, str(body.get("verdict")), note
        )
    except UsageError as exc:
        raise HTTPException(400, str(exc)) from None
    return JSONResponse(review.as_dict(), status_code=201)


async def rerun(request: Request) -> JSONResponse:
    state = app_state(request)
    body = await _json_body(request)
    selected = body.get("cases")
    if selected is not None and (
        not isinstance(selected, list) or not all(isinstance(c, str) for c in selected)
    ):
        raise HTTPException(
            400, '"cases" must be a list of case ids (or leave it out to rerun the failed cases)'
        )
    try:
        job = await run_in_threadpool(state.start_rerun, request.path_params["run_id"], selected)
    except UsageError as exc:
        raise HTTPException(400, str(exc)) from None
    return JSONResponse(job.state(), status_code=202)


def job(request: Request) -> JSONResponse:
    state = app_state(request)
    found = state.jobs.get(request.path_params["job_id"])
    if found is None:
        raise HTTPException(404, "no such rerun")
    data = found.state()
    data["run_id"] = state.job_run(found)
    return JSONResponse(data)


def queue(request: Request) -> JSONResponse:
    from specengine.index.review_queue import review_queue

    state = app_state(request)
    try:
        number = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        raise HTTPException(400, "page must be a whole number from 1") from None
    with state.db() as conn:
        found = review_queue(conn, number)
    return JSONResponse(found.as_dict())


def agreement(request: Request) -> JSONResponse:
    state = app_state(request)
    with state.db() as conn:
        report = state.agreement(conn, request.query_params.getlist("run") or None)
    return JSONResponse(report.as_dict())
