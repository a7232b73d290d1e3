"""JUnit XML: parses even when replies hold control characters; counts, lines and reasons are right."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from specengine.report.junit import render_junit, write_junit
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


@pytest.fixture
def results():
    return load_results(FIXTURES / "basic.json")


def _case(root, name):
    found = [tc for tc in root.iter("testcase") if tc.get("name") == name]
    assert len(found) == 1, name
    return found[0]


def test_writes_a_file_that_parses(results, tmp_path):
    path = write_junit(results, tmp_path / "out" / "junit.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "6",
        "2",
        "1",
        "1",
    )


def test_control_characters_never_break_the_xml(results):
    # The fixture's reply holds ESC colour codes, a NUL byte and "</script>"; add every C0 control.
    hostile = copy.deepcopy(results)
    nasty = "".join(chr(i) for i in range(32)) + "\x7f\ud800 end"
    failing = hostile["cases"][1]
    failing["trials"][0]["checks"][0]["reason"] = nasty
    failing["trials"][0]["transcript"][1]["content"] = nasty
    failing["id"] = "specs/weather.yaml::rain\x1b[1m in\x00 london"
    text = render_junit(hostile)
    root = ET.fromstring(text.encode("utf-8"))
    failure = root.find(".//testcase/failure")
    assert failure is not None
    assert "\x1b" not in text and "\x00" not in text
    assert "end" in failure.text
    assert any(tc.get("name") == "specs/weather.yaml::rain in\ufffd london" for tc in root.iter("testcase"))


def test_one_testsuite_per_suite(results):
    root = ET.fromstring(render_junit(results))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["weather", "booking"]
    weather = suites["weather"]
    assert (weather.get("tests"), weather.get("failures"), weather.get("errors"), weather.get("skipped")) == (
        "4",
        "1",
        "1",
        "1",
    )
    assert weather.get("file") == "specs/weather.yaml"
    assert weather.find("properties/property").get("value") == "a1b2c3d4"


def test_testcase_attributes(results):
    root = ET.fromstring(render_junit(results))
    tc = _case(root, "specs/weather.yaml::sunny in paris")
    assert tc.get("classname") == "weather"
    assert tc.get("file") == "specs/weather.yaml"
    assert tc.get("line") == "18"  # 1-based, as in the spec file
    assert tc.get("time") == "0.410"
    assert list(tc) == []  # passed: no child elements


def test_failure_lists_failed_gates_with_file_line_reason_and_rationale(results):
    root = ET.fromstring(render_junit(results))
    failure = _case(root, "specs/weather.yaml::rain in london").find("failure")
    assert failure.get("type") == "includes"
    assert failure.get("message").startswith(
        '2 checks failed; first: includes "Rain" (specs/weather.yaml:35)'
    )
    text = failure.text
    assert 'specs/weather.yaml:35: includes "Rain" (turn 1): reply does not contain "Rain"' in text
    assert "specs/weather.yaml:36: states the weather (turn 1): closedQA score 0.40 < 0.70" in text
    assert "rationale: The reply | mentions @octocat" in text
    assert "called_tool get_weather" not in text  # passed checks are not listed
    out = _case(root, "specs/weather.yaml::rain in london").find("system-out").text
    assert "[user] Will it rain in London?" in out
    assert 'get_weather({"city": "London", "note": "</script>"})' in out


def test_soft_check_failure_does_not_fail_the_case(results):
    root = ET.fromstring(render_junit(results))
    assert _case(root, "specs/weather.yaml::sunny in paris").find("failure") is None


def test_multi_trial_failure_says_in_how_many_trials(results):
    root = ET.fromstring(render_junit(results))
    failure = _case(root, "specs/booking.yaml::book a table[alice]").find("failure")
    assert "(failed in 2 of 3 trials)" in failure.get("message")
    assert "1 of 3 trials passed" in failure.text
    assert '  expected: {"people": 2}\n  got:      {"people": "two"}' in failure.text
    assert failure.get("type") == "called_tool_with"


def test_error_and_skipped(results):
    root = ET.fromstring(render_junit(results))
    error = _case(root, "specs/weather.yaml::timeout").find("error")
    assert error.get("type") == "timeout"
    assert error.get("message") == "no reply within 30 s (trial timeout)"
    skipped = _case(root, "specs/weather.yaml::later").find("skipped")
    assert skipped.get("message") == "waiting for the forecast tool"


def test_error_from_a_check_names_the_check_and_its_reason():
    check = {
        "name": "judge closed_qa",
        "matcher": "judge",
        "line": 14,
        "turn": 1,
        "gate": True,
        "status": "error",
        "score": None,
        "reason": "judge HTTP 429 after 3 attempts: slow down",
    }
    case = {
        "id": "specs/a.yaml::polite",
        "spec": "specs/a.yaml",
        "line": 10,
        "status": "error",
        "error": None,
        "trials": [{"status": "error", "error": None, "checks": [check]}],
        "checks": [check],
    }
    error = _case(ET.fromstring(render_junit({"cases": [case]})), "specs/a.yaml::polite").find("error")
    assert "judge closed_qa" in error.get("message")
    assert "specs/a.yaml:14" in error.get("message")
    assert "429" in error.text


def test_tolerates_minimal_cases():
    results = {"cases": [{"id": "a.yaml::x", "status": "failed"}, {"id": "a.yaml::y", "status": "skipped"}]}
    root = ET.fromstring(render_junit(results))
    tc = _case(root, "a.yaml::x")
    assert tc.get("classname") == "a.yaml"
    assert tc.get("line") is None
    assert tc.find("failure") is not None
    assert _case(root, "a.yaml::y").find("skipped").get("message") == "skipped"


def test_round_trips_through_json(results, tmp_path):
    # What run writes (json.dumps of the dict) and what report reads must give the same XML.
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results))
    assert render_junit(load_results(path)) == render_junit(results)


def test_transcript_shows_conversation_resets(results):
    failing = copy.deepcopy(results)
    bob = failing["cases"][5]
    bob["status"] = "failed"
    out = _case(ET.fromstring(render_junit(failing)), bob["id"]).find("system-out").text
    assert "[assistant] Booked.\n  -> book_table" in out
    assert "--- reset: a new conversation starts ---\n[user] New chat: book for 3" in out
