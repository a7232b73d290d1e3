"""The matcher registry: every matcher of the spec format, declared once.

One `MatcherEntry` per matcher says what its argument is, what it reads of a turn and whether `not:`
can invert it; from what it reads follow `value:` (for matchers of the reply) and
`scope: conversation` (for tool checks and judges). Validation, compilation, grading and the docs
read these entries, and tests/test_matcher_registry.py holds schemas/spec.schema.json and the
matcher tables of README.md and docs/ to them. Adding a matcher is one function, one entry here,
its entry in the schema and its tests.

The deterministic matchers live in text_matchers, tool_matchers and turn_matchers: pure functions
that never raise and never touch the network, so they are cheap to run on every trial. The judge is
an entry too; its scoring goes through the judge package (grader.grade_judge). `specengine validate`
imports this module, so it loads nothing heavy (jsonschema loads inside `is_json`, when it is used).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from specengine.grade import text_matchers, tool_matchers, trajectory, turn_matchers
from specengine.grade.call_count import call_count
from specengine.grade.match_result import (
    NAME_LIMIT,
    Matcher,
    MatchInput,
    MatchResult,
    broken,
    quote,
    quoted_list,
    truncate,
)
from specengine.templates import value_text


class Argument(Enum):
    """What a matcher's argument is, in the words of the docs (docs/spec-format.md, a test holds them)."""

    NONE = "none"
    TEXT = "a text"
    TEXTS = "a text, or a list of texts"
    TEXT_LIST = "a list of texts"
    REGEX = "a regular expression"
    JSON_SCHEMA = "none, or a JSON Schema"
    TOOL_NAME = "a tool name"
    TOOL_CALL = "{name, args}"
    TOOL_CALLS = "a list of tool names or {name, args}"
    SECONDS = "seconds"
    CALLS = "a number of calls"
    TOKENS = "a number of tokens"
    STATE = "a mapping the state holds"
    JUDGE_KIND = "a judge kind"  # the docs list the kinds: closed_qa, factuality, custom, …

    @property
    def optional(self) -> bool:
        """The matcher may be written alone, as a bare string (`- succeeded`, `- is_json`)."""
        return self in (Argument.NONE, Argument.JSON_SCHEMA)

    @property
    def always_a_list(self) -> bool:
        return self in (Argument.TEXT_LIST, Argument.TOOL_CALLS)

    @property
    def keeps_numbers(self) -> bool:
        """A number stays a number after rendering; for every other argument it becomes its text."""
        return self in (Argument.SECONDS, Argument.CALLS, Argument.TOKENS)


class Reads(Enum):
    """What of a turn a matcher reads."""

    REPLY = "the reply text"
    TOOL_CALLS = "the tool calls"
    LATENCY = "the turn's latency"
    ERROR = "the endpoint's error"
    USAGE = "the token usage"
    STATE = "the agent's state"


@dataclass(frozen=True)
class MatcherEntry:
    """One matcher: its spec name, its function, its argument and what applies to it.

    `not_refused` is the whole message for `not: true` on a matcher it cannot invert (with what to
    write instead); otherwise `not:` inverts it, except with a list argument, where the message
    ends with `list_hint`. `function` is None for the judge, which `judge` marks. `options` are the
    keys beside the matcher that only it takes (`times` for called_tool); each is a keyword
    argument of its function.
    """

    name: str
    function: Matcher | None
    argument: Argument
    reads: Reads
    not_refused: str | None = None
    list_hint: str = "write one check per item"
    judge: bool = False
    options: tuple[str, ...] = ()

    @property
    def value_applies(self) -> bool:
        """`value:` replaces the reply, so it means something only to a matcher that reads the reply."""
        return self.reads is Reads.REPLY

    @property
    def conversation_applies(self) -> bool:
        """`scope: conversation` widens the turns whose tool calls or tokens are read, or what a judge
        is asked."""
        return self.reads in (Reads.TOOL_CALLS, Reads.USAGE) or self.judge

    @property
    def negatable(self) -> bool:
        """`not: true` can invert it (for a text-or-list argument: when it is one text)."""
        return self.not_refused is None and not self.argument.always_a_list

    def negation_refusal(self, argument: Any) -> str | None:
        """Why `not: true` cannot invert this check with this argument, or None when it can."""
        if self.not_refused is not None:
            return self.not_refused
        if self.argument.always_a_list or isinstance(argument, list):
            return f"not: true cannot invert a list: {self.list_hint}"
        return None


