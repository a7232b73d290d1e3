"""The validate stage: every spec and project file checked, every problem in every file reported.

This module finds the files and runs the checks: it discovers specs and project files, loads each
project once, reads each spec with source.loader, tells datasets from specs (a YAML file a spec
names as its dataset, or any file under a folder named `data`), then runs the JSON Schema
(validation.schema_messages) and the checks a schema cannot express (validation.spec_checks).
A spec author fixes everything in one pass, so nothing stops at the first problem, and nothing a
spec holds can raise a traceback.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError, UsageError
from specengine.source.datasets import is_dataset_path
from specengine.source.loader import (
    PROJECT_FILE,
    YAML_SUFFIXES,
    Document,
    discover,
    display_path,
    find_project_file,
    kind_of,
    load_yaml_text,
    parse_yaml,
    relative_path,
    shown_path,
)
from specengine.source.project import Project, load_project
from specengine.suggest import suggest
from specengine.validation.dataset_checks import check_dataset_file, prove_dataset_file
from specengine.validation.file_report import Report
from specengine.validation.project_checks import check_project
from specengine.validation.row_checks import EvalProver
from specengine.validation.schema_messages import check_document
from specengine.validation.spec_checks import SpecChecks
from specengine.validation.yaml_hints import report_ambiguous


@dataclass(frozen=True)
class SpecFile:
    """A spec that parsed, with the project it belongs to and the dataset files it names."""

    path: Path
    display: str
    document: Document
    project: Project | None
    datasets: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Validation:
    """What validate found. Compile only when `diagnostics` (the errors) is empty.

    `project` is the project named with --project, else the one the first spec uses. `checked`
    lists every file that was read as a spec, dataset or project file (display paths), for the
    summary. `notes` says why a file named on the command line was not checked as a spec.
    `warnings` are valid things that will not do what their author expects; they fail nothing.
    """

    specs: tuple[SpecFile, ...]
    project: Project | None
    diagnostics: tuple[Diagnostic, ...]
    checked: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())  # files named on the command line that are not specs
    warnings: tuple[Diagnostic, ...] = field(default=())
    project_files: tuple[str, ...] = field(default=())  # the project files among `checked`
    shown: Mapping[str, str] = field(default_factory=dict)  # display path -> path from the cwd


# --- public entry point ---------------------------------------------------------------------------


def validate_paths(
    paths: list[Path], project_file: Path | None = None, config: str | None = None
) -> Validation:
    """Check every spec under paths, and the project files they use; collect every problem.

    Raises UsageError for command-line problems only (missing path, unknown --config).
    """
    # Parsing a thousand specs allocates millions of small objects and no cycles worth collecting,
    # and the collector's repeated full scans of them cost more than the parsing; once re-enabled,
    # its next collection would still scan them all, so they are frozen first (they stay alive for
    # the caller, and refcounting frees them as before). In `specengine validate` of 1,000 specs
    # the collector paused for 0.8 s with it on throughout (2.5x the wall time), 0.14 s without the
    # freeze (1.3x), under 0.01 s as here (bench/gc_bench.py).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Validator(project_file, config).run(paths)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


class _Validator:
    def __init__(self, project_file: Path | None, config: str | None):
        self.project_file = project_file
        self.config = config
        self.diagnostics: list[Diagnostic] = []
        self.checked: dict[str, None] = {}
        self.projects: dict[Path, Project | None] = {}
        self.dataset_results: dict[Path, tuple[list[Diagnostic], int]] = {}
        self.dataset_scan: dict[Path, set[Path]] = {}
        self.notes: list[str] = []
        self.shown: dict[str, str] = {}  # a file's display path (case ids) -> its path from the cwd
        self.cwd = Path.cwd().resolve()

    def _shown_in(self, diagnostic: Diagnostic) -> Diagnostic:
        return shown_in(diagnostic, self.shown)

    def _note_shown(self, display: str, file: Path) -> None:
        """Messages name a file from the folder the command runs in (`shown_path`), whatever folder
        its case ids are relative to."""
        if display not in self.shown:
            self.shown[display] = shown_path(file, self.cwd)

    # projects

    def _project_for(self, file: Path | None) -> Project | None:
        if file is None:
            if self.config:
                raise UsageError(f"--config {self.config}: no {PROJECT_FILE} found for the specs")
            return None
        key = file.resolve()
        if key in self.projects:
            return self.projects[key]
        project = self._load_project(file)
        self.projects[key] = project
        return project

    def _load_project(self, file: Path) -> Project | None:
        display = display_path(file)
        self._note_shown(display, file)
        self.checked.setdefault(display, None)
        try:
            base = load_project(file)
        except SpecError as exc:
            self.diagnostics.extend(exc.diagnostics)
            return None
        project = base
        if self.config:
            configs = base.data.get("configs")
            if not isinstance(configs, Mapping) or self.config not in configs:
                names = list(configs) if isinstance(configs, Mapping) else []
                hint = suggest(self.config, names)
                listed = f" (configs in {display}: {', '.join(map(str, names)) or 'none'})"
                raise UsageError(f"unknown config '{self.config}'{hint or listed}")
            try:
                project = load_project(file, self.config)
            except SpecError as exc:
                self.diagnostics.extend(exc.diagnostics)
                return None
        self.diagnostics.extend(check_project(project, display))
        return project

    # the run

    def run(self, paths: list[Path]) -> Validation:
        found = discover(paths)
        if found.missing:
            raise UsageError(f"no such file or folder: {', '.join(found.missing)}")
        explicit_project: Project | None = None
        if self.project_file is not None:
            if not self.project_file.is_file():
                raise UsageError(f"--project: no such file: {self.project_file}")
            explicit_project = self._project_for(self.project_file)
        for project_file in found.project_files:
            self._project_for(project_file)

        named = {Path(p).resolve() for p in paths if Path(p).is_file()}
        parsed: list[_Parsed] = []
        project_paths: dict[Path, Path | None] = {}
        cwd = Path.cwd().resolve()
        folders: dict[Path | None, Path | None] = {}
        named_data: list[_Parsed] = []  # named on the command line, under a folder named data
        for file in found.specs:
            if self.project_file is not None:
                project_path: Path | None = self.project_file
            else:
                if file.parent not in project_paths:
                    project_paths[file.parent] = find_project_file(file.parent)
                project_path = project_paths[file.parent]
            if project_path not in folders:
                folders[project_path] = project_path.resolve().parent if project_path else None
            base = folders[project_path]
            under_data = _under_data_folder(file, base)
            resolved = file.resolve()
            if under_data and resolved not in named:
                continue
            project = explicit_project if self.project_file is not None else self._project_for(project_path)
            display = _display(file, resolved, base, cwd)
            self._note_shown(display, resolved)
            entry = _Parsed(file, project, project_path is not None and project is None, display, resolved)
            if under_data:
                named_data.append(entry)
                continue
            try:
                entry.document, entry.text = load_yaml_text(file, display)
            except SpecError as exc:
                entry.problems = list(exc.diagnostics)
            parsed.append(entry)

        # a YAML file that a spec names as its dataset is a dataset, not a spec
        datasets_named: set[Path] = set()
        for entry in parsed:
            if entry.document is not None:
                datasets_named.update(_dataset_files(entry.document.data, entry.file))
        for entry in named_data:
            if entry.resolved in datasets_named or self._named_elsewhere(
                entry.resolved, entry.project, entry.file
            ):
                self._check_named_dataset(entry)
            else:
                self.notes.append(
                    f"{self.shown[entry.display]}: not checked: it is under a folder named data, so it is"
                    " data, not a spec, and no spec names it as its dataset"
                )
        specs: list[SpecFile] = []
        for entry in parsed:
            resolved = entry.resolved
            if resolved in datasets_named:
                if resolved in named:
                    self._check_named_dataset(entry)
                continue
            document = entry.document
            not_yaml = entry.file.suffix not in YAML_SUFFIXES
            if (
                resolved in named
                and (not_yaml or (document is not None and isinstance(document.data, list)))
                and self._named_elsewhere(resolved, entry.project, entry.file)
            ):
                self._check_named_dataset(entry)
                continue
            if resolved in named and not_yaml:
                self.notes.append(
                    f"{self.shown[entry.display]}: not checked: specs are .yaml or .yml files,"
                    " and no spec names it as its dataset"
                )
                continue
            self.checked.setdefault(entry.display, None)
            if document is None:
                self.diagnostics.extend(entry.problems)
                continue
            try:
                items = self._check_spec(entry, document)
            except Exception as exc:  # a bug of ours must not hide the other files' problems
                message = f"internal error while checking this file: {type(exc).__name__}: {exc}"
                items = [Diagnostic(entry.display, 1, 1, message)]
            self.diagnostics.extend(items)
            datasets = tuple(sorted(_dataset_files(document.data, entry.file)))
            specs.append(SpecFile(entry.file, entry.display, document, entry.project, datasets))

        first = explicit_project or next((s.project for s in specs if s.project is not None), None)
        if first is None and self.projects:
            first = next((p for p in self.projects.values() if p is not None), None)
        reported = sorted({self._shown_in(d) for d in self.diagnostics})
        return Validation(
            specs=tuple(specs),
            project=first,
            diagnostics=tuple(d for d in reported if not d.is_warning),
            checked=tuple(self.checked),
            notes=tuple(self.notes),
            warnings=tuple(d for d in reported if d.is_warning),
            project_files=tuple(display_path(file) for file in self.projects),
            shown=dict(self.shown),
        )

    def _check_named_dataset(self, entry: _Parsed) -> None:
        """A dataset named on the command line (pre-commit passes changed files one by one) is
        checked as a dataset: its rows, their keys and their ids."""
        self.checked.setdefault(entry.display, None)
        problems, _count = self.dataset_result(entry.file, entry.display, ())
        self.diagnostics.extend(problems)

    def _named_elsewhere(self, file: Path, project: Project | None, given: Path) -> bool:
        """Whether some spec of the same project names this file (a list-shaped YAML file, a CSV,
        JSONL or JSON file, or any file under a data folder) as its dataset.

        pre-commit passes changed files one by one; a changed dataset must not be read as a spec.
        """
        root = project.folder if project is not None else given.resolve().parent
        if root not in self.dataset_scan:
            named: set[Path] = set()
            for candidate in discover([root]).specs:
                try:
                    raw = candidate.read_bytes()
                except OSError:
                    continue
                if b"dataset" not in raw:
                    continue
                try:
                    document = parse_yaml(raw, str(candidate), file=candidate)
                except SpecError:
                    continue
                named.update(_dataset_files(document.data, candidate))
            self.dataset_scan[root] = named
        return file in self.dataset_scan[root]

    # one spec

    def _check_spec(self, entry: _Parsed, document: Document) -> list[Diagnostic]:
        display = entry.display
        data = document.data
        if not isinstance(data, dict):
            kind = kind_of(data)
            hint = (
                " (if it is a dataset, name it in a spec's dataset: or put it in a folder named data)"
                if isinstance(data, list)
                else ""
            )
            return [
                Diagnostic(
                    display,
                    *document.position(),
                    f"a spec must be a mapping with evals: (a list of evals), not {kind}{hint}",
                )
            ]
        checked = check_document(document, "spec")
        report = Report(document, entry.text, checked.flagged)
        report.items.extend(checked.diagnostics)
        SpecChecks(
            entry.file,
            entry.project,
            entry.project_failed,
            report,
            checked.suggested,
            self.dataset_result,
            prove_rows=not checked.diagnostics,
        ).run()
        report_ambiguous(report)
        return report.items

    # datasets (each file read once per run)

    def dataset_result(
        self, path: Path, display: str, provers: Sequence[EvalProver]
    ) -> tuple[list[Diagnostic], int]:
        """The file's own problems (read once per run), its rows handed to the provers on the way."""
        key = path.resolve()
        self._note_shown(display, key)
        if key not in self.dataset_results:
            self.dataset_results[key] = check_dataset_file(path, display, provers)
        elif provers:
            prove_dataset_file(path, display, provers)
        return self.dataset_results[key]


