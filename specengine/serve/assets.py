"""The HTML report's stylesheet, served to the app's pages so both look alike from one file."""

from __future__ import annotations

from functools import cache


@cache
def report_stylesheet() -> str:
    from specengine.report.html_assets import CSS

    return CSS
