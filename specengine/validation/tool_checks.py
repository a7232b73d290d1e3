"""The checks of tool-call checks that the schema cannot express, each at its key with the fix.

The schema knows the `$` keys of argument matchers and what each takes; this module knows their
rules (grade.arg_matchers.matcher_problems, the same ones grading applies after rendering): which
keys go together, patterns that do not compile, ranges no number fits, a `$` key written without
its `$` beside real matchers, a matcher written where argument names belong, and a `times:` range
no count fits. A place the schema already reported is not reported twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from specengine.grade.arg_matchers import (
    ARG_MATCHERS,
    Place,
    is_matcher,
    iter_arg_matchers,
    matcher_problems,
)
from specengine.grade.call_count import count_problem
from specengine.source.loader import KeyPath
from specengine.suggest import closest, did_you_mean
from specengine.validation.file_report import Report


def check_tool_check(report: Report, entry: Mapping[str, Any], here: KeyPath, matcher: str) -> None:
    """The arguments of `called_tool_with` and of `tool_calls_in_order`'s calls, and `times:`."""
    argument = entry.get(matcher)
    if matcher == "called_tool_with" and isinstance(argument, Mapping):
        check_args(report, argument.get("args"), (*here, matcher, "args"))
    elif matcher == "tool_calls_in_order" and isinstance(argument, list):
        for index, item in enumerate(argument):
            if isinstance(item, Mapping):
                check_args(report, item.get("args"), (*here, matcher, index, "args"))
    if matcher == "called_tool" and "times" in entry:
        problem = count_problem(entry["times"])
        if problem:
            _report(report, (*here, "times"), problem)


def check_args(report: Report, args: Any, here: KeyPath) -> None:
    """Every argument matcher inside `args`, and the mistakes that make one read as an object."""
    if not isinstance(args, Mapping):
        return
    for key in args:
        if isinstance(key, str) and key in ARG_MATCHERS:
            _report(
                report,
                (*here, key),
                f"args lists the arguments by name: {key} is an argument matcher, so write it under the"
                f" argument it checks, e.g. order_id: {{{key}: …}}",
                at_key=True,
            )
    for path, matcher in iter_arg_matchers(args):
        for problem in matcher_problems(matcher, rendered=False):
            if problem.unknown_key:
                continue  # the schema names it, with its "did you mean"
            at = (*here, *path) if problem.key is None else (*here, *path, problem.key)
            _report(report, at, problem.message, at_key=problem.place is Place.KEY)
    for path, mapping in _objects(args):
        _mixed(report, mapping, (*here, *path))


def _mixed(report: Report, mapping: Mapping[str, Any], here: KeyPath) -> None:
    """`{$approx: 19.99, within: 0.01}`: one key lacks its `$`, so the whole is read as an object."""
    matchers = [key for key in mapping if isinstance(key, str) and key in ARG_MATCHERS]
    if not matchers:
        return
    for key in mapping:
        if isinstance(key, str) and key.startswith("$"):
            continue
        guess = closest(f"${key}", ARG_MATCHERS) if isinstance(key, str) else None
        _report(
            report,
            (*here, key),
            f"'{key}' is not an argument matcher: beside {', '.join(matchers)} every key must start"
            f" with $ (as written, this mapping is an object the argument must contain){did_you_mean(guess)}",
            at_key=True,
        )


def _objects(value: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Mapping]]:
    """The mappings inside argument values that are objects rather than matchers."""
    if isinstance(value, Mapping):
        if path and not is_matcher(value):
            yield path, value
        for key, item in value.items():
            yield from _objects(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _objects(item, (*path, index))


def _report(report: Report, here: KeyPath, message: str, *, at_key: bool = False) -> None:
    node = report.document.key_node_at(here) if at_key else report.node(here)
    if node is not None and id(node) in report.flagged:
        return
    report.at(here, message, at_key=at_key)
