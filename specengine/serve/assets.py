"""The HTML report's stylesheet, served to the app's pages so both look alike from one file."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def report_stylesheet() -> str:
    return (files("specengine.report") / "assets" / "report.css").read_text(encoding="utf-8")
