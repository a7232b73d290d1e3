"""Reviews, judge agreement and the app's plain rules, without a server: the store, verdicts read in
another run, Cohen's kappa against published figures, CSV cells, the Host/Origin policy, the
history strip's flaky mark, spec paths of a rerun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specengine.errors import ReviewError
from specengine.results.decode import read_case
from specengine.review.agreement import Agreement, JudgeVerdict, measure_agreement
from specengine.review.fingerprint import transcript_fingerprint
from specengine.review.store import Review, ReviewStore, human_passed, new_review
from specengine.review.verdicts import by_target, reviews_for_case

CASE = {
    "id": "a.yaml::e",
    "status": "failed",
    "checks": [
        {"name": "judge closed_qa", "matcher": "judge", "status": "failed"},
        {"name": "skipped one", "matcher": "judge", "status": "skipped"},
    ],
    "trials": [{"transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Rain"}]}],
}


def _review(case=CASE, check=None, verdict="incorrect", run="r1", note=""):
    return new_review(read_case(case), run=run, check=check, verdict=verdict, note=note, reviewer="Ann")


def test_the_store_appends_one_line_per_review_and_survives_a_torn_line(tmp_path):
    store = ReviewStore(tmp_path)
    assert store.reviews() == [] and store.stamp() is None
    first = store.append(_review(note="rain is weather"))
    with store.path.open("ab") as log:
        log.write(b'{"run": "r1", "case": "a.y')  # a crash mid-line
    second = store.append(_review(check="judge closed_qa", verdict="correct"))
    assert store.reviews() == [first, second]
    lines = store.path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == first.as_dict() and json.loads(lines[-1]) == second.as_dict()
    store.path.write_text(
        store.path.read_text() + '["not a review"]\n{"verdict": "maybe"}\n', encoding="utf-8"
    )
    assert store.reviews() == [first, second]


def test_a_review_records_what_was_read_and_what_the_engine_said():
    review = _review(check="judge closed_qa", note="  fine  ")
    assert (review.engine, review.verdict, review.note, review.human_passed) == (
        "failed",
        "incorrect",
        "fine",
        True,
    )
    assert review.transcript == transcript_fingerprint(read_case(CASE)) and review.at.endswith("Z")
    assert Review.from_dict(review.as_dict()) == review


@pytest.mark.parametrize(
    ("check", "verdict", "case", "words"),
    [
        (None, "maybe", CASE, "verdict must be one of correct, incorrect"),
        ("nope", "correct", CASE, "has no check named 'nope'"),
        ("skipped one", "correct", CASE, "this check was skipped"),
        (None, "correct", {**CASE, "status": "skipped"}, "this case was skipped"),
    ],
)
def test_reviews_that_cannot_stand_are_refused(check, verdict, case, words):
    with pytest.raises(ReviewError, match=words):
        _review(case=case, check=check, verdict=verdict)


@pytest.mark.parametrize(
    ("engine", "verdict", "passed"),
    [("passed", "correct", True), ("passed", "incorrect", False), ("failed", "correct", False),
     ("failed", "incorrect", True), ("error", "incorrect", True), ("error", "correct", False)],
)  # fmt: skip
def test_the_human_outcome(engine, verdict, passed):
    assert human_passed(engine, verdict) is passed


def test_the_fingerprint_follows_what_a_person_reads_only():
    same = {
        "trials": [
            {
                "transcript": [
                    {"content": "hi", "role": "user", "latency_s": 3},
                    {"role": "assistant", "content": "Rain"},
                ]
            }
        ]
    }
    other = {
        "trials": [
            {"transcript": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sun"}]}
        ]
    }
    assert (
        transcript_fingerprint(read_case(same))
        == transcript_fingerprint(read_case(CASE))
        != transcript_fingerprint(read_case(other))
    )


def test_a_review_reads_against_the_engine_of_each_run():
    review = _review()  # the engine said failed; the person says it should pass
    grouped = by_target([review])
    regraded_to_pass = {**CASE, "status": "passed"}
    assert reviews_for_case(read_case(CASE), grouped).case.verdict == "incorrect"
    assert reviews_for_case(read_case(regraded_to_pass), grouped).case.verdict == "correct"
    other_reply = {**CASE, "trials": [{"transcript": [{"role": "assistant", "content": "Sun"}]}]}
    assert reviews_for_case(read_case(other_reply), grouped) is None


def _verdict(case, status, run="r1", at="2024-01-01T00:00:00Z", check="j", transcript="t"):
    return JudgeVerdict(run, at, case, "a.yaml", check, 3, status, transcript)


def _human(case, engine, verdict, check="j", transcript="t"):
    return Review("r1", case, check, verdict, "", "Ann", "2024", engine, transcript, case + check)


def test_kappa_matches_the_textbook_example():
    # 50 items: both yes 20, judge yes / human no 5, judge no / human yes 10, both no 15:
    # observed .7, chance .5, kappa .4
    table = Agreement(None, None, None, 20, 5, 10, 15)
    assert table.rate == pytest.approx(0.7) and table.kappa == pytest.approx(0.4)
    # Cohen (1960) style: perfect agreement is 1, agreement no better than chance is 0
    assert Agreement(None, None, None, 10, 0, 0, 10).kappa == pytest.approx(1.0)
    assert Agreement(None, None, None, 25, 25, 25, 25).kappa == pytest.approx(0.0)
    assert Agreement(None, None, None, 7, 0, 0, 0).kappa is None  # one answer throughout: undefined
    assert Agreement(None, None, None).rate is None and Agreement(None, None, None).kappa is None


def test_agreement_counts_each_reviewed_reply_once_from_the_newest_run():
    verdicts = [
        _verdict("c1", "failed", run="old", at="2024-01-01T00:00:00Z"),
        _verdict("c1", "passed", run="new", at="2024-02-01T00:00:00Z"),  # regraded with a better judge
        _verdict("c2", "failed"),
        _verdict("c3", "error"),  # no verdict: left out
        _verdict("c4", "passed"),  # nobody reviewed it
    ]
    reviews = [
        _human("c1", "failed", "incorrect"),
        _human("c2", "failed", "correct"),
        _human("c3", "error", "correct"),
    ]
    report = measure_agreement(verdicts, reviews)
    overall = report.overall
    assert (
        overall.both_passed,
        overall.judge_passed_human_failed,
        overall.judge_failed_human_passed,
        overall.both_failed,
    ) == (1, 0, 0, 1)
    assert overall.disagreements == () and overall.rate == 1.0
    assert [(a.spec, a.line, a.check, a.reviewed) for a in report.per_check] == [("a.yaml", 3, "j", 2)]
    older = measure_agreement(verdicts[:1] + verdicts[2:], reviews).overall
    assert [(d.case, d.judge, d.human) for d in older.disagreements] == [("c1", "failed", "passed")]


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised():
    from specengine.serve.export import neutralise

    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
        assert neutralise(text) == "'" + text
    assert neutralise("plain = text") == "plain = text" and neutralise(None) == ""


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("127.0.0.1:8765", True), ("localhost:8765", True), ("[::1]:8765", True), ("LOCALHOST:8765", True),
     ("10.1.2.3:8765", True), ("127.0.0.1:8766", False), ("127.0.0.1", False), ("evil.example:8765", False),
     ("localhost.evil.example:8765", False), ("", False), (None, False), ("[::1:8765", False)],
)  # fmt: skip
def test_only_ip_addresses_and_our_own_names_are_our_host(host, allowed):
    from specengine.serve.security import HostPolicy

    assert HostPolicy(8765, ("127.0.0.1",)).host_allowed(host) is allowed


def test_origins_must_be_this_server_under_the_host_in_use():
    from specengine.serve.security import HostPolicy

    policy = HostPolicy(8765, ("127.0.0.1",))
    assert policy.origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert not policy.origin_allowed("http://localhost:8765", "127.0.0.1:8765")
    assert not policy.origin_allowed("https://127.0.0.1:8765", "127.0.0.1:8765")
    assert not policy.origin_allowed("http://evil.example:8765", "evil.example:8765")


def test_a_case_flips_only_with_the_spec_unchanged():
    from specengine.serve.views import case_history

    def row(run, status, shape="s", passed=1, n=1):
        return {"run_id": run, "name": run, "started_at": run, "status": status, "shape": shape,
                "passed_trials": passed, "n_trials": n}  # fmt: skip

    steady = case_history([row("1", "passed"), row("2", "passed"), row("3", "skipped"), row("4", "passed")])
    assert not steady.flaky
    changed_spec = case_history([row("1", "passed"), row("2", "failed", shape="t")])
    assert not changed_spec.flaky
    flips = case_history([row("1", "passed"), row("2", "error"), row("3", "passed")], current="2")
    assert not flips.flaky and flips.label == "regressed"  # seen from run 2: one change
    assert [e.flipped for e in flips.entries] == [False, True, True]
    assert (flips.previous.run_id, flips.next.run_id) == ("1", "3")
    assert case_history([row("1", "passed"), row("2", "error"), row("3", "passed")]).flaky  # two changes
    assert case_history([row("1", "failed"), row("2", "passed"), row("3", "passed")]).label == "fixed"
    assert case_history([row("1", "failed", passed=1, n=3)]).flaky  # split across trials
    # Only the last 10 runs with the same checks count: two old changes have aged out.
    old = [row("1", "passed"), row("2", "failed"), row("3", "passed")]
    steady_since = [row(str(n), "passed") for n in range(4, 14)]
    assert case_history(old + steady_since).label is None
    assert case_history(old + steady_since[:8]).label == "fixed"  # the last change still in the window
    # A changed spec starts a new history: one change under each set of checks is no flakiness.
    assert case_history([row("1", "passed"), row("2", "failed"), row("3", "passed", shape="t"),
                         row("4", "failed", shape="t")]).label == "regressed"  # fmt: skip


def test_a_rerun_never_names_a_file_outside_the_project(tmp_path):
    from specengine.errors import RerunError
    from specengine.serve.jobs import _safe_spec, file_stem

    assert _safe_spec(tmp_path, "specs/a.yaml") == str(Path("specs/a.yaml"))
    for bad in ("../a.yaml", "/etc/passwd", "specs/../../a.yaml", ""):
        with pytest.raises(RerunError):
            _safe_spec(tmp_path, bad)
    assert file_stem("../../etc/x") == "______etc_x" and file_stem("a1b2c3d4") == "a1b2c3d4"
    assert file_stem("") == "run" and "/" not in file_stem("é/..")


def test_the_pass_rate_chart_has_a_dot_per_run_that_ran():
    from specengine.serve.charts import RatePoint, pass_rate_chart

    assert pass_rate_chart([RatePoint("a", "a", "2024-01-01", None)]) is None
    chart = pass_rate_chart(
        [
            RatePoint("a", "a", "2024-01-01T00:00Z", 1.0),
            RatePoint("b", "b", "2024-01-02", None),
            RatePoint("c", "c", "2024-01-03", 0.0),
        ]
    )
    assert [d.run_id for d in chart.dots] == ["a", "c"]
    assert chart.dots[0].y < chart.dots[1].y and chart.line.startswith("M") and chart.first == "2024-01-01"
    assert [(t.date, t.time, t.anchor) for t in chart.ticks] == [  # every 12 hours, the ends inside
        ("Jan 1", "00:00", "start"),
        ("", "12:00", "middle"),
        ("Jan 2", "00:00", "middle"),
        ("", "12:00", "middle"),
        ("Jan 3", "00:00", "end"),
    ]
    times = ("2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z", "2024-01-11T00:00:00Z")
    spaced = pass_rate_chart([RatePoint(n, n, t, 1.0) for n, t in zip("abc", times, strict=True)])
    a, b, c = (dot.x for dot in spaced.dots)
    assert (b - a) / (c - a) == pytest.approx(1 / 240, abs=0.002)  # an hour in ten days: its share
    assert [(t.date, t.time) for t in spaced.ticks] == [(f"Jan {d}", "") for d in (2, 4, 6, 8, 10)]
    same_day = pass_rate_chart([RatePoint(n, n, f"2024-01-01T0{i}:00Z", 1.0) for i, n in enumerate("abc")])
    assert [t.date for t in same_day.ticks] == ["Jan 1", "", "", "", ""]  # named once
    assert [t.time for t in same_day.ticks] == ["00:00", "00:30", "01:00", "01:30", "02:00"]

    def anchors(*started: str) -> list[tuple[str, str]]:
        chart = pass_rate_chart([RatePoint(str(n), "r", t, 1.0) for n, t in enumerate(started)])
        return [(t.time, t.anchor) for t in chart.ticks]

    # runs minutes apart, as a suite's runs may be: round minutes between them are centred, the
    # first and last runs' own times (no two round minutes between) sit inside the chart's ends
    assert anchors("2026-12-07T06:14:50Z", "2026-12-07T06:16:10Z") == [
        ("06:15", "middle"),
        ("06:16", "middle"),
    ]
    assert anchors("2026-12-07T06:15:50Z", "2026-12-07T06:16:10Z") == [
        ("06:15", "start"),
        ("06:16", "end"),
    ]
    assert anchors("2026-12-07T06:15:00Z", "2026-12-07T06:17:00Z")[::2] == [
        ("06:15", "start"),
        ("06:17", "end"),
    ]
    # runs that started together: one tick, under their dots in the middle, centred
    assert anchors("2026-12-07T06:15:03Z", "2026-12-07T06:15:03Z") == [("06:15", "middle")]


def test_the_time_axis_labels_round_moments_of_any_span():
    from specengine.serve.time_axis import MAX_LABELS, labels, places

    def words(*started: str) -> list[tuple[str, str]]:
        found = labels(started)
        assert len(found) <= MAX_LABELS and [f.at for f in found] == sorted(f.at for f in found)
        return [(f.date, f.time) for f in found]

    seconds = ("2026-12-07T06:15:03Z", "2026-12-07T06:15:09Z")  # no round moment between: the ends
    assert words(*seconds) == [("Dec 7", "06:15:03"), ("", "06:15:09")]
    assert words("2024-12-20T00:00:00Z", "2025-01-20T00:00:00Z") == [  # weeks; the year where it changes
        ("Dec 23", "2024"), ("Dec 30", ""), ("Jan 6", "2025"), ("Jan 13", ""), ("Jan 20", "")
    ]  # fmt: skip
    assert words("2024-03-01T00:00:00Z", "2024-11-03T00:00:00Z")[:2] == [("Mar", "2024"), ("May", "")]
    assert words("2026-12-07T06:15:03Z", "2099-01-01T00:00:00Z") == [("2040", ""), ("2060", ""), ("2080", "")]
    assert places(["2024-01-01T10:00:00Z"]) == [0.5] and labels(["2024-01-01T10:00:00Z"])[0].at == 0.5
    assert places(["x", "y", "z"]) == [0, 0.5, 1]  # an unreadable time: by rank, as written
    assert words("x", "y", "y") == [("x", ""), ("y", ""), ("", "")]  # a day named once


def test_reruns_and_runs_of_fewer_specs_are_partial_and_off_the_line():
    from specengine.serve.charts import RatePoint, mark_partial, pass_rate_chart

    def point(run, specs, cases, rate=0.5):
        return RatePoint(run, run, f"2024-01-0{run}T10:00:00Z", rate, frozenset(specs), cases)

    marked = mark_partial(
        [
            point("1", {"a", "b"}, 30),
            point("2", {"a"}, 2, rate=0.0),  # a rerun of 2 failed cases
            point("3", {"a"}, 20),  # one spec of two
            point("4", {"a", "b"}, 30),
            point("5", {"a", "b", "c"}, 31),  # a spec added: full
            point("6", {"a", "b", "c"}, 31),
        ]
    )
    assert [p.full for p in marked] == [True, False, False, True, True, True]
    chart = pass_rate_chart(marked)
    assert chart is not None and chart.partial == 2 and chart.line.count("L") == 3
    assert [d.full for d in chart.dots] == [True, False, False, True, True, True]
    hidden = pass_rate_chart(marked, show_partial=False)
    assert hidden is not None and len(hidden.dots) == 4 and hidden.partial == 2


def test_the_new_commands_start_without_the_web_stack():
    import subprocess
    import sys

    from support.cli import REPO_ROOT

    code = (
        "import sys\n"
        "from specengine.cli import app\n"
        "for args in (['serve', '--help'], ['query', '--help'], ['agreement', '--help']):\n"
        "    try:\n"
        "        app(args, prog_name='specengine')\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ('starlette', 'uvicorn', 'sqlite3', 'jinja2', 'httpx', 'rich')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO_ROOT)},
    )
    assert "LOADED []" in done.stderr, done.stderr
    assert "specengine serve" in done.stdout or "Usage:" in done.stdout