_NONE_APPEARS = "to require that none of them appears, write not_includes: [...]"

MATCHERS: dict[str, MatcherEntry] = {
    entry.name: entry
    for entry in (
        MatcherEntry(
            "succeeded",
            turn_matchers.succeeded,
            Argument.NONE,
            Reads.ERROR,
            not_refused="not: true cannot invert succeeded: remove not (a turn that errored never passes)",
        ),
        MatcherEntry(
            "includes", text_matchers.includes, Argument.TEXTS, Reads.REPLY, list_hint=_NONE_APPEARS
        ),
        MatcherEntry(
            "includes_any",
            text_matchers.includes_any,
            Argument.TEXT_LIST,
            Reads.REPLY,
            list_hint=_NONE_APPEARS,
        ),
        MatcherEntry(
            "not_includes",
            text_matchers.not_includes,
            Argument.TEXTS,
            Reads.REPLY,
            list_hint="to require that at least one appears, write includes_any: [...]",
        ),
        MatcherEntry("equals", text_matchers.equals, Argument.TEXT, Reads.REPLY),
        MatcherEntry("matches", text_matchers.matches, Argument.REGEX, Reads.REPLY),
        MatcherEntry("starts_with", text_matchers.starts_with, Argument.TEXT, Reads.REPLY),
        MatcherEntry("is_json", text_matchers.is_json, Argument.JSON_SCHEMA, Reads.REPLY),
        MatcherEntry(
            "state",
            turn_matchers.state,
            Argument.STATE,
            Reads.STATE,
            not_refused="not: true cannot invert state: write {$absent: true} or another argument matcher "
            "for the value that must not be there",
        ),
        MatcherEntry(
            "called_tool",
            tool_matchers.called_tool,
            Argument.TOOL_NAME,
            Reads.TOOL_CALLS,
            not_refused="not: true with called_tool: write not_called_tool: instead",
            options=("times",),
        ),
        MatcherEntry(
            "not_called_tool",
            tool_matchers.not_called_tool,
            Argument.TOOL_NAME,
            Reads.TOOL_CALLS,
            not_refused="not: true with not_called_tool: write called_tool: instead",
        ),
        MatcherEntry(
            "called_tool_with", tool_matchers.called_tool_with, Argument.TOOL_CALL, Reads.TOOL_CALLS
        ),
        MatcherEntry(
            "tool_calls_in_order",
            trajectory.tool_calls_in_order,
            Argument.TOOL_CALLS,
            Reads.TOOL_CALLS,
            options=("mode",),
        ),
        MatcherEntry(
            "max_tool_calls",
            tool_matchers.max_tool_calls,
            Argument.CALLS,
            Reads.TOOL_CALLS,
            not_refused="not: true cannot invert max_tool_calls: remove not and set the most calls allowed",
        ),
        MatcherEntry(
            "latency_below",
            turn_matchers.latency_below,
            Argument.SECONDS,
            Reads.LATENCY,
            not_refused="not: true cannot invert latency_below: remove not and set the limit in seconds",
        ),
        MatcherEntry(
            "tokens_below",
            turn_matchers.tokens_below,
            Argument.TOKENS,
            Reads.USAGE,
            not_refused="not: true cannot invert tokens_below: remove not and set the limit in tokens",
        ),
        MatcherEntry(
            "judge",
            None,
            Argument.JUDGE_KIND,
            Reads.REPLY,
            not_refused="not: true cannot invert a judge: to pass on a low score, write threshold: {lt: 0.5}",
            judge=True,
        ),
    )
}

