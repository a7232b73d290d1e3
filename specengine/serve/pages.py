"""The HTML pages: runs, a run, a case, compare, judge agreement, a rerun's progress; and their forms.

Server-rendered from the index, so every view is a URL (filters are query parameters) and opens
without waiting for a script. Forms post to the same actions as the JSON API (`state.AppState`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from specengine.errors import UsageError
from specengine.index import queries
from specengine.index.paging import page_of
from specengine.report.facts import failure_headline
from specengine.report.simulated import stop_text, user_claim
from specengine.results.decode import read_case
from specengine.results.loaded import Case
from specengine.results.model import pass_rate
from specengine.review.agreement import MIN_REVIEWED
from specengine.review.verdicts import review_counts
from specengine.serve.after_review import run_rate_after_review
from specengine.serve.charts import RatePoint, line_key, pass_rate_chart, recorded_coverage
from specengine.serve.export import cases_csv
from specengine.serve.jobs import MAX_RUNNING, file_stem
from specengine.serve.listing import REVIEW_CHOICES, listing
from specengine.serve.matrix_page import matrix_link
from specengine.serve.state import AppState, app_state
from specengine.serve.templating import render
from specengine.serve.views import LEGEND, STATUS_KEYS, case_history, status_segments, trial_views

PAGE_SIZE = 100


def page(request: Request, template: str, title: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, title=title, project=str(app_state(request).project), **context))


def runs_page(request: Request) -> HTMLResponse:
    state = app_state(request)
    suite = request.query_params.get("suite") or None
    with state.db() as conn:
        runs = state.run_summaries(conn, suite)
        suites = queries.all_suites(conn)
        problems = state.index.problems(conn)
        changed = [
            item.row["run_id"]
            for item in runs
            if item.reviews["overridden"] or item.reviews["check_overrides"]
        ]
        reviewed = queries.reviews_by_run(conn, changed) if changed and not suite else {}
    after_review = {
        item.row["run_id"]: run_rate_after_review(item.row, reviewed.get(item.row["run_id"], {}))
        for item in runs
        if item.reviews["reviewed"] and not suite
    }
    suite_rates = {}
    if suite:
        for item in runs:
            row = item.row
            suite_rates[row["run_id"]] = pass_rate(
                row["suite_passed"], row["suite_failed"], row["suite_errored"]
            )
    points = [
        RatePoint(
            item.row["run_id"],
            item.row["name"],
            item.row["started_at"],
            suite_rates.get(item.row["run_id"]) if suite else item.row["pass_rate"],
            cases=item.row["suite_cases"] if suite else item.row["cases"],
            coverage=item.coverage,
            ran=line_key(item.row["selection"], item.row["specs"]),
        )
        for item in reversed(runs)
    ]
    show_partial = request.query_params.get("partial") != "hide"
    return page(
        request,
        "runs.html.j2",
        "Runs",
        runs=runs,
        suites=suites,
        suite=suite,
        suite_rates=suite_rates,
        after_review=after_review,
        specs_of={item.row["run_id"]: json.loads(item.row["specs"]) for item in runs},
        chart=pass_rate_chart(points, show_partial=show_partial),
        show_partial=show_partial,
        partial_runs={item.row["run_id"]: item.coverage for item in runs if not item.coverage.full},
        problems=problems,
    )


def page_number(request: Request) -> int:
    """The `?page=` asked for, from 1; a page that is no number reads as the first (a page, not an API)."""
    try:
        return max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        return 1


def run_page(request: Request) -> HTMLResponse:
    state = app_state(request)
    run_id = request.path_params["run_id"]
    with state.db() as conn:
        run = state.run(conn, run_id)
        reviews = state.run_reviews(conn, run_id)
        listed = listing(conn, run_id, reviews, request.query_params)
        facets = queries.run_facets(conn, run_id)
        earlier = conn.execute(
            "SELECT run_id FROM runs WHERE (started_at, written_ns, run_id) < (?, ?, ?)"
            " ORDER BY started_at DESC, written_ns DESC, run_id DESC LIMIT 1",
            (run["started_at"], run["written_ns"], run["run_id"]),
        ).fetchone()
        # a matrix run's cases carry their cell (whatever the filters show): its matrix page has the
        # cells side by side
        first = conn.execute("SELECT cell FROM cases WHERE run_id = ? LIMIT 1", (run_id,)).fetchone()
        matrix = first is not None and bool(first[0])
    rows, filters = listed.rows, dict(listed.filters)
    counts = {key: run[key] for key in ("cases", "passed", "failed", "errored", "skipped")}
    shown = page_of(rows, page_number(request), PAGE_SIZE)
    if shown.number > 1:
        filters["page"] = str(shown.number)
    return page(
        request,
        "run.html.j2",
        f"Run {run['name']}",
        run=run,
        specs=json.loads(run["specs"]),
        verdict="passed" if run["failed"] + run["errored"] == 0 else "failed",
        segments=status_segments(counts),
        status_counts=[(status, counts[key]) for status, key in STATUS_KEYS],
        review_counts=review_counts(reviews.values()),
        human_rate=run_rate_after_review(run, reviews) if reviews else None,
        facets=facets,
        filters=filters,
        list_query=listed.filters,
        active=listed.active,
        sort_column=listed.column,
        sort_descending=listed.descending,
        statuses=queries.STATUSES,
        review_choices=REVIEW_CHOICES,
        rows=shown.items,
        total=shown.total,
        page=shown.number,
        pages=shown.pages,
        reviews=reviews,
        labels_of=lambda row: json.loads(row["labels"]),
        previous_run=earlier[0] if earlier else None,
        matrix=matrix,
        coverage=recorded_coverage(run["selection"], run["shard"], run["cases"]),
    )


def case_page(request: Request) -> HTMLResponse:
    state = app_state(request)
    run_id = request.path_params["run_id"]
    case_id = request.query_params.get("id")
    if not case_id:
        raise HTTPException(400, "which case? add ?id=CASE_ID")
    with state.db() as conn:
        run = state.run(conn, run_id)
        case = read_case(state.case(conn, run_id, case_id))
        run_reviews = state.run_reviews(conn, run_id)
        listed = listing(conn, run_id, run_reviews, request.query_params)
        history = case_history(queries.case_history(conn, case_id), current=run_id)
        walk = _queue_walk(conn, request, run_id, case_id)
        origin = _frozen_origin(conn, state, case)
    position, before, after = listed.neighbours(case_id)
    return page(
        request,
        "case.html.j2",
        case.eval,
        run=run,
        case=case,
        reason=failure_headline(case),
        checks=case.checks,
        trials=trial_views(case),
        reviews=run_reviews.get(case_id),
        history=history,
        reviewable=case.status in ("passed", "failed", "error"),
        reviewable_statuses=("passed", "failed", "error"),
        back=f"/runs/{run_id}/case?{urlencode({**listed.filters, 'id': case_id})}",
        list_query=listed.filters,
        legend=LEGEND,
        position=position,
        listed=len(listed.rows),
        previous_case=before,
        next_case=after,
        frozen=request.query_params.get("frozen"),
        stopped=stop_text(case.simulation).removeprefix("stopped: ") if case.simulation else None,
        claim=user_claim(case.simulation) if case.simulation else None,
        matrix_back=matrix_link(run_id, request.query_params.get("matrix", "")),
        walk=walk,
        frozen_origin=origin,
    )


def _frozen_origin(conn: Any, state: AppState, case: Case) -> tuple[str, str] | None:
    """The run and case a frozen eval's conversation came from, when that run is in the index."""
    from specengine.serve.frozen_origin import frozen_from

    found = frozen_from(state.project / case.spec) if case.spec else None
    return found if found is not None and queries.run_row(conn, found[0]) is not None else None


