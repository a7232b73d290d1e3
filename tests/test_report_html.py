"""HTML report: one self-contained file, every case embedded, replies unable to break out of the data."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path

import pytest

from specengine.report.html import embed_json, render_html, write_html
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


@pytest.fixture
def results():
    return load_results(FIXTURES / "basic.json")


class _Scan(HTMLParser):
    """Collects every URL-bearing attribute and the raw text of each <script> element."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href", "action", "poster", "data"):
            if attrs.get(key):
                self.urls.append(attrs[key])
        if tag == "script":
            self._in_script = attrs
            self.scripts.append((attrs, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


def _scan(text: str) -> _Scan:
    scan = _Scan()
    scan.feed(text)
    return scan


def _data(text: str) -> dict:
    scripts = [body for attrs, body in _scan(text).scripts if attrs.get("type") == "application/json"]
    assert len(scripts) == 1
    return json.loads(scripts[0])


def test_self_contained(results, tmp_path):
    path = write_html(results, tmp_path / "sub" / "report.html")
    text = path.read_text(encoding="utf-8")
    scan = _scan(text)
    assert scan.urls == []  # no src/href at all: nothing is fetched
    assert not re.search(r"https?://", text.split('id="specengine-data"')[0])  # markup, CSS and scripts
    assert "@import" not in text and "url(" not in text
    assert len(scan.scripts) == 2  # the data block and the inline app; no <script src>
    assert all("src" not in attrs for attrs, _ in scan.scripts)


def test_embeds_every_case_with_transcripts(results):
    data = _data(render_html(results))
    assert [c["id"] for c in data["cases"]] == [c["id"] for c in results["cases"]]
    assert data["cases"][1]["trials"][0]["transcript"][1]["tool_calls"][0]["args"]["city"] == "London"
    assert data["derived"][1]["reason"].startswith('includes "Rain": reply does not contain "Rain"')
    assert data["derived"][4]["where"] == "specs/booking.yaml:9"
    assert data["summary"]["failed"] == 2


def test_replies_cannot_close_the_script(results):
    hostile = copy.deepcopy(results)
    reply = "</script><script>alert(1)</script><!-- <script> </SCRIPT >"
    hostile["cases"][0]["trials"][0]["transcript"][1]["content"] = reply
    text = render_html(hostile)
    start = text.index('id="specengine-data">')
    end = text.index("</script>", start)
    block = text[start:end]
    assert "<" not in block.split(">", 1)[1]  # no "<" at all inside the JSON block
    assert text.lower().count("</script") == 2  # only the two real closing tags
    assert _data(text)["cases"][0]["trials"][0]["transcript"][1]["content"] == reply


@pytest.mark.parametrize(("asset", "closing_tag"), [("report.css", "</style"), ("report.js", "</script")])
def test_inlined_assets_cannot_close_their_element(asset, closing_tag):
    text = (files("specengine.report") / "assets" / asset).read_text(encoding="utf-8")
    assert text.strip()
    assert closing_tag not in text.lower()  # inlined as they are, so this would end the element early
    assert text in render_html({"cases": []})


def test_embed_json_escapes_and_survives_nan():
    assert embed_json({"a": "</script>&"}) == '{"a":"\\u003c/script\\u003e\\u0026"}'
    assert json.loads(embed_json({"x": float("nan"), "y": [float("inf")]})) == {"x": None, "y": [None]}


def test_header_shows_rate_counts_run_and_config(results):
    text = render_html(results | {"config": "staging"})
    assert '<div class="big" id="pass-rate">40.0%</div>' in text
    assert "2 of 5 ran" in text
    assert 'run <span class="mono">a1b2c3d4</span>' in text
    assert 'config <span class="mono">staging</span>' in text
    assert "took 33.9 s" in text
    assert "<title>specengine report · a1b2c3d4</title>" in text


def test_header_text_is_escaped(results):
    hostile = copy.deepcopy(results)
    hostile["run_id"] = "<img src=x onerror=alert(1)>"
    text = render_html(hostile)
    assert "<img" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_size_grows_linearly():
    def make(n):
        cases = [
            {"id": f"s.yaml::e{i}", "status": "passed", "trials": [{"status": "passed",
             "transcript": [{"role": "assistant", "content": "x" * 200}], "checks": []}]}
            for i in range(n)
        ]  # fmt: skip
        return len(render_html({"cases": cases}).encode())

    small, large = make(100), make(1000)
    per_case = (large - small) / 900
    assert per_case < 600
    assert make(2000) - large == pytest.approx(1000 * per_case, rel=0.05)
