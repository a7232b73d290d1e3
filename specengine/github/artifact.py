"""The results file inside a downloaded artifact's zip, read without trusting the zip.

An artifact is made by whatever ran on the branch, so its zip is read as hostile input: at most
MAX_MEMBERS entries, no entry whose name is absolute or climbs out with `..`, and the one file taken
is decompressed a block at a time and abandoned past MAX_RESULTS_BYTES, whatever size its header
claims (a zip bomb's header lies). Nothing is written to disk but the one file the caller asked for.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from specengine.errors import ArtifactError
from specengine.transport.limits import size_text

MAX_ZIP_BYTES = 200 * 1024 * 1024  # what is downloaded
MAX_RESULTS_BYTES = 500 * 1024 * 1024  # what the results file may decompress to
MAX_MEMBERS = 1000
RESULTS_NAME = "results.json"
_BLOCK = 1024 * 1024


def results_from_zip(data: bytes, member: str | None = None, limit: int = MAX_RESULTS_BYTES) -> bytes:
    """The bytes of the results file in the zip `data`: `member` when named, else the zip's only
    `.json` file (or its `results.json` when it holds several)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ArtifactError(f"the artifact is not a zip file ({exc})") from None
    with archive:
        entries = archive.infolist()
        if len(entries) > MAX_MEMBERS:
            raise ArtifactError(f"the artifact holds {len(entries)} files, more than {MAX_MEMBERS}")
        for entry in entries:
            _check_name(entry.filename)
        chosen = _choose([entry for entry in entries if not entry.is_dir()], member)
        return _read_bounded(archive, chosen, limit)


def _check_name(name: str) -> None:
    """Refuse a path that is absolute, has a drive, climbs out with `..` or holds a backslash."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or path.is_absolute()
        or ".." in path.parts
        or (len(name) > 1 and name[1] == ":")
    ):
        raise ArtifactError(f"the artifact holds a file with an unsafe path: {name!r}")


def _choose(files: list[zipfile.ZipInfo], member: str | None) -> zipfile.ZipInfo:
    names = [entry.filename for entry in files]
    if member is not None:
        for entry in files:
            if entry.filename == member:
                return entry
        raise ArtifactError(f"the artifact has no {member!r} (it holds: {_listing(names)})")
    found = [entry for entry in files if entry.filename.lower().endswith(".json")]
    if len(found) == 1:
        return found[0]
    named = [entry for entry in found if PurePosixPath(entry.filename).name == RESULTS_NAME]
    if len(named) == 1:
        return named[0]
    if not found:
        raise ArtifactError(f"the artifact holds no .json results file (it holds: {_listing(names)})")
    raise ArtifactError(f"the artifact holds several .json files ({_listing(names)}): name one with --file")


def _read_bounded(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, limit: int) -> bytes:
    """The entry's bytes, decompressed a block at a time and refused past `limit`."""
    if entry.file_size > limit:
        raise ArtifactError(
            f"{entry.filename} would be {size_text(entry.file_size)}, over {size_text(limit)}"
        )
    out = bytearray()
    try:
        with archive.open(entry) as stream:
            while block := stream.read(_BLOCK):
                out += block
                if len(out) > limit:
                    raise ArtifactError(f"{entry.filename} decompresses to more than {size_text(limit)}")
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError, OSError) as exc:
        raise ArtifactError(f"cannot read {entry.filename} from the artifact: {exc}") from None
    return bytes(out)


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:10]) or "nothing"
    return shown + (f" and {len(names) - 10} more" if len(names) > 10 else "")