def _queue_walk(conn: Any, request: Request, run_id: str, case_id: str) -> Any:
    """The review queue around this case when it was opened from the queue (`?queue=N`), else None."""
    place = request.query_params.get("queue", "")
    if not place.isdigit():
        return None
    from specengine.index.review_queue import queue_items
    from specengine.serve.queue_walk import walk

    return walk(queue_items(conn), run_id, case_id, request.query_params.get("check") or None, int(place))


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form body (the only kind our pages send), last value of each field."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    body = (await request.body()).decode("utf-8", "replace")
    return {key: values[-1] for key, values in parse_qs(body, keep_blank_values=True).items()}


async def _form_lists(request: Request) -> dict[str, list[str]]:
    body = (await request.body()).decode("utf-8", "replace")
    return parse_qs(body, keep_blank_values=True)


def _local(path: str, fallback: str) -> str:
    """Only a path on this server may be a redirect target."""
    return path if path.startswith("/") and not path.startswith("//") and "\\" not in path else fallback


async def review_form(request: Request) -> Response:
    from starlette.concurrency import run_in_threadpool

    state = app_state(request)
    run_id = request.path_params["run_id"]
    form = await _form(request)
    case_id = form.get("case", "")
    check = form.get("check") or None
    try:
        await run_in_threadpool(
            state.add_review, run_id, case_id, check, form.get("verdict", ""), form.get("note", "")
        )
    except UsageError as exc:
        raise HTTPException(400, str(exc)) from None
    back = _local(form.get("back", ""), f"/runs/{run_id}/case?{urlencode({'id': case_id})}")
    return RedirectResponse(back, status_code=303)


