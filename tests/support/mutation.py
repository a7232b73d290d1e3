"""The check engine's mutation score: mutmut over the modules `[tool.mutmut]` names, read back and
held to tests/mutation-equivalent.txt.

A matcher or outcome rule that is wrong makes every user's CI wrong with it, so each change mutmut
makes to these modules (one operator, constant or name at a time) must make some test fail, or be
listed in tests/mutation-equivalent.txt with the reason no test can tell it apart. The list also
carries each module's hash as it was when its mutants were last looked at, so a change to a module
is noticed (tests/test_mutation_list.py).

    python tests/support/mutation.py run                      # every module; exit 1 below 95%
    python tests/support/mutation.py run specengine/redact.py # one module (or several)
    python tests/support/mutation.py run --changed-since main # the modules changed since main
    python tests/support/mutation.py refresh specengine/redact.py  # record a module's hash

`run` records the hashes of the modules it ran when every survivor is listed; `refresh` records them
after a look, without a run (a change that cannot add a survivor: a docstring, a rename).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # mutmut itself reads pyproject.toml with toml before Python 3.11
    import toml as tomllib

ROOT = Path(__file__).resolve().parents[2]
LIST = ROOT / "tests" / "mutation-equivalent.txt"
THRESHOLD = 0.95  # of the mutants that are not listed as equivalent, the share a run must kill
SCRIPT = "python tests/support/mutation.py"

_MODULE_LINE = re.compile(r"module\s+(\S+)\s+([0-9a-f]{16})\s*$")
_MUTANT_LINE = re.compile(r"(\S+__mutmut_\d+)\s+(\S.*)$")


def configured_modules() -> list[str]:
    """The modules `[tool.mutmut] only_mutate` selects, as paths from the repository root."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    found = {
        path.relative_to(ROOT).as_posix()
        for source in config["source_paths"]
        for path in (ROOT / source).rglob("*.py")
    }
    return sorted(
        path
        for path in found
        if any(fnmatch.fnmatch(path, pattern) for pattern in config["only_mutate"])
        and not path.endswith("__init__.py")
    )


def module_hash(module: str) -> str:
    return hashlib.sha256((ROOT / module).read_bytes()).hexdigest()[:16]


def module_of(mutant: str) -> str:
    """`specengine.grade.text_matchers.x_equals__mutmut_3` -> `specengine/grade/text_matchers.py`."""
    dotted = mutant.split(".x_")[0].split(".xǁ")[0]
    return dotted.replace(".", "/") + ".py"


