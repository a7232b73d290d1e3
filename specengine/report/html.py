"""A single self-contained HTML report: open it from disk, attach it to CI, mail it; no server, no network.

The results are embedded as JSON in a `<script type="application/json">` block and the page renders
the case table a page at a time, so a 10,000-case run opens quickly and the file grows linearly with
the results. Agent replies are untrusted: in the data block every `<` is written as `\\u003c`, so no
reply can close the script element, and the page inserts all data as text, never as markup.
"""

from __future__ import annotations

import html
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from specengine.report.facts import (
    case_duration,
    case_line,
    case_spec,
    case_suite,
    case_title,
    failure_headline,
    format_duration,
    format_rate,
    summary_of,
)
from specengine.report.html_assets import CSS, JS
from specengine.results.model import pass_rate


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
    }


def _started(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    suffix = " UTC" if parsed.utcoffset() is not None and not parsed.utcoffset() else ""
    return parsed.strftime("%Y-%m-%d %H:%M:%S") + suffix


def _header(results: dict, summary: dict, title: str) -> str:
    esc = html.escape
    rate = pass_rate(summary)
    total = summary["cases"] or 1
    meta = []
    if results.get("run_id"):
        meta.append(f'run <span class="mono">{esc(str(results["run_id"]))}</span>')
    started = _started(results.get("started_at"))
    if started:
        meta.append(f"started {esc(started)}")
    if summary.get("duration_s") is not None:
        meta.append(f"took {esc(format_duration(summary['duration_s']))}")
    config = results.get("config")
    if isinstance(config, str | int | float) and config != "":
        meta.append(f'config <span class="mono">{esc(str(config))}</span>')
    bar = "".join(
        f'<span class="seg {cls}" style="width:{count / total * 100:.3f}%" title="{count} {label}"></span>'
        for cls, label, count in (
            ("passed", "passed", summary["passed"]),
            ("failed", "failed", summary["failed"]),
            ("error", "errored", summary["errored"]),
            ("skipped", "skipped", summary["skipped"]),
        )
        if count
    )
    ran = summary["passed"] + summary["failed"] + summary["errored"]
    verdict = "passed" if summary["failed"] + summary["errored"] == 0 else "failed"
    warn = ""
    if summary.get("gates_skipped"):
        n = summary["gates_skipped"]
        warn = (
            f'<p class="warn">⚠ {n} gate{"s" if n != 1 else ""} skipped: '
            "those checks did not run, so they prove nothing.</p>"
        )
    details = ""
    if isinstance(config, dict | list):
        details = (
            '<details class="config"><summary>Run configuration</summary><pre class="mono">'
            + esc(json.dumps(config, indent=2, ensure_ascii=False, default=str))
            + "</pre></details>"
        )
    return f"""<header class="top">
  <div class="brand"><span class="logo" aria-hidden="true">◆</span> {esc(title)}</div>
  <div class="meta">{" · ".join(meta)}</div>
</header>
<section class="summary">
  <div class="rate {verdict}"><div class="big" id="pass-rate">{esc(format_rate(rate))}</div>
    <div class="sub">pass rate · {summary["passed"]} of {ran} ran</div></div>
  <div class="totals">
    <div class="bar" role="img" aria-label="status distribution">{bar}</div>
    <div class="chips" id="status-filters" role="toolbar" aria-label="filter by status"></div>
    {warn}{details}
  </div>
</section>"""


def render_html(results: dict, *, title: str = "specengine report") -> str:
    """The complete HTML document for a results dict."""
    summary = summary_of(results)
    cases = [c for c in results.get("cases", []) if isinstance(c, dict)]
    payload = {
        "run_id": results.get("run_id"),
        "summary": summary,
        "cases": cases,
        "derived": [_derived(c) for c in cases],
    }
    doc_title = f"{title} · {results.get('run_id')}" if results.get("run_id") else title
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="specengine">
<title>{html.escape(doc_title)}</title>
<style>{CSS}</style>
</head>
<body>
{_header(results, summary, title)}
<main>
  <section class="controls">
    <input id="search" type="search" placeholder="Search ids, suites, labels, reasons…  ( / )"
      aria-label="search cases">
    <label class="deep"><input id="deep" type="checkbox"> also search transcripts</label>
    <select id="suite" aria-label="filter by suite"><option value="">All suites</option></select>
    <select id="label" aria-label="filter by label"><option value="">All labels</option></select>
  </section>
  <table class="cases" id="cases">
    <thead><tr>
      <th data-sort="status" class="col-status">Status</th>
      <th data-sort="id">Case</th>
      <th data-sort="suite">Suite</th>
      <th>Labels</th>
      <th data-sort="trials" class="num">Trials</th>
      <th data-sort="duration" class="num">Time</th>
      <th>Why</th>
    </tr></thead>
    <tbody id="rows"></tbody>
  </table>
  <p class="empty" id="empty" hidden>No cases match these filters.</p>
  <nav class="pager" id="pager" aria-label="pages"></nav>
</main>
<div class="scrim" id="scrim" hidden></div>
<aside class="drawer" id="drawer" hidden tabindex="-1" aria-label="case details"></aside>
<noscript><p class="empty">This report needs JavaScript to list the cases.</p></noscript>
<script type="application/json" id="specengine-data">{embed_json(payload)}</script>
<script>{JS}</script>
</body>
</html>
"""


def write_html(results: dict, path: str | Path, *, title: str = "specengine report") -> Path:
    """Write the HTML report to `path` (parent folders are created); return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_html(results, title=title), encoding="utf-8", errors="replace")
    return p