async def freeze_form(request: Request) -> Response:
    """The case page's Freeze button: the case's simulated conversation becomes a scripted eval."""
    from starlette.concurrency import run_in_threadpool

    state = app_state(request)
    run_id = request.path_params["run_id"]
    form = await _form(request)
    case_id, replace = form.get("case", ""), form.get("replace") == "1"
    try:
        path = await run_in_threadpool(state.freeze, run_id, case_id, replace)
    except UsageError as exc:
        said = " ".join(exc.lines)
        if " exists; " in said and not replace:  # frozen before: offer to replace it, here
            target = Path(said.removeprefix("error: ").split(" exists; ")[0])
            shown = target.relative_to(state.project) if target.is_relative_to(state.project) else target
            answer = page(
                request,
                "freeze_exists.html.j2",
                "Frozen before",
                run_id=run_id,
                case_id=case_id,
                target=shown,
            )
            answer.status_code = 409
            return answer
        raise HTTPException(400, said) from None
    return RedirectResponse(
        f"/runs/{run_id}/case?{urlencode({'id': case_id, 'frozen': str(path)})}", status_code=303
    )


async def rerun_form(request: Request) -> Response:
    from starlette.concurrency import run_in_threadpool

    state = app_state(request)
    run_id = request.path_params["run_id"]
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    fields = await _form_lists(request)
    selected = fields.get("case", []) if fields.get("selected") else None
    if selected is not None and not selected:
        raise HTTPException(400, "select the cases to rerun first (the boxes in the first column)")
    try:
        job = await run_in_threadpool(state.start_rerun, run_id, selected)
    except UsageError as exc:
        raise HTTPException(400, str(exc)) from None
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)


def job_page(request: Request) -> HTMLResponse:
    state = app_state(request)
    job = state.jobs.get(request.path_params["job_id"])
    if job is None:
        raise HTTPException(404, "no such rerun (reruns are forgotten when the app restarts; the runs stay)")
    new_run = state.job_run(job)
    counts = None
    if new_run is not None:
        with state.db() as conn:
            counts = state.run(conn, new_run)
    return page(
        request,
        "job.html.j2",
        "Rerun",
        job=job.state(),
        new_run=new_run,
        counts=counts,
        max_running=MAX_RUNNING,
    )


def queue_page(request: Request) -> HTMLResponse:
    """What most needs a reviewer next, across runs (index.review_queue)."""
    from specengine.index.queue_rank import RANKING
    from specengine.index.review_queue import PAGE_SIZE, review_queue
    from specengine.serve.queue_walk import item_url

    state = app_state(request)
    with state.db() as conn:
        found = review_queue(conn, page_number(request))
    first = (found.page - 1) * PAGE_SIZE + 1
    links = [item_url(item, first + offset) for offset, item in enumerate(found.items)]
    return page(
        request, "queue.html.j2", "Review queue", queue=found, ranking=RANKING, first=first, links=links
    )


def agreement_page(request: Request) -> HTMLResponse:
    state = app_state(request)
    runs = request.query_params.getlist("run") or None
    with state.db() as conn:
        report = state.agreement(conn, runs)
    return page(request, "agreement.html.j2", "Judge agreement", report=report, min_reviewed=MIN_REVIEWED)


def export_csv(request: Request) -> Response:
    state = app_state(request)
    run_id = request.path_params["run_id"]
    with state.db() as conn:
        state.run(conn, run_id)
        rows = queries.run_cases(conn, run_id, queries.CaseFilter())
        reviews = state.run_reviews(conn, run_id)
    return Response(
        cases_csv(rows, reviews),
        media_type="text/csv; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{file_stem(run_id)}.csv"'},
    )


REPORT_POLICY = (
    "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';"
    " img-src data:"
)


def static_report(request: Request) -> HTMLResponse:
    """The run's HTML report, the very file `--html` writes; sandboxed (it has inline script)."""
    from specengine.report.html import render_html
    from specengine.results.decode import read_run
    from specengine.review.annotate import reviews_of

    state = app_state(request)
    run_id = request.path_params["run_id"]
    with state.db() as conn:
        results = state.results(conn, run_id)
        file = state.run(conn, run_id)["file"]
    reviews = reviews_of(read_run(results), state.index.runs_folder / file)
    page = render_html(results, reviews=reviews)
    return HTMLResponse(page, headers={"content-security-policy": REPORT_POLICY})
