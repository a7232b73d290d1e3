"""Every exception specengine raises on purpose, in one place: raised by type, caught by type.

The hierarchy says how each problem ends for the user:

- `UsageError`: the command line, the project or the specs are wrong; the command stops before
  anything is sent and exits 2. `SpecError` (located diagnostics), `MissingVariable` (a `${VAR}`
  the environment lacks), `ResultsError` (a results file that cannot be used), `ReviewError` (a
  human review that cannot be recorded), `QueryError` (SQL the index refuses) and `RerunError` (a
  rerun from the app that cannot start) are kinds of it.
- `TemplateError`: a template that does not compile or render; the caller locates it in its file.
- `DatasetUnavailable`: a dataset stored elsewhere (`dataset: mlflow:NAME`) that cannot be read;
  the caller locates it at the spec's `dataset:` (a SpecError, so exit 2 before anything is sent).
- `EndpointError`: a transport fault talking to an agent (the trial errors, maybe after retries).
- `JudgeFailure`: a judge call that cannot give a score (that check errors).
- `WebServerError`: the app under test could not be started or reached.
- `SchemaNotFound`: the installed package lacks its schemas (an installation problem).
- `GitHubError`: GitHub's REST API refused a request or could not be reached (`specengine github`);
  `ArtifactError`: a downloaded artifact that cannot be used safely.

No code tells these apart by their message text.
"""

from __future__ import annotations

from collections.abc import Sequence

from specengine.diagnostics import Diagnostic


class SpecengineError(Exception):
    """The base of every error specengine raises on purpose; `message` is what it says."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(SpecengineError):
    """A problem with the command line, the project or the specs: stop before anything is sent, exit 2.

    `lines` are printed one per line, as they are.
    """

    def __init__(self, lines: str | Sequence[str]):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class SpecError(UsageError):
    """Spec input that cannot be used; holds every problem found, not just the first."""

    def __init__(self, diagnostics: Sequence[Diagnostic] | Diagnostic):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = sorted(diagnostics)
        super().__init__([str(d) for d in self.diagnostics])


class MissingVariable(UsageError):
    """A ${VAR} that the environment does not hold; the run stops before any request (exit 2)."""

    def __init__(self, names: Sequence[str], where: str, path: Sequence[str] = (), place: str | None = None):
        self.names = sorted(set(names))
        self.where = where
        self.path = tuple(path)  # the key path of the first use, inside the mapping `where` names
        self.place = place  # `file:line:col` of that use, once known
        plural = "s" if len(self.names) > 1 else ""
        first = self.names[0] if self.names else "NAME"
        text = (
            f"{where}: environment variable{plural} {', '.join(self.names)} not set (used as ${{...}}):"
            f" set it before the command (export {first}=…, or your CI's secrets)"
        )
        super().__init__(f"{place}: {text}" if place else text)

    def at(self, place: str) -> MissingVariable:
        """The same error, located where the variable is used."""
        return MissingVariable(self.names, self.where, self.path, place)


class ResultsError(UsageError):
    """A results file that cannot be used; the message names the file and says what is wrong."""


class MergeError(ResultsError):
    """Results files that cannot be merged; the message says which ones and why."""


class ReviewError(UsageError):
    """A human review that cannot be recorded (no verdict, a check the case lacks, a skipped case)."""


class QueryError(UsageError):
    """A `specengine query` that SQLite refused (bad SQL, or an attempt to change something)."""


class RerunError(UsageError):
    """A rerun from the app that cannot start (nothing to rerun, a spec path outside the project)."""


class TemplateError(SpecengineError):
    """A template failed to compile or render; `line` is the line inside the template (1-based)."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.line = line


class DatasetUnavailable(SpecengineError):
    """A dataset stored elsewhere that cannot be read; `message` says why and what to do."""


class EndpointError(SpecengineError):
    """A transport fault (connection, timeout, HTTP status, unparsable body): the trial errors.

    `kind` names the fault in results (`ConnectError`, `HTTPStatusError`, `InvalidJSON`, …);
    `retryable` is true for connection errors, 429 and 5xx; `retry_after` is the server's wish in
    seconds when it sent one. For an HTTP status, `status` is it and `body` the whole answer (the
    message holds only its start), for protocols that read what the server asked for. `same_as` is
    set on a mistake every answer would meet alike (an `http` expression that picks nothing): the
    same text on answers in a row stops the endpoint early, as a dead one is stopped.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        body: str | None = None,
        same_as: str | None = None,
    ):
        super().__init__(message)
        self.same_as = same_as
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.body = body


class JudgeFailure(SpecengineError):
    """A judge call that cannot give a score; `message` is shown to the user as the check's error."""


class SimulatorFailure(JudgeFailure):
    """A simulated user's next message could not be had (the simulator failed after its retries, or
    answered something unusable): the case errors, never fails; `message` says why."""


class WebServerError(SpecengineError):
    """The app under test could not be started or reached; the message says why, with its output."""


class SchemaNotFound(SpecengineError):
    """The installed package lacks its schemas: an installation problem, not a spec problem."""


class GitHubError(SpecengineError):
    """GitHub's REST API refused a request (`status` is its HTTP status) or could not be reached
    (`status` None). A 403 is what a fork's read-only token gets when it writes."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after  # the answer's Retry-After, in seconds


class ArtifactError(SpecengineError):
    """A downloaded artifact that is not a zip holding one results file within the size limits."""