MODIFIERS = ("name", "value", "soft", "threshold", "at_least", "not", "scope")
JUDGE_TEMPLATES = ("criteria", "expected", "prompt", "goal", "role")  # the judge options that are templates
JUDGE_OPTIONS = (*JUDGE_TEMPLATES, "choices", "samples", "examples")
MATCHER_OPTIONS = tuple(option for entry in MATCHERS.values() for option in entry.options)
CHECK_KEYS = (*MATCHERS, *MODIFIERS, *JUDGE_OPTIONS, *MATCHER_OPTIONS)  # every key a check may hold
BARE_MATCHERS = tuple(name for name, entry in MATCHERS.items() if entry.argument.optional)


def match(
    matcher: str, argument: Any, data: MatchInput, options: Mapping[str, Any] | None = None
) -> MatchResult:
    """Run a deterministic matcher by name, with the options it takes (`times`, `mode`). An unknown
    name or an unexpected fault is an `error` result with the reason, never an exception: one odd
    check must not end a whole run."""
    entry = MATCHERS.get(matcher)
    if entry is None or entry.function is None:
        return broken(f"unknown matcher {matcher!r}")
    try:
        if not entry.options:  # most matchers take none
            return entry.function(argument, data)
        given = {key: options[key] for key in entry.options if options and key in options}
        return entry.function(argument, data, **given)
    except Exception as exc:  # a defect or an argument shape the validator let through
        return broken(f"{matcher} could not run: {type(exc).__name__}: {exc}")


_SCALARS = (str, int, float, bool, type(None))


def default_name(matcher: str, argument: Any, options: Mapping[str, Any] | None = None) -> str:
    """A short name for a check without `name:`, e.g. `includes "Sunny"` or `matches /Sun+y/`.

    A check whose template renders to the same text for many rows gets the same name each time:
    names of a plain value and no options are kept (`_scalar_name`), not worded again per case."""
    if not options and type(argument) in _SCALARS:
        return _scalar_name(matcher, argument)
    return _name(matcher, argument, options)


@functools.lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True print differently
def _scalar_name(matcher: str, argument: str | int | float | bool | None) -> str:
    return _name(matcher, argument, None)


def _name(matcher: str, argument: Any, options: Mapping[str, Any] | None) -> str:
    entry = MATCHERS.get(matcher)
    kind = entry.argument if entry is not None else Argument.TEXT
    options = options or {}
    if argument is None or kind is Argument.NONE:
        text = matcher
    elif kind is Argument.REGEX:
        text = f"{matcher} /{value_text(argument)}/"
    elif kind is Argument.JSON_SCHEMA:
        text = f"{matcher} (schema)" if isinstance(argument, Mapping) else matcher
    elif kind is Argument.TOOL_CALL and isinstance(argument, Mapping):
        args = argument.get("args")
        text = f"{matcher} {value_text(argument.get('name', ''))}"
        if args not in (None, {}):
            text += f" {quote(args, NAME_LIMIT)}"
    elif kind is Argument.STATE:
        text = f"{matcher} {quote(argument)}"  # cut to NAME_LIMIT as a whole, below
    elif kind is Argument.TOOL_CALLS and isinstance(argument, (list, tuple)):
        mode = options.get("mode", trajectory.DEFAULT_MODE)
        names = [
            value_text(item.get("name", "")) if isinstance(item, Mapping) else value_text(item)
            for item in argument
        ]
        joiner = " → " if mode in ("in_order", "exact") else ", "
        text = (
            f"{matcher} "
            + joiner.join(names)
            + ("" if mode == trajectory.DEFAULT_MODE else f" ({mode.replace('_', ' ')})")
        )
    elif kind is Argument.TOOL_NAME and options.get("times") is not None:
        count = call_count(options["times"])
        text = f"{matcher} {value_text(argument)}" + (f" {count}" if count is not None else "")
    elif kind in (Argument.TOOL_NAME, Argument.JUDGE_KIND, Argument.SECONDS, Argument.CALLS, Argument.TOKENS):
        text = f"{matcher} {value_text(argument)}"
    elif isinstance(argument, (list, tuple)):
        text = f"{matcher} {quoted_list([value_text(item) for item in argument])}"
    else:
        text = f"{matcher} {quote(argument if isinstance(argument, str) else value_text(argument))}"
    return truncate(" ".join(text.split()), NAME_LIMIT)
