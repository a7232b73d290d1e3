"""The Starlette application: routes, error pages, the guard, and stopping reruns on shutdown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from specengine.serve import api, compare_pages, matrix_page, pages
from specengine.serve.assets import report_stylesheet
from specengine.serve.limits import BodyLimit
from specengine.serve.security import Guard, HostPolicy
from specengine.serve.state import AppState, app_state
from specengine.serve.templating import render

STATIC = Path(__file__).parent / "static"


async def _error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    if isinstance(exc, UnicodeError):  # text from the request that no file or page can hold
        status, detail = 400, "the request holds text that is not Unicode"
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": detail}, status_code=status)
    state = app_state(request)
    heading = {400: "That request cannot be used", 404: "Not found", 415: "Unsupported form"}.get(
        status, "Error"
    )
    body = render(
        "message.html.j2", title=heading, heading=heading, message=detail, project=str(state.project)
    )
    return HTMLResponse(body, status_code=status)


def _favicon(request: Request) -> Response:
    """Browsers ask for /favicon.ico on every page: the app's icon, instead of a 404 in every log."""
    return Response(
        (STATIC / "favicon.svg").read_bytes(),
        media_type="image/svg+xml",
        headers={"cache-control": "max-age=86400"},
    )


def _report_css(request: Request) -> Response:
    return Response(report_stylesheet(), media_type="text/css; charset=utf-8")


def create_app(
    project: Path, *, port: int, host_names: tuple[str, ...] = (), reviewer: str = "unknown"
) -> Starlette:
    """The app over the runs of `project`, answering only to `host_names` (and IP addresses) on `port`."""
    state = AppState(project, reviewer)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        state.jobs.stop_all()

    routes = [
        Route("/", pages.runs_page),
        Route("/runs/{run_id}", pages.run_page),
        Route("/runs/{run_id}/case", pages.case_page),
        Route("/runs/{run_id}/matrix", matrix_page.matrix_page),
        Route("/runs/{run_id}/report", pages.static_report),
        Route("/runs/{run_id}/export.csv", pages.export_csv),
        Route("/runs/{run_id}/review", pages.review_form, methods=["POST"]),
        Route("/runs/{run_id}/rerun", pages.rerun_form, methods=["POST"]),
        Route("/runs/{run_id}/freeze", pages.freeze_form, methods=["POST"]),
        Route("/jobs/{job_id}", pages.job_page),
        Route("/compare", compare_pages.compare_page),
        Route("/agreement", pages.agreement_page),
        Route("/queue", pages.queue_page),
        Route("/api/runs", api.runs),
        Route("/api/runs/{run_id}", api.run),
        Route("/api/runs/{run_id}/matrix", matrix_page.matrix_api),
        Route("/api/runs/{run_id}/reviews", api.add_review, methods=["POST"]),
        Route("/api/runs/{run_id}/rerun", api.rerun, methods=["POST"]),
        Route("/api/cases/history", api.history),
        Route("/api/jobs/{job_id}", api.job),
        Route("/api/compare", compare_pages.compare_api),
        Route("/api/agreement", api.agreement),
        Route("/api/queue", api.queue),
        Route("/static/report.css", _report_css),
        Route("/favicon.ico", _favicon),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(Guard, policy=HostPolicy(port, host_names)), Middleware(BodyLimit)],
        exception_handlers={HTTPException: _error, Exception: _error},
        lifespan=lifespan,
    )
    app.state.serve = state
    return app