def dotted(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


@dataclass
class EquivalentList:
    """tests/mutation-equivalent.txt read: each module's recorded hash and each listed mutant's reason,
    with the line it is on."""

    hashes: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_list(path: Path = LIST) -> EquivalentList:
    listed = EquivalentList()
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if module := _MODULE_LINE.fullmatch(line):
            listed.hashes[module[1]] = module[2]
            listed.lines[module[1]] = number
        elif mutant := _MUTANT_LINE.fullmatch(line):
            if mutant[1] in listed.reasons:
                listed.problems.append(f"{path.name}:{number}: {mutant[1]} is listed twice")
            listed.reasons[mutant[1]] = mutant[2]
            listed.lines[mutant[1]] = number
        else:
            listed.problems.append(
                f"{path.name}:{number}: expected `module PATH HASH` or `MUTANT REASON`, got {line!r}"
            )
    return listed


def record_hashes(modules: Iterable[str], path: Path = LIST) -> None:
    """Write the current hash of each module into the list, replacing its line or adding one."""
    wanted = {module: module_hash(module) for module in modules}
    lines = path.read_text(encoding="utf-8").splitlines()
    for index, raw in enumerate(lines):
        found = _MODULE_LINE.fullmatch(raw.strip())
        if found and found[1] in wanted:
            lines[index] = f"module {found[1]} {wanted.pop(found[1])}"
    lines += [f"module {module} {digest}" for module, digest in sorted(wanted.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def mutant_names(module: str) -> set[str]:
    """Every mutant mutmut makes of the module now (its own generator, nothing run)."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    code = (ROOT / module).read_text(encoding="utf-8")
    return {f"{dotted(module)}.{name}" for name in mutate_file_contents(module, code).mutant_names}


@dataclass(frozen=True)
class ModuleScore:
    module: str
    total: int
    killed: int
    equivalent: int
    survivors: tuple[str, ...]  # survived and not listed, or reached by no test
    listed_but_killed: tuple[str, ...]
    unchecked: int  # not run yet (an interrupted run)

    @property
    def score(self) -> float:
        counted = self.total - self.equivalent
        return self.killed / counted if counted else 1.0


def read_scores(modules: Sequence[str], listed: EquivalentList) -> list[ModuleScore]:
    """The results mutmut left in mutants/ for the modules, against the list."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code

    scores = []
    for module in modules:
        data = SourceFileMutationData(path=module)
        data.load()
        statuses = {name: status_by_exit_code[code] for name, code in data.exit_code_by_key.items()}
        killed = {name for name, status in statuses.items() if status in ("killed", "timeout")}
        unchecked = {name for name, status in statuses.items() if status == "not checked"}
        equivalent = {name for name in statuses if name in listed.reasons and name not in killed}
        scores.append(
            ModuleScore(
                module,
                len(statuses),
                len(killed),
                len(equivalent),
                tuple(sorted(set(statuses) - killed - equivalent - unchecked)),
                tuple(sorted(killed & set(listed.reasons))),
                len(unchecked),
            )
        )
    return scores


def changed_modules(base: str) -> list[str]:
    """The configured modules a change since `base` (its merge base with HEAD) touched."""
    changed = subprocess.run(
        ["git", "diff", "--name-only", f"{base}...HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [module for module in configured_modules() if module in changed]


def run_mutmut(modules: Sequence[str], max_children: int, again: Sequence[str] = ()) -> None:
    """`mutmut run` over the modules (every configured module when all are asked for), or over the
    mutants `again` names only."""
    if again:
        names = list(again)
    elif list(modules) == configured_modules():
        names = []
    else:
        names = [f"{dotted(module)}.*" for module in modules]
    # which tests reach which function is collected again: a new case in a parametrized table shifts
    # the ids of the cases after it, and mutmut would keep the reach it recorded under the old ids
    (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    command = ["mutmut", "run", "--max-children", str(max_children), *names]
    print(" ".join(command), flush=True)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:  # its spinner's output, of which the end says what went wrong
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
        raise SystemExit(f"mutmut run ended with exit code {done.returncode}")


def show(mutant: str) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    try:
        return get_diff_for_mutant(mutant, path=module_of(mutant))
    except (FileNotFoundError, KeyError):
        return f"(mutmut show {mutant})"


def report(scores: Sequence[ModuleScore], listed: EquivalentList, diffs: bool) -> bool:
    """Print the score per module and what is left to do; True when the run meets the bar."""
    width = max(len(score.module) for score in scores)
    print(f"{'module':<{width}}  mutants  killed  equivalent  left  score")
    for s in scores:
        print(
            f"{s.module:<{width}}  {s.total:7}  {s.killed:6}  {s.equivalent:10}  "
            f"{len(s.survivors):4}  {s.score:6.1%}"
        )
    total = sum(s.total for s in scores)
    killed = sum(s.killed for s in scores)
    equivalent = sum(s.equivalent for s in scores)
    overall = killed / (total - equivalent) if total > equivalent else 1.0
    left = sum(len(s.survivors) for s in scores)
    print(f"{'all':<{width}}  {total:7}  {killed:6}  {equivalent:10}  {left:4}  {overall:6.1%}")
    for s in scores:
        for mutant in s.survivors:
            print(f"\nsurvived: {mutant}")
            if diffs:
                print(show(mutant))
        for mutant in s.listed_but_killed:
            print(f"\n{LIST.name}:{listed.lines[mutant]}: {mutant} is killed now; take it off the list")
    unchecked = sum(s.unchecked for s in scores)
    if unchecked:
        print(f"\n{unchecked} mutant(s) not checked yet: the run did not finish")
    left = sum(len(s.survivors) for s in scores)
    if left:
        print(
            f"\n{left} mutant(s) survived: kill each with a test beside its siblings, or list it in "
            f"tests/{LIST.name} with the reason no test can tell it apart"
        )
    ok = overall >= THRESHOLD and not unchecked and not any(s.listed_but_killed for s in scores)
    print(f"\nscore {overall:.1%} (killed / mutants not listed as equivalent); the bar is {THRESHOLD:.0%}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=SCRIPT, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="mutmut over modules, then the score per module")
    run.add_argument("modules", nargs="*", help="paths of configured modules (default: all)")
    run.add_argument("--changed-since", metavar="REF", help="only the modules changed since REF")
    run.add_argument("--max-children", type=int, default=2)
    run.add_argument("--no-run", action="store_true", help="read the results mutants/ holds, run nothing")
    run.add_argument("--again", action="store_true", help="run only the mutants that survived last time")
    run.add_argument("--diffs", action="store_true", help="show each survivor's change")
    refresh = commands.add_parser("refresh", help="record modules' hashes in the list after a look")
    refresh.add_argument("modules", nargs="+")
    args = parser.parse_args(argv)

    known = configured_modules()
    unknown = [module for module in args.modules if module not in known]
    if unknown:
        parser.error(f"not a module [tool.mutmut] mutates: {', '.join(unknown)}")
    listed = read_list()
    if args.command == "refresh":
        gone = [
            f"{LIST.name}:{listed.lines[name]}: {name} is no longer a mutant of {module_of(name)}"
            for name in sorted(listed.reasons)
            if module_of(name) in args.modules and name not in mutant_names(module_of(name))
        ]
        if gone:
            print("\n".join(gone), "\ntake these off the list (or list what they became), then refresh")
            return 1
        record_hashes(args.modules)
        print(f"recorded the hash of {', '.join(args.modules)} in tests/{LIST.name}")
        return 0

    modules = args.modules or known
    if args.changed_since:
        modules = [module for module in changed_modules(args.changed_since) if module in modules]
        if not modules:
            print(f"no module of the check engine changed since {args.changed_since}: nothing to mutate")
            return 0
    os.chdir(ROOT)
    ran = not args.no_run
    if args.again:
        again = [name for score in read_scores(modules, listed) for name in score.survivors]
        if again:
            run_mutmut(modules, args.max_children, again)
        else:
            print("nothing survived the last run: run without --again to check the modules afresh")
            ran = False
    elif ran:
        run_mutmut(modules, args.max_children)
    scores = read_scores(modules, listed)
    ok = report(scores, listed, args.diffs)
    if ok and ran and not any(s.survivors for s in scores):  # results of this very source
        record_hashes(modules)
        print(f"recorded the hash of each module run in tests/{LIST.name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
