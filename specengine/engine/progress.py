"""The progress bar a session shows while cases run: on the terminal only, gone when the run ends.

Off the terminal (CI, a pipe, `--json`) nothing is shown, so rich's progress bar is not even made:
counting a finished case is then free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


class CaseProgress:
    """Finished cases counted on a bar, shown while the session is entered (`with progress:`)."""

    def __enter__(self) -> CaseProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def advance(self) -> None:
        """One more case finished."""


class _Bar(CaseProgress):
    def __init__(self, bar: Progress, total: int):
        self.bar = bar
        self.task = bar.add_task("running", total=total)

    def __enter__(self) -> CaseProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def advance(self) -> None:
        self.bar.advance(self.task)


def progress_bar(console: Console, total: int, quiet: bool) -> CaseProgress:
    """A bar counting finished cases out of `total`; nothing when `quiet` or not on a terminal."""
    if quiet or not console.is_terminal:
        return CaseProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    return _Bar(bar, total)
