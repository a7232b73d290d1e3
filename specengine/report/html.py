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
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.report.facts import (
    case_duration,
    case_line,
    case_spec,
    case_suite,
    case_title,
    failure_headline,
    format_duration,
    format_rate,
    format_time,
    summary_of,
    uncertain_checks,
    usage_text,
)
from specengine.report.formats import ReportInputs
from specengine.results.model import pass_rate
from specengine.review.annotate import review_counts_text, review_line

if TYPE_CHECKING:
    from jinja2 import Template


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


def _derived(case: dict) -> dict[str, Any]:
    """What the table shows for a case, computed once here so every report words it the same."""
    spec, line = case_spec(case), case_line(case)
    return {
        "title": case_title(case),
        "suite": case_suite(case),
        "where": f"{spec}:{line}" if line else spec,
        "reason": failure_headline(case),
        "duration": round(case_duration(case), 4),
        "review": review_line(case),
        "tokens": usage_text(case),
        "uncertain": [f"{check.name}: {check.summary()}" for check in uncertain_checks(case)],
    }


@dataclass(frozen=True)
class _Fact:
    """One item of the header's meta line (`run a1b2`, `took 3.2 s`)."""

    label: str
    value: str
    mono: bool = False


def _facts(results: dict, summary: dict, uncertain: int = 0) -> list[_Fact]:
    facts = []
    if results.get("run_id"):
        facts.append(_Fact("run", str(results["run_id"]), mono=True))
    started = format_time(results.get("started_at"))
    if started:
        facts.append(_Fact("started", started))
    if summary.get("duration_s") is not None:
        facts.append(_Fact("took", format_duration(summary["duration_s"])))
    tokens = usage_text(summary)
    if tokens:
        facts.append(_Fact("used", tokens))
    config = results.get("config")
    if isinstance(config, str | int | float) and config != "":
        facts.append(_Fact("config", str(config), mono=True))
    reviews = review_counts_text(summary)
    if reviews:
        facts.append(_Fact("reviews:", reviews))
    if uncertain:
        facts.append(_Fact("uncertain judges", str(uncertain)))
    return facts


@dataclass(frozen=True)
class _Segment:
    """One status's part of the summary bar."""

    status: str
    label: str
    count: int
    width: str  # percent of all cases


def _segments(summary: dict) -> list[_Segment]:
    """The status bar: one segment per status that has cases, as wide as its share."""
    total = summary["cases"] or 1
    counts = (
        ("passed", "passed", summary["passed"]),
        ("failed", "failed", summary["failed"]),
        ("error", "errored", summary["errored"]),
        ("skipped", "skipped", summary["skipped"]),
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


def render_html(results: dict, *, title: str = "specengine report") -> str:
    """The complete HTML document for a results dict."""
    from markupsafe import Markup

    summary = summary_of(results)
    cases = [c for c in results.get("cases", []) if isinstance(c, dict)]
    derived = [_derived(c) for c in cases]
    payload = {"run_id": results.get("run_id"), "summary": summary, "cases": cases, "derived": derived}
    config = results.get("config")
    ran = summary["passed"] + summary["failed"] + summary["errored"]
    return _template().render(
        title=title,
        doc_title=f"{title} · {results.get('run_id')}" if results.get("run_id") else title,
        facts=_facts(results, summary, sum(len(d["uncertain"]) for d in derived)),
        verdict="passed" if summary["failed"] + summary["errored"] == 0 else "failed",
        rate=format_rate(pass_rate(summary)),
        passed=summary["passed"],
        ran=ran,
        segments=_segments(summary),
        gates_skipped=summary.get("gates_skipped") or 0,
        config=json.dumps(config, indent=2, ensure_ascii=False, default=str)
        if isinstance(config, dict | list)
        else None,
        # Markup: inserted as they are. Our own files, and JSON with no `<`, `>` or `&` in it.
        css=Markup(_asset("report.css")),
        script=Markup(_asset("report.js")),
        data=Markup(embed_json(payload)),
    )


def write_html(results: dict, path: str | Path, *, title: str = "specengine report") -> Path:
    """Write the HTML report to `path` (parent folders are created); return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(results, title=title), encoding="utf-8", errors="replace")
    return p


def write_html_report(inputs: ReportInputs, destination: Path) -> Path:
    """`--html FILE`."""
    return write_html(inputs.results, destination)
