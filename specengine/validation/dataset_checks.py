"""The checks of a spec's datasets: the file exists and parses, it has rows, row ids are unique.

A duplicate id names both lines; reading stops at the first row that does not parse. A dataset file
is checked once per run however many specs name it (validate caches `check_dataset_file`), in the
same pass that proves the templates of the spec's evals against its rows (row_checks); another spec
naming the same file reads it again for its own templates only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError
from specengine.source.datasets import Row, dataset_format, is_dataset_path, iter_rows, row_id
from specengine.source.loader import KeyPath, display_path, shown_path
from specengine.source.project import DATASETS_KEY, Project
from specengine.suggest import closest, did_you_mean
from specengine.validation.file_report import Report
from specengine.validation.row_checks import EvalProver
from specengine.validation.row_ids import SeenIds

MAX_DUPLICATES_SHOWN = 50

# check_dataset_file (with the provers of the spec that names the file), cached by the caller
DatasetResult = Callable[[Path, str, Sequence[EvalProver]], tuple[list[Diagnostic], int]]


def check_dataset_file(
    path: Path, display: str, provers: Sequence[EvalProver] = ()
) -> tuple[list[Diagnostic], int]:
    """(problems, row count): the first bad row stops reading; duplicate ids name both lines. Each
    row is also handed to the provers of the evals that run over it. Memory stays flat however many
    rows the file has: ids are held as row_ids.py says, which may read the file a second time."""
    problems: list[Diagnostic] = []
    count = 0
    seen = SeenIds()
    duplicates = 0

    def repeated(row: Row, rid: str, earlier: int | None) -> None:
        nonlocal duplicates
        if earlier is None:
            return
        duplicates += 1
        if duplicates <= MAX_DUPLICATES_SHOWN:
            problems.append(Diagnostic(display, row.line, 1, _duplicate_message(row.data, rid, earlier)))

    try:
        for row in iter_rows(path, display):
            count += 1
            for prover in provers:
                prover.check(row.data, row.line, uniform=row.uniform)
            rid = row_id(row.data)
            repeated(row, rid, seen.add(rid, row.line))
    except SpecError as exc:
        problems.extend(exc.diagnostics)
        return problems, count
    if seen.needs_second_reading:
        for row in iter_rows(path, display):
            rid = row_id(row.data)
            repeated(row, rid, seen.confirm(rid, row.line))
    if duplicates > MAX_DUPLICATES_SHOWN:
        problems.append(
            Diagnostic(display, 1, 1, f"{duplicates - MAX_DUPLICATES_SHOWN} more duplicate row ids not shown")
        )
    if seen.unchecked:
        problems.append(
            Diagnostic(
                display, 1, 1, f"{seen.unchecked} more rows may repeat an earlier id (too many to check)"
            )
        )
    return problems, count


def prove_dataset_file(path: Path, display: str, provers: Sequence[EvalProver]) -> None:
    """The rows of a file already checked, for the provers of another spec that names it."""
    try:
        for row in iter_rows(path, display):
            for prover in provers:
                prover.check(row.data, row.line, uniform=row.uniform)
    except SpecError:
        return  # the bad row is reported with the file's own checks


def _duplicate_message(data: Mapping[str, Any], rid: str, first: int) -> str:
    if data.get("id") not in (None, ""):
        return f"duplicate row id '{rid}' (first used on line {first})"
    return (
        f"this row has the same input and expected as the row on line {first} (both get the id {rid}):"
        " give the rows an id column or make them differ"
    )


def check_dataset(
    report: Report,
    value: Any,
    here: KeyPath,
    spec_file: Path,
    project: Project | None,
    dataset_result: DatasetResult,
    provers: Sequence[EvalProver] = (),
) -> None:
    """A spec's or an eval's `dataset:`: inline rows, or a file beside the spec; the provers of the
    evals that run over it see each row (an eval without a dataset: its own values, once)."""
    if value is None or value == "none":
        for prover in provers:
            prover.check({}, in_dataset=False)
            report.items.extend(prover.report(None))
        return
    if isinstance(value, list):
        _check_inline_rows(report, value, here, provers)
        for prover in provers:
            report.items.extend(prover.report(report.document.path))
        return
    if not is_dataset_path(value):
        return  # the schema reports a wrong suffix or type
    path = spec_file.parent / value.strip()
    base = project.folder if project is not None else None
    display = display_path(path, base)
    if not path.is_file():
        shown = shown_path(path, Path.cwd().resolve())  # as every message names a file
        elsewhere = _found_elsewhere(value.strip(), spec_file, project)
        report.at(here, f"dataset file not found: {shown}{elsewhere}")
        return
    outside = outside_problem(path, project, spec_file)
    if outside is not None:
        report.at(here, outside)
        return
    problems, count = dataset_result(path, display, provers)
    report.items.extend(problems)
    if not problems and count == 0:
        report.at(here, f"the dataset {display} has no rows: the evals using it would run zero times")
    for prover in provers:
        report.items.extend(prover.report(display))


def allowed_folders(project: Project | None, spec_file: Path) -> list[Path]:
    """The folders a dataset may be read from: the project file's folder and those its
    `datasets: {allow: [...]}` names, relative to it; without a project file, the working folder
    and the spec's own folder."""
    if project is None or project.file is None:
        return [Path.cwd().resolve(), spec_file.parent.resolve()]
    data = project.data.get(DATASETS_KEY)
    allowed = data.get("allow") if isinstance(data, Mapping) else None
    entries = allowed if isinstance(allowed, list) else []
    extra = [project.folder / entry for entry in entries if isinstance(entry, str)]
    return [place.resolve() for place in (project.folder, *extra)]


