"""`specengine cache clear|info`: look at or empty the judge verdict cache (and the simulated users'
messages, cached beside the verdicts).

Judge verdicts are cached on disk so an unchanged suite does not pay the judge twice. After changing
the judge (a new prompt version, a different server behind the same URL) a user wants a clean slate:
`cache clear` removes every stored verdict and says how much it removed.
"""

from __future__ import annotations

from pathlib import Path

import typer

from specengine.commands import app

cache_app = typer.Typer(
    name="cache",
    help="Inspect or empty the judge verdict cache (.specengine/cache).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

DIR_OPTION = typer.Option(
    Path(".specengine/cache"), "--dir", help="The cache folder.", file_okay=False, show_default=True
)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} bytes"


def _verdicts(count: int) -> str:
    return f"{count} cached judge verdict{'' if count == 1 else 's'}"


def _messages(count: int) -> str:
    return f"{count} cached simulated message{'' if count == 1 else 's'}"


@cache_app.command("clear")
def clear(cache_dir: Path = DIR_OPTION) -> None:
    """Delete every cached judge verdict and simulated message; the next run asks again."""
    from specengine.judge.cache import SIMULATOR_FOLDER, ModelCache

    removed, messages = ModelCache(cache_dir).clear(), ModelCache(cache_dir, SIMULATOR_FOLDER).clear()
    if removed.bytes == 0 and messages.bytes == 0:
        typer.echo(f"The judge cache in {cache_dir} is already empty.")
        return
    if removed.bytes or not messages.bytes:
        typer.echo(f"Removed {_verdicts(removed.entries)} ({_size(removed.bytes)}) from {cache_dir}.")
    if messages.bytes:
        typer.echo(f"Removed {_messages(messages.entries)} ({_size(messages.bytes)}) from {cache_dir}.")


@cache_app.command("info")
def info(cache_dir: Path = DIR_OPTION) -> None:
    """Show how many judge verdicts (and simulated messages) are cached and how much space they take."""
    from specengine.judge.cache import SIMULATOR_FOLDER, ModelCache

    summary = ModelCache(cache_dir).info()
    typer.echo(f"{_verdicts(summary.entries)} ({_size(summary.bytes)}) in {cache_dir}")
    messages = ModelCache(cache_dir, SIMULATOR_FOLDER).info()
    if messages.entries:
        typer.echo(f"{_messages(messages.entries)} ({_size(messages.bytes)}) in {cache_dir}")


app.add_typer(cache_app, name="cache")
