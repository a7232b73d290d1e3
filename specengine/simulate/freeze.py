"""A simulated conversation frozen into a scripted eval: the failure a simulated user found becomes a
plain regression test that needs no simulator.

The frozen eval is the original one with its `simulate:` step replaced by the user messages the
simulated user sent, as `send:` turns: an eval's own `simulate:` becomes `turns:` (its `expect:`
still checks the last turn, the simulated part's last reply), and a `simulate:` step among turns
becomes as many sends, its `expect:` on the last of them. The case's row is written out as the eval's
own `input`, `expected` and `metadata` (with `dataset: none`), so the eval's templates render as
they did. A `goal_completed` judge without a `goal:` gets the simulated user's goal, which the eval
no longer declares. The messages are the simulator's text, taken literally: any Jinja2 markup in them
is kept from rendering with `{% raw %}`. A comment at the top says where the eval came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specengine.errors import UsageError
from specengine.source.loader import as_text

if TYPE_CHECKING:
    from specengine.results.loaded import Case
    from specengine.transcript import SimulationEnd

GOAL_JUDGES = ("goal_completed",)  # conversation judges that read the eval's goal when they have none
_TEMPLATE_MARKUP = re.compile(r"\{[{%#]")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Frozen:
    """The frozen spec: its YAML text and the name of its one eval."""

    text: str
    eval_name: str


def simulated_messages(transcript: Sequence[Mapping[str, Any]]) -> dict[int, list[str]]:
    """The messages each simulate step's user sent, by the step's index."""
    sent: dict[int, list[str]] = {}
    for message in transcript:
        if (
            message.get("role") == "user"
            and message.get("simulated")
            and isinstance(message.get("step"), int)
        ):
            sent.setdefault(int(message["step"]), []).append(str(message.get("content") or ""))
    return sent


def freeze_eval(
    document_data: Mapping[str, Any],
    eval_index: int,
    case: Case,
    variables: Mapping[str, Mapping[str, Any]],
    trial: int,
    origin: str,
) -> Frozen:
    """The frozen spec for trial `trial` of a results `case` of the eval at `eval_index`.

    `variables` are the case's input, expected and metadata as the run rendered them; `origin`
    names the results file and run for the comment. UsageError when the trial holds no simulated
    conversation to freeze.
    """
    trials = case.trials
    if not 0 <= trial < len(trials):
        raise UsageError(f"error: case {case.id} has {len(trials)} trial(s); there is no trial {trial + 1}")
    ran = trials[trial]
    sent = simulated_messages(ran.transcript)
    ends = ran.simulations
    if not ends:
        raise UsageError(f"error: case {case.id} has no simulated conversation to freeze")
    raw = _plain(document_data["evals"][eval_index])
    name = _frozen_name(as_text(raw["name"]), case.row)
    frozen: dict[str, Any] = {"name": name}
    for key, value in raw.items():
        if key in ("name", "simulate", "turns", "dataset", "input", "expected", "metadata", "expect"):
            continue
        frozen[key] = value
    for key in ("input", "expected", "metadata"):
        if variables.get(key):
            frozen[key] = _plain(dict(variables[key]))
    if "dataset" in document_data or "dataset" in raw:
        frozen["dataset"] = "none"
    goal = ends[0].goal
    if "simulate" in raw:
        frozen["turns"] = [{"send": _literal(text)} for text in _block(sent, 0, case)]
    else:
        frozen["turns"] = _turns(raw["turns"], sent, case, goal)
    if "expect" in raw:
        frozen["expect"] = _with_goal(raw["expect"], goal)
    data = {key: _plain(value) for key, value in document_data.items() if key not in ("evals", "dataset")}
    data["evals"] = [frozen]
    return Frozen(_comment(origin, case, ends) + _dump(data), name)


def default_name(spec_stem: str, eval_name: str, row: str | None) -> str:
    """`<spec>-<eval>[-<row>].yaml`, in words a file system takes."""
    parts = [spec_stem, eval_name] + ([row] if row else [])
    return "-".join(_SLUG.sub("-", part.lower()).strip("-") or "case" for part in parts) + ".yaml"


def _turns(turns: Sequence[Any], sent: Mapping[int, list[str]], case: Case, goal: str) -> list[Any]:
    out: list[Any] = []
    for index, step in enumerate(turns):
        if not (isinstance(step, Mapping) and "simulate" in step):
            out.append(step)
            continue
        messages = _block(sent, index, case)
        sends: list[dict[str, Any]] = [{"send": _literal(text)} for text in messages]
        if "expect" in step:
            sends[-1]["expect"] = _with_goal(step["expect"], goal)
        out.extend(sends)
    return out


def _block(sent: Mapping[int, list[str]], index: int, case: Case) -> list[str]:
    messages = sent.get(index) or []
    if not messages:
        raise UsageError(
            f"error: the simulated user of case {case.id} sent no message: there is nothing to freeze"
        )
    return messages


def _with_goal(checks: Any, goal: str) -> Any:
    """The checks, a goal judge with no `goal:` given the simulated user's goal."""
    if not isinstance(checks, list) or not goal:
        return checks
    return [
        {**check, "goal": goal}
        if isinstance(check, dict) and check.get("judge") in GOAL_JUDGES and "goal" not in check
        else check
        for check in checks
    ]


def _literal(text: str) -> str:
    """A message as a template that renders to exactly itself."""
    if not _TEMPLATE_MARKUP.search(text):
        return text
    return (
        "{% raw %}"
        + text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")
        + "{% endraw %}"
    )


def _frozen_name(name: str, row: str | None) -> str:
    suffix = f" - frozen {row}" if row else " - frozen"
    return (name + suffix).replace("::", ":").replace("[", "(").replace("]", ")")


def _comment(origin: str, case: Case, ends: Sequence[SimulationEnd]) -> str:
    lines = [
        f"Frozen by `specengine freeze` from {origin}, case {case.id}:",
        "a simulated user's conversation with the agent, replayed as scripted turns (no simulator needed).",
    ]
    for end in ends:
        who = f" ({end.simulator})" if end.simulator else ""
        lines.append(f"Simulated user{who}, stopped by {end.stop_reason} after {end.turns} message(s):")
        lines.extend(f"  user: {line}" for line in end.user.splitlines())
        lines.extend(f"  goal: {line}" for line in end.goal.splitlines())
    return "".join(f"# {line}".rstrip() + "\n" for line in lines) + "\n"


def _dump(data: Any) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def _plain(value: Any) -> Any:
    """Loaded YAML as plain values (numbers keep their spelling where it was kept)."""
    if isinstance(value, Mapping):
        return {as_text(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return as_text(value) if not isinstance(value, str) else str(value)
