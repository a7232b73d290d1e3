"""One pull-request comment per title, created once and then edited in place.

The comment starts with a hidden marker naming its title; the next run finds the comment by that
marker (on any page of the pull request's comments) and edits it, so a pull request never collects
a comment per push. The body is the Markdown summary (report/markdown.py) with the comparison to the
baseline, and a link to the workflow run; GitHub refuses a body over 65,536 characters, so a long
one is rendered with shorter tables and, if still too long, cut at a line with a last line that
says what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.github.api import GitHubAPI
from specengine.report.compare import Comparison
from specengine.report.markdown import MAX_ROWS, render_markdown

MAX_BODY = 65_536  # GitHub's limit on an issue comment's body, in characters
_ROWS_TRIED = (MAX_ROWS, 20, 5)
_UNSAFE_IN_MARKER = re.compile(r"-{2,}|[<>\n\r]")


def marker(title: str) -> str:
    """The hidden first line that names the comment: an HTML comment GitHub does not show."""
    return f"<!-- specengine-comment: {_UNSAFE_IN_MARKER.sub(' ', title).strip()} -->"


def comment_body(
    results: dict, comparison: Comparison | None, title: str, run_url: str | None, limit: int = MAX_BODY
) -> str:
    """The comment's whole body, at most `limit` characters."""
    head = marker(title) + "\n"
    tail = f"\n[Workflow run]({run_url}) · specengine\n" if run_url else "\n"
    room = limit - len(head) - len(tail)
    summary = ""
    for rows in _ROWS_TRIED:
        summary = render_markdown(results, comparison, max_rows=rows, title=title)
        if len(summary) <= room:
            return head + summary + tail
    return head + _cut(summary, room, run_url) + tail


def _cut(text: str, room: int, run_url: str | None) -> str:
    """`text` cut at a line so that it and a closing line fit in `room` characters."""
    lines = text.splitlines()
    where = f"; the full summary is on [the workflow run]({run_url})" if run_url else ""
    kept: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        note = (
            f"\n\n_… {len(lines) - index} more lines ({len(text) - size:,} characters) left out to fit "
            f"GitHub's limit of {MAX_BODY:,} characters{where}._\n"
        )
        if size + len(line) + 1 + len(note) > room:
            return "\n".join(kept) + note
        kept.append(line)
        size += len(line) + 1
    return text


@dataclass(frozen=True)
class Posted:
    """What `post_comment` did: `created` or `updated`, and the comment's address."""

    action: str
    url: str | None
    comment_id: int


async def post_comment(api: GitHubAPI, pull_request: int, title: str, body: str) -> Posted:
    """Edit the pull request's comment with `title`'s marker, or create it when there is none."""
    mark = marker(title)
    async for comment in api.pages(f"issues/{pull_request}/comments"):
        if isinstance(comment, Mapping) and _is_ours(comment, mark):
            updated = await api.patch(f"issues/comments/{comment['id']}", {"body": body})
            return Posted("updated", _address(updated, comment), int(comment["id"]))
    created = await api.post(f"issues/{pull_request}/comments", {"body": body})
    if not isinstance(created, Mapping) or not isinstance(created.get("id"), int):
        return Posted("created", None, 0)
    return Posted("created", _address(created, created), int(created["id"]))


def _is_ours(comment: Mapping[str, Any], mark: str) -> bool:
    """A comment this command wrote for the title: its body starts with the marker (a reply that
    quotes it starts with `>`)."""
    body = comment.get("body")
    return isinstance(body, str) and body.startswith(mark) and isinstance(comment.get("id"), int)


def _address(answer: Any, fallback: Mapping[str, Any]) -> str | None:
    for source in (answer, fallback):
        if isinstance(source, Mapping) and isinstance(source.get("html_url"), str):
            return str(source["html_url"])
    return None