def outside_problem(path: Path, project: Project | None, spec_file: Path) -> str | None:
    """Why a dataset file may not be read: it is outside the project's folder and those the project
    allows, as written or once its symlinks are followed; None when it may. A spec from elsewhere
    must not make a run read (and send to the agent) any file the machine holds."""
    real = path.resolve()
    places = allowed_folders(project, spec_file)
    if any(real.is_relative_to(place) for place in places):
        return None
    cwd = Path.cwd().resolve()
    written = Path(os.path.normpath(path.absolute()))
    linked = any(written.is_relative_to(place) for place in places)
    through = f" a symlink to {real}," if linked else ""
    shown = written.relative_to(cwd).as_posix() if written.is_relative_to(cwd) else str(written)
    folder = Path(os.path.relpath(real.parent, places[0])).as_posix()
    project_folder = "" if places[0] == cwd else f" {shown_path(places[0], cwd)}"
    return (
        f"the dataset {shown} is{through} outside the project folder{project_folder}: "
        f"move it into the project, or allow its folder in specengine.yaml with "
        f"`{DATASETS_KEY}: {{allow: [{folder}]}}`"
    )


def _found_elsewhere(value: str, spec_file: Path, project: Project | None) -> str:
    """ " - did you mean 'data/orders.csv'?" for a dataset file that is not where the spec says but
    is, under that name or one close to it, beside the spec, in a data folder there, or beside
    the project file or in its data folder: the path to write, relative to the spec's folder."""
    folder = spec_file.parent
    places = [folder, folder / "data"]
    if project is not None and project.file is not None:
        places += [project.folder, project.folder / "data"]
    wanted = Path(value).name
    candidates: dict[str, Path] = {}
    for place in places:
        try:
            files = sorted(place.iterdir()) if place.is_dir() else []
        except OSError:
            continue
        for file in files:
            if file.is_file() and dataset_format(file.name) is not None:
                candidates.setdefault(file.name, file)
    name = wanted if wanted in candidates else None
    if name is None:  # a name close to it: compared without the suffixes, which all look alike
        stems = {Path(found).stem: found for found in reversed(list(candidates))}
        stem = closest(Path(wanted).stem, list(stems))
        name = stems[stem] if stem is not None else None
    if name is None:
        return ""
    written = Path(os.path.relpath(candidates[name].resolve(), folder.resolve())).as_posix()
    relative = " (a dataset path is relative to the spec's folder)" if written.startswith("../") else ""
    return did_you_mean(written) + relative


def _check_inline_rows(report: Report, rows: list, here: KeyPath, provers: Sequence[EvalProver]) -> None:
    """Inline rows need unique ids as much as a file's rows do."""
    first_line: dict[str, int] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            continue
        rid = row_id(row)
        line = report.document.line((*here, index))
        for prover in provers:
            prover.check(row, line)
        if rid in first_line:
            report.at((*here, index), _duplicate_message(row, rid, first_line[rid]))
        else:
            first_line[rid] = line
