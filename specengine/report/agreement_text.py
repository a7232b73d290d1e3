"""The agreement report as `specengine agreement` prints it."""

from __future__ import annotations

from specengine.report.facts import format_rate, plain_text
from specengine.review.agreement import Agreement, AgreementReport


def _table(a: Agreement, indent: str = "  ") -> list[str]:
    return [
        f"{indent}{'':14}{'human passed':>14}{'human failed':>14}",
        f"{indent}{'judge passed':14}{a.both_passed:>14}{a.judge_passed_human_failed:>14}",
        f"{indent}{'judge failed':14}{a.judge_failed_human_passed:>14}{a.both_failed:>14}",
    ]


def agreement_text(report: AgreementReport, *, max_items: int = 50) -> str:
    overall = report.overall
    if not overall.reviewed:
        return (
            "no reviewed judge verdicts yet: open a case in `specengine serve` and review its judge check\n"
        )
    lines = [
        f"judges against people: {overall.reviewed} reviewed verdict{'s' if overall.reviewed != 1 else ''},"
        f" agreement {format_rate(overall.rate)}, Cohen's kappa {overall.kappa_text}",
        *_table(overall),
        "",
        "per judge check:",
    ]
    for a in report.per_check:
        where = f"{a.spec}:{a.line}" if a.line else str(a.spec)
        lines.append(
            f"  {where}  {plain_text(a.check)}: {a.reviewed} reviewed, agreement {format_rate(a.rate)},"
            f" kappa {a.kappa_text}"
        )
    if overall.disagreements:
        lines += ["", f"disagreements ({len(overall.disagreements)}):"]
        for d in overall.disagreements[:max_items]:
            note = f"  “{plain_text(d.note)}”" if d.note else ""
            lines.append(
                f"  run {d.run}  {plain_text(d.case)}  {plain_text(d.check)}: judge {d.judge},"
                f" {plain_text(d.reviewer)} says {d.human}{note}"
            )
        if len(overall.disagreements) > max_items:
            lines.append(f"  … and {len(overall.disagreements) - max_items} more")
    return "\n".join(lines) + "\n"