@dataclass
class _Parsed:
    """A candidate spec file while the run sorts specs from datasets."""

    file: Path
    project: Project | None
    project_failed: bool  # a project file exists but did not load (its problems are reported)
    display: str
    resolved: Path
    document: Document | None = None
    text: str = ""
    problems: list[Diagnostic] = field(default_factory=list)


def shown_in(diagnostic: Diagnostic, shown: Mapping[str, str]) -> Diagnostic:
    """The diagnostic with its file, and a `file:line` its message names, as seen from the cwd
    (`shown` maps display paths to those)."""
    message = diagnostic.message
    for display, seen in shown.items():
        if display != seen and display in message:
            message = re.sub(rf"(?<=[\s(']){re.escape(display)}(?=:\d)", seen, message)
    return replace(diagnostic, path=shown.get(diagnostic.path, diagnostic.path), message=message)


def _display(file: Path, resolved: Path, base: Path | None, cwd: Path) -> str:
    """source.display_path for a file already resolved (validate shows thousands of them)."""
    for anchor in (base, cwd):
        if anchor is None:
            continue
        try:
            return resolved.relative_to(anchor).as_posix()
        except ValueError:
            continue
    return file.as_posix()


def _under_data_folder(file: Path, base: Path | None) -> bool:
    """A file under a folder named `data` is data, not a spec (also when named on the command line
    or when the folder given is itself a data folder).

    Only folders below the project folder (else the working folder) count, so a checkout that
    happens to live in /srv/data/ is not skipped wholesale.
    """
    return "data" in (relative_path(file, base) or file).parent.parts


def _dataset_files(data: Any, spec_file: Path) -> set[Path]:
    """Resolved paths of the dataset files a spec names (file level and eval level)."""
    found: set[Path] = set()
    if not isinstance(data, dict):
        return found
    values = [data.get("dataset")]
    evals = data.get("evals")
    if isinstance(evals, list):
        values.extend(item.get("dataset") for item in evals if isinstance(item, dict))
    for value in values:
        if is_dataset_path(value):
            try:
                found.add((spec_file.parent / value.strip()).resolve())
            except (OSError, ValueError):
                continue
    return found
