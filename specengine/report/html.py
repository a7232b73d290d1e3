"""A single self-contained HTML report: open it from disk, attach it to CI, mail it; no server, no network.

The page is the Jinja2 template `assets/report.html.j2` (autoescaped), with `assets/report.css` and
`assets/report.js` inlined. The script is plain browser JavaScript with no dependencies, so the report
opens offline, from a CI artifact, years later. The results are embedded as JSON in a
`<script type="application/json">` block and the script renders the case table a page at a time, so
a 10,000-case run opens quickly and the file grows linearly with the results.

Agent replies are untrusted: in the data block every `<` is written as `\\u003c`, so no reply can
close the script element, and the script builds every element with textContent, never innerHTML.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.report.cell_table import format_cost
from specengine.report.facts import (
    case_title,
    failure_headline,
    format_duration,
    format_rate,
    format_time,
    run_label,
    summary_of,
    uncertain_checks,
)
from specengine.report.formats import ReportInputs
from specengine.report.matrix_view import matrix_view
from specengine.report.skipped_gates import skipped_gates, skipped_gates_text
from specengine.report.watch import watchlist
from specengine.results.cells import case_cost
from specengine.results.decode import read_endpoints, read_prices, read_run, read_settings, read_summary
from specengine.results.loaded import Case, Price, Run, Summary
from specengine.review.annotate import review_counts_text, review_line
from specengine.words import counted

if TYPE_CHECKING:
    from jinja2 import Template

    from specengine.report.compare import Comparison
    from specengine.review.verdicts import CaseReviews


def _finite(value: Any) -> Any:
    """The same data with NaN and infinities replaced by None (JSON.parse rejects them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def embed_json(data: Any) -> str:
    """JSON that is safe inside a <script> element: no `<` at all, so no `</script>` or `<!--`."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _derived(
    case: Case, change: str | None, prices: Mapping[str, Price], review: CaseReviews | None
) -> dict[str, Any]:
    """What the table shows for a case, computed once here so every report words it the same.

    `skipped` names the gates a passed case passed without; `change` is what the baseline
    comparison says of the case (regressed, fixed, new, changed), when there is one.
    """
    spec, line = case.spec, case.line
    gates = skipped_gates(case)
    return {
        "title": case_title(case),
        "suite": case.suite,
        "where": f"{spec}:{line}" if line else spec,
        "reason": failure_headline(case) or "; ".join(f"{gate.name}: {gate.reason}" for gate in gates),
        "duration": round(case.elapsed_s, 4),
        "review": review_line(review),
        "tokens": None if case.usage is None else str(case.usage),
        "cost": format_cost(case_cost(case.usage, prices.get(str(case.endpoint)))),
        "uncertain": [f"{check.name}: {check.summary()}" for check in uncertain_checks(case)],
        "skipped": skipped_gates_text(gates) if gates else "",
        "skipped_tag": ("judge skipped" if all(g.matcher == "judge" for g in gates) else "checks skipped")
        if gates
        else "",
        "change": change,
    }


_DEMO = {"demo": "built-in demo agent"}  # where the demo endpoint is, for the header


@dataclass(frozen=True)
class _Fact:
    """One item of the header's meta line (`run a1b2`, `took 3.2 s`)."""

    label: str
    value: str
    mono: bool = False


def _facts(run: Run, reviews: Mapping[str, CaseReviews], uncertain: int = 0) -> list[_Fact]:
    summary, settings = run.summary, read_settings(run.header)
    facts = [_Fact("run", run.run_id, mono=True)] if run.run_id else []
    started = format_time(run.started_at)
    if started:
        facts.append(_Fact("started", started))
    if summary.duration_s is not None:
        facts.append(_Fact("took", format_duration(summary.duration_s)))
    if summary.usage is not None:
        facts.append(_Fact("used", str(summary.usage)))
    if summary.simulator_calls is not None:
        calls, hits = summary.simulator_calls, summary.simulator_cache_hits
        facts.append(_Fact("simulator", f"{counted(calls, 'call')}, {counted(hits, 'cache hit')}"))
    if settings.config and not settings.config.startswith(("{", "[")):
        facts.append(_Fact("config", settings.config, mono=True))
    if reviews:
        facts.append(_Fact("reviews:", review_counts_text(reviews)))
    if uncertain:
        facts.append(_Fact("uncertain judges", str(uncertain)))
    if settings.commit:
        where = f"{settings.commit[:12]} on {settings.branch}" if settings.branch else settings.commit[:12]
        facts.append(_Fact("commit", where, mono=True))
    return facts


@dataclass(frozen=True)
class _Group:
    """One row of a pass-rate table: a suite or a label, and how its cases ended."""

    name: str
    counts: Summary

    @property
    def rate(self) -> str:
        return format_rate(self.counts.pass_rate)

    @property
    def bad(self) -> bool:
        return bool(self.counts.failed or self.counts.errored)


def _groups(cases: Sequence[Case], keys: Callable[[Case], Iterable[str]]) -> list[_Group]:
    """Counts per group (a case counts in each group it is in), worst pass rate first."""
    members: dict[str, list[Case]] = {}
    for case in cases:
        for key in keys(case):
            members.setdefault(key, []).append(case)
    groups = [_Group(name, read_summary(None, tuple(grouped))) for name, grouped in members.items()]
    rates = {group.name: group.counts.pass_rate for group in groups}
    return sorted(
        groups, key=lambda group: (2.0 if rates[group.name] is None else rates[group.name], group.name)
    )


@dataclass(frozen=True)
class _Changes:
    """What changed since the baseline: the counts, and the cases that are gone (not in the table)."""

    base: str
    regressed: int
    fixed: int
    new: int
    changed: int
    gone: tuple[str, ...]


def _changes(comparison: Comparison | None) -> tuple[_Changes | None, dict[str, str]]:
    """The changes section, and each case's change by id."""
    if comparison is None:
        return None, {}
    marks: dict[str, str] = {}
    for mark, items in (
        ("regressed", comparison.regressions),
        ("fixed", comparison.fixes),
        ("new", comparison.new),
        ("changed", comparison.other_changes),
    ):
        for item in items:
            marks[item.id] = mark
    base = run_label(comparison.base_run_id, comparison.base_name)
    changes = _Changes(
        base=base,
        regressed=len(comparison.regressions),
        fixed=len(comparison.fixes),
        new=len(comparison.new),
        changed=len(comparison.other_changes),
        gone=tuple(item.id for item in comparison.removed),
    )
    return changes, marks


@dataclass(frozen=True)
class _Segment:
    """One status's part of the summary bar."""

    status: str
    label: str
    count: int
    width: str  # percent of all cases


def _segments(summary: Summary) -> list[_Segment]:
    """The status bar: one segment per status that has cases, as wide as its share."""
    total = summary.cases or 1
    counts = (
        ("passed", "passed", summary.passed),
        ("failed", "failed", summary.failed),
        ("error", "errored", summary.errored),
        ("skipped", "skipped", summary.skipped),
    )
    return [
        _Segment(status, label, count, f"{count / total * 100:.3f}")
        for status, label, count in counts
        if count
    ]


@cache
def _template() -> Template:
    """The page template, with the stylesheet and script it inlines (read once per process)."""
    from jinja2 import PackageLoader
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        loader=PackageLoader("specengine.report", "assets"), autoescape=True, keep_trailing_newline=True
    )
    return env.get_template("report.html.j2")


