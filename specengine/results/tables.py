"""A run as a table: a pandas DataFrame for analysis, an HTML table for a notebook's display.

Both show one row per case: id, eval, status, trials passed, latency, tokens, and why a case did
not pass (its first failed gate, its error, or why it was skipped). Agent replies and check reasons
are untrusted text: the HTML escapes every value, and a notebook shows at most `HTML_ROWS` cases.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from specengine.results.decode_trials import error_text

if TYPE_CHECKING:
    import pandas

    from specengine.results.loaded import Case, Run

HTML_ROWS = 200
COLUMNS = ("id", "eval", "status", "passed_trials", "n_trials", "latency_s", "total_tokens", "why")


def case_row(case: Case) -> dict[str, Any]:
    """A case's row: the values every table of a run shows."""
    latencies = [trial.latency_s for trial in case.trials]
    return {
        "id": case.id,
        "eval": case.title,
        "status": case.status,
        "passed_trials": case.passed_trials,
        "n_trials": case.n_trials,
        "latency_s": sum(latencies) / len(latencies) if latencies else None,
        "total_tokens": case.usage.total_tokens if case.usage is not None else None,
        "why": why(case),
    }


def why(case: Case) -> str:
    """One line on why a case did not pass: its first failed gate and reason, its error, or why it was
    skipped; empty for a case that passed."""
    if case.status == "passed":
        return ""
    if case.status == "skipped":
        return case.skip_reason or "skipped"
    for check in case.trial_checks():
        if check.gate and check.status in ("failed", "error"):
            return f"{check.name}: {check.reason}" if check.reason else check.name
    if case.error:
        return error_text(case.error)
    for trial in case.trials:
        if trial.error:
            return f"{trial.error.get('type', 'error')}: {trial.error.get('message', '')}"
    return case.status


def data_frame(run: Run) -> pandas.DataFrame:
    """The run's cases as a DataFrame, one row each; ImportError says how to get pandas."""
    try:
        import pandas
    except ImportError:
        raise ImportError("Run.to_pandas() needs pandas: pip install pandas") from None
    return pandas.DataFrame([case_row(case) for case in run.cases], columns=list(COLUMNS))


def run_html(run: Run) -> str:
    """The run's summary line and a table of its first HTML_ROWS cases, every value escaped."""
    summary = run.summary
    rate = summary.pass_rate
    title = html.escape(run.run_id + (f" ({run.name})" if run.name else ""))
    head = (
        f"<p><b>specengine run {title}</b>: {summary.cases} cases, {summary.passed} passed, "
        f"{summary.failed} failed, {summary.errored} errored, {summary.skipped} skipped"
        + (f" ({rate:.1%} pass rate)" if rate is not None else "")
        + "</p>"
    )
    rows = []
    for case in run.cases[:HTML_ROWS]:
        row = case_row(case)
        cells = "".join(f"<td>{html.escape(_shown(row[column]))}</td>" for column in COLUMNS)
        rows.append(f"<tr>{cells}</tr>")
    more = len(run.cases) - HTML_ROWS
    tail = f"<p>… and {more} more cases (Run.to_pandas() has them all)</p>" if more > 0 else ""
    header = "".join(f"<th>{column}</th>" for column in COLUMNS)
    return f"{head}<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>{tail}"


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
