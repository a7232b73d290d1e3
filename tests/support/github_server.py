"""A scripted GitHub REST API on loopback, for `specengine github` (GITHUB_API_URL points at it).

It keeps pull-request comments (listed a few per page with a `Link` header, created with POST,
edited with PATCH), artifacts and workflow runs, and serves an artifact's zip as GitHub does: a 302
from the API to a second server standing for blob storage. Every request is recorded
(`requests`, `calls()`), as are the blob server's (`blobs.requests`).

    github = GitHubServer(repository="acme/shop", page_size=2)
    github.add_run(7, branch="main", conclusion="success")
    github.add_artifact(70, run_id=7, branch="main", zip_bytes=zipped({"results.json": text}))
    github.comments[12] = [...]            # existing comments of pull request 12
    github.forbid_writes = True            # every POST and PATCH answers 403, as for a fork's token
    github.faults = [502, 503]             # the next requests answer these first (Retry-After: 0)
"""

from __future__ import annotations

import io
import itertools
import json
import re
import zipfile
from collections.abc import Mapping
from typing import Any

from support.servers import Reply, Request, ScriptedHTTPServer

_COMMENTS = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
_COMMENT = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
_RUN = re.compile(r"^/repos/([^/]+/[^/]+)/actions/runs/(\d+)$")
_ARTIFACTS = re.compile(r"^/repos/([^/]+/[^/]+)/actions/artifacts$")
_ZIP = re.compile(r"^/repos/([^/]+/[^/]+)/actions/artifacts/(\d+)/zip$")


def zipped(files: Mapping[str, str | bytes]) -> bytes:
    """A zip holding `files` (name -> content), deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


class GitHubServer(ScriptedHTTPServer):
    """GitHub's REST API for one repository, as far as `specengine github` uses it."""

    def __init__(self, repository: str = "acme/shop", page_size: int = 30, token: str = "gh-token"):
        super().__init__()
        self.repository = repository
        self.page_size = page_size
        self.token = token
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.runs: dict[int, dict[str, Any]] = {}
        self.artifacts: list[dict[str, Any]] = []
        self.forbid_writes = False
        self.faults: list[int] = []  # statuses answered, one per request, before anything else
        self._ids = itertools.count(1000)
        self.blobs = ScriptedHTTPServer()
        for method in ("GET", "POST", "PATCH"):
            self.route("*", self._answer, method)

    def start(self) -> GitHubServer:
        self.blobs.start()
        super().start()
        return self

    def close(self) -> None:
        super().close()
        self.blobs.close()

    # --- scripting ---

    def add_run(self, run_id: int, branch: str = "main", conclusion: str = "success", **more: Any) -> None:
        self.runs[run_id] = {
            "id": run_id,
            "head_branch": branch,
            "head_sha": f"{run_id:040d}",
            "conclusion": conclusion,
            "event": "push",
            "head_repository": {"full_name": self.repository},
            "html_url": f"https://github.example/{self.repository}/actions/runs/{run_id}",
            **more,
        }

    def add_artifact(
        self, artifact_id: int, run_id: int, zip_bytes: bytes, branch: str = "main", expired: bool = False
    ) -> None:
        """An artifact named specengine-results (newest first: add the newest first)."""
        self.artifacts.append(
            {
                "id": artifact_id,
                "name": "specengine-results",
                "expired": expired,
                "workflow_run": {"id": run_id, "head_branch": branch},
            }
        )
        self.blobs.route(f"/blob/{artifact_id}.zip", lambda request: Reply(body=zip_bytes), "GET")

    def calls(self) -> list[str]:
        """`METHOD /path` of every API request, in order."""
        return [f"{request.method} {request.path}" for request in self.requests]

    # --- answering ---

    def _answer(self, request: Request) -> Reply:
        if self.faults:
            return Reply(
                status=self.faults.pop(0), body={"message": "Server Error"}, headers={"Retry-After": "0"}
            )
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return Reply(status=401, body={"message": "Bad credentials"})
        routes = (
            (_COMMENTS, self._comments),
            (_COMMENT, self._comment),
            (_RUN, self._run),
            (_ARTIFACTS, self._artifacts),
            (_ZIP, self._zip),
        )
        for pattern, handler in routes:
            found = pattern.match(request.path)
            if found and found.group(1) == self.repository:
                return handler(request, *found.groups()[1:])
        return Reply(status=404, body={"message": "Not Found"})

    def _page(self, request: Request, items: list[Any], wrap: str | None = None) -> Reply:
        query = dict(part.split("=", 1) for part in request.query.split("&") if "=" in part)
        size = min(int(query.get("per_page", "30")), self.page_size)
        page = int(query.get("page", "1"))
        shown = items[(page - 1) * size : page * size]
        headers = {}
        if page * size < len(items):
            rest = "&".join(f"{k}={v}" for k, v in query.items() if k != "page")
            headers["Link"] = f'<{self.base_url}{request.path}?{rest}&page={page + 1}>; rel="next"'
        body: Any = {"total_count": len(items), wrap: shown} if wrap else shown
        return Reply(body=body, headers=headers)

    def _comments(self, request: Request, number: str) -> Reply:
        comments = self.comments.setdefault(int(number), [])
        if request.method == "GET":
            return self._page(request, comments)
        if request.method != "POST":
            return Reply(status=405, body={"message": "Method Not Allowed"})
        if self.forbid_writes:
            return Reply(status=403, body={"message": "Resource not accessible by integration"})
        comment_id = next(self._ids)
        comment = {
            "id": comment_id,
            "body": request.json["body"],
            "user": {"login": "github-actions[bot]", "type": "Bot"},
            "html_url": f"https://github.example/{self.repository}/pull/{number}#issuecomment-{comment_id}",
        }
        comments.append(comment)
        return Reply(status=201, body=comment)

    def _comment(self, request: Request, comment_id: str) -> Reply:
        if request.method != "PATCH":
            return Reply(status=405, body={"message": "Method Not Allowed"})
        if self.forbid_writes:
            return Reply(status=403, body={"message": "Resource not accessible by integration"})
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == int(comment_id):
                    comment["body"] = request.json["body"]
                    return Reply(body=comment)
        return Reply(status=404, body={"message": "Not Found"})

    def _run(self, request: Request, run_id: str) -> Reply:
        run = self.runs.get(int(run_id))
        return Reply(body=run) if run else Reply(status=404, body={"message": "Not Found"})

    def _artifacts(self, request: Request) -> Reply:
        query = dict(part.split("=", 1) for part in request.query.split("&") if "=" in part)
        named = [a for a in self.artifacts if "name" not in query or a["name"] == query["name"]]
        return self._page(request, named, wrap="artifacts")

    def _zip(self, request: Request, artifact_id: str) -> Reply:
        if not any(a["id"] == int(artifact_id) for a in self.artifacts):
            return Reply(status=404, body={"message": "Not Found"})
        return Reply(
            status=302, body="", headers={"Location": self.blobs.url_for(f"/blob/{artifact_id}.zip")}
        )


def event_file(folder: Any, pull_request: int | None) -> str:
    """An event JSON for GITHUB_EVENT_PATH: a pull_request event, or a push when None."""
    event: dict[str, Any] = {"ref": "refs/heads/main"}
    if pull_request is not None:
        event = {"action": "synchronize", "number": pull_request, "pull_request": {"number": pull_request}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return str(path)
