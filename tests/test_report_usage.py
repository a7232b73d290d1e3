"""The agent's token usage in every report: the console summary line, JUnit properties, the Markdown
summary, the HTML page, and merged shards; absent wherever the server reported nothing."""

from __future__ import annotations

import copy
import io
import json
import re
import xml.etree.ElementTree as ET

from rich.console import Console
from test_report_browser import browser  # noqa: F401 - the headless Chromium fixture

from specengine.report.console import FailureLog, print_report
from specengine.report.facts import summary_of
from specengine.report.html import render_html, write_html
from specengine.report.junit import build_junit
from specengine.report.markdown import render_markdown
from specengine.report.merge import merge


def case(case_id: str, suite: str, usage: dict | None) -> dict:
    found = {
        "id": case_id,
        "suite": suite,
        "spec": f"specs/{suite}.yaml",
        "eval": case_id.split("::")[-1],
        "line": 3,
        "row": None,
        "labels": [],
        "status": "passed",
        "error": None,
        "passed_trials": 1,
        "n_trials": 1,
        "pass_at_k": True,
        "pass_hat_k": True,
        "trials": [{"status": "passed", "latency_s": 0.1, "error": None, "transcript": [], "checks": []}],
        "checks": [],
    }
    if usage is not None:
        found["usage"] = usage
        found["trials"][0]["usage"] = usage
        found["trials"][0]["transcript"] = [
            {"role": "user", "content": "Refund my order"},
            {"role": "assistant", "content": "Refunded.", "usage": usage},
        ]
    return found


RESULTS = {
    "run_id": "a1b2c3d4",
    "started_at": "2026-11-30T12:00:00Z",
    "summary": {
        "cases": 3,
        "passed": 3,
        "failed": 0,
        "errored": 0,
        "skipped": 0,
        "gates_skipped": 0,
        "duration_s": 1.0,
    },
    "cases": [
        case(
            "specs/orders.yaml::refund",
            "orders",
            {"input_tokens": 1000, "output_tokens": 234, "total_tokens": 1234},
        ),
        case(
            "specs/orders.yaml::status",
            "orders",
            {"input_tokens": 40, "output_tokens": 10, "total_tokens": 50},
        ),
        case("specs/weather.yaml::paris", "weather", None),  # its server reported nothing
    ],
}
SHOWN = "1,284 tokens (1,040 in, 244 out)"


def test_the_summary_sums_the_cases_usage():
    assert summary_of(RESULTS)["usage"] == {"input_tokens": 1040, "output_tokens": 244, "total_tokens": 1284}
    silent = {**RESULTS, "cases": RESULTS["cases"][2:]}
    assert "usage" not in summary_of(silent)


def test_the_console_summary_line_shows_the_tokens():
    console = Console(file=io.StringIO(), record=True, width=300, color_system=None)
    print_report(console, summary_of(RESULTS), FailureLog(), None)
    [line] = [line for line in console.export_text().splitlines() if " passed, " in line]
    assert line.endswith(f" · {SHOWN}")
    quiet = Console(file=io.StringIO(), record=True, width=300, color_system=None)
    print_report(quiet, RESULTS["summary"], FailureLog(), None)
    assert "tokens" not in quiet.export_text()


def properties(element: ET.Element | None) -> dict[str, str]:
    assert element is not None
    return {prop.get("name", ""): prop.get("value", "") for prop in element.iter("property")}


def test_junit_carries_tokens_as_properties_of_cases_and_suites():
    root = build_junit(RESULTS)
    orders, weather = root.findall("testsuite")
    assert properties(orders.find("properties")) == {
        "run_id": "a1b2c3d4",
        "input_tokens": "1040",
        "output_tokens": "244",
        "total_tokens": "1284",
    }
    assert properties(weather.find("properties")) == {"run_id": "a1b2c3d4"}
    refund = orders.findall("testcase")[0]
    assert properties(refund.find("properties")) == {
        "input_tokens": "1000",
        "output_tokens": "234",
        "total_tokens": "1234",
    }
    assert weather.find("testcase/properties") is None


def test_markdown_shows_the_tokens_among_the_facts():
    text = render_markdown(RESULTS)
    assert SHOWN in text.splitlines()[2]
    assert "tokens" not in render_markdown({**RESULTS, "cases": RESULTS["cases"][2:]})


def test_html_shows_the_tokens_in_the_header_and_each_case():
    page = render_html(RESULTS)
    assert f"used {SHOWN}" in page
    data = json.loads(re.search(r'id="specengine-data">(.*?)</script>', page, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert [derived["tokens"] for derived in data["derived"]] == [
        "1,234 tokens (1,000 in, 234 out)",
        "50 tokens (40 in, 10 out)",
        None,
    ]


def test_merged_shards_sum_the_usage_of_their_cases():
    first, second = copy.deepcopy(RESULTS), copy.deepcopy(RESULTS)
    first["cases"], second["cases"] = RESULTS["cases"][:1], RESULTS["cases"][1:]
    first["summary"]["usage"] = {"total_tokens": 1}  # a stale summary is recomputed from the cases
    merged = merge([first, second])
    assert merged["summary"]["usage"] == {"input_tokens": 1040, "output_tokens": 244, "total_tokens": 1284}


def test_the_page_shows_a_case_s_tokens_and_each_reply_s(browser, tmp_path):  # noqa: F811
    path = write_html(RESULTS, tmp_path / "report.html")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri() + "#case=" + "specs%2Forders.yaml%3A%3Arefund")
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    assert "Tokens1,234 tokens (1,000 in, 234 out)" in drawer.locator("dl.facts").inner_text().replace(
        "\n", ""
    )
    assert drawer.locator(".transcript .msg.assistant .tokens").inner_text() == "1,234 tokens"
    assert errors == []
    context.close()