@cache
def _asset(name: str) -> str:
    return (files("specengine.report") / "assets" / name).read_text(encoding="utf-8")


def render_html(
    results: dict,
    *,
    title: str = "specengine report",
    comparison: Comparison | None = None,
    reviews: Mapping[str, CaseReviews] | None = None,
) -> str:
    """The complete HTML document for a results dict; with `comparison` (against a baseline), what
    changed since it; with `reviews` (by case id), people's reviews beside the verdicts."""
    from markupsafe import Markup

    run = read_run(results)  # the file's case dicts are embedded as they are; what is derived reads the run
    summary = run.summary
    changes, marks = _changes(comparison)
    prices = read_prices(run.header)
    reviews = reviews or {}
    derived = [_derived(case, marks.get(case.id), prices, reviews.get(case.id)) for case in run.cases]
    cases = [case for case in results.get("cases") or () if isinstance(case, dict)]
    payload = {"run_id": run.run_id or None, "summary": summary_of(run), "cases": cases, "derived": derived}
    config = read_settings(run.header).config
    return _template().render(
        title=f"{title} · {run.name}" if run.name else title,
        doc_title=" · ".join(part for part in (title, run.name, run.run_id) if part),
        facts=_facts(run, reviews, sum(len(d["uncertain"]) for d in derived)),
        endpoints=[replace(e, url=e.url or _DEMO.get(e.protocol)) for e in read_endpoints(run.header)],
        suites=_groups(run.cases, lambda case: [case.suite]),
        labels=_groups(run.cases, lambda case: case.labels),
        changes=changes,
        passed_with_skips=sum(1 for d in derived if d["skipped"]),
        verdict="passed" if summary.failed + summary.errored == 0 else "failed",
        rate=format_rate(summary.pass_rate),
        passed=summary.passed,
        ran=summary.passed + summary.failed + summary.errored,
        segments=_segments(summary),
        gates_skipped=summary.gates_skipped,
        watched=watchlist(run.cases).lines(),  # autoescaped: case and check names are the author's text
        config=json.dumps(json.loads(config), indent=2, ensure_ascii=False)
        if config and config.startswith(("{", "["))
        else None,
        # Markup: inserted as they are. Our own files, and JSON with no `<`, `>` or `&` in it.
        css=Markup(_asset("report.css")),
        script=Markup(_asset("report.js")),
        data=Markup(embed_json(payload)),
        matrix=matrix_view(run),
        matrix_script=Markup(_asset("matrix.js")),
    )


def write_html(
    results: dict,
    path: str | Path,
    *,
    title: str = "specengine report",
    comparison: Comparison | None = None,
    reviews: Mapping[str, CaseReviews] | None = None,
) -> Path:
    """Write the HTML report to `path` (parent folders are created); return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(results, title=title, comparison=comparison, reviews=reviews)
    p.write_text(page, encoding="utf-8", errors="replace")
    return p


def write_html_report(inputs: ReportInputs, destination: Path) -> Path:
    """`--html FILE`; with `--baseline`, the changes since the baseline too."""
    return write_html(inputs.results, destination, comparison=inputs.comparison, reviews=inputs.reviews)
