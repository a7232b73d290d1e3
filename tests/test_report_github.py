"""GitHub annotations: escaped exactly like @actions/core and pointing at the failing check's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from specengine.report.github import annotation_lines, diagnostic_annotation, escape_data, escape_property
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


@pytest.fixture
def results():
    return load_results(FIXTURES / "basic.json")


def test_escaping_matches_actions_core():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("weather: polite, concise") == "weather%3A polite%2C concise"
    assert escape_property("a%b\nc") == "a%25b%0Ac"
    # The documented example from the research notes, rebuilt from its parts.
    line = diagnostic_annotation(
        "specs/weather.yaml", 12, 7, "closedQA score 0.40 < 0.70\nrationale: too vague"
    )
    assert line == (
        "::error file=specs/weather.yaml,line=12,col=7,title=specengine validate::"
        "closedQA score 0.40 < 0.70%0Arationale: too vague"
    )


def test_every_failed_gate_is_annotated_at_its_check_line(results):
    lines = annotation_lines(results)
    assert len(lines) == 4  # two gates of rain in london, the errored case, the booking row
    first, second, error, booking = lines
    assert first.startswith(
        "::error file=specs/weather.yaml,line=35,"
        'title=specs/weather.yaml%3A%3Arain in london%3A includes "Rain"::'
    )
    assert second.startswith("::error file=specs/weather.yaml,line=36,")
    assert second.endswith(
        "::closedQA score 0.40 < 0.70"
        "%0Arationale: The reply | mentions @octocat%0Abut gives <b>no</b> temperature."
    )
    assert error == (
        "::error file=specs/weather.yaml,line=44,title=specs/weather.yaml%3A%3Atimeout%3A error"
        "::timeout: no reply within 30 s (trial timeout)"
    )
    assert booking.startswith("::error file=specs/booking.yaml,line=14,")
    assert booking.endswith(
        '::args.people: expected 2, got "two" (failed in 2 of 3 trials)'
        '%0Aexpected: {"people": 2}%0Agot: {"people": "two"}'
    )


def test_annotations_are_single_lines_without_control_characters(results):
    for line in annotation_lines(results):
        assert "\n" not in line and "\r" not in line
        assert not any(ord(ch) < 32 for ch in line), repr(line)
        head, _, message = line[2:].partition("::")
        title = head.split("title=", 1)[1]
        assert "," not in title and ":" not in title  # escaped, so GitHub cannot cut the title short
        assert message


def test_passed_and_soft_checks_are_not_annotated(results):
    text = "\n".join(annotation_lines(results))
    assert "sunny in paris" not in text
    assert "polite" not in text


def test_path_prefix_makes_paths_repo_relative(results):
    assert annotation_lines(results, path_prefix="evals/")[0].startswith(
        "::error file=evals/specs/weather.yaml,line=35,"
    )


def test_limit_ends_with_a_notice(results):
    lines = annotation_lines(results, limit=2)
    assert len(lines) == 3
    assert lines[-1] == "::notice::2 more failures are not annotated; see the full report"


def test_failed_case_without_check_details_is_annotated_at_the_eval_line():
    results = {"cases": [{"id": "s.yaml::x", "spec": "s.yaml", "line": 3, "status": "failed", "n_trials": 2,
                          "passed_trials": 1}]}  # fmt: skip
    assert annotation_lines(results) == [
        "::error file=s.yaml,line=3,title=s.yaml%3A%3Ax::1 of 2 trials passed"
    ]
