"""`specengine plan`: print the compiled eval plan without touching the network."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specengine.commands import app, usage_exit
from specengine.commands.options import (
    Cells,
    Config,
    JudgeModel,
    Keyword,
    Labels,
    Limit,
    Matrix,
    ProjectFile,
)

if TYPE_CHECKING:
    from specengine.plan import Case, EndpointConfig


def case_as_dict(case: Case, endpoint: EndpointConfig | None) -> dict[str, Any]:
    """What a case will do: where it is sent, each turn's message, each check and its line. A
    recorded conversation's case (`endpoint` None) sends nothing: its turns are the recorded user
    messages, under `recorded`, and the case says where the conversation was read."""
    steps: list[dict[str, Any]] = []
    for step in case.steps:
        if step.kind == "reset":
            steps.append({"reset": True})
            continue
        said: dict[str, Any] = {"recorded" if endpoint is None else "send": step.message}
        if step.simulation is not None:  # a simulated user writes the messages as the run goes
            simulation = step.simulation
            said = {
                "simulate": {
                    "user": simulation.user,
                    "goal": simulation.goal,
                    "first_message": simulation.first_message,
                    "max_turns": simulation.max_turns,
                    "simulator": simulation.simulator,
                }
            }
        steps.append(
            {
                **said,
                "checks": [
                    {
                        "name": check.name,
                        "matcher": check.matcher,
                        "line": check.source.line,
                        "gate": check.gate,
                        "threshold": check.threshold.as_dict(),
                    }
                    for check in step.checks
                ],
            }
        )
    return {
        "id": case.id,
        "spec": case.spec,
        "line": case.line,
        "suite": case.suite,
        "endpoint": {
            "name": case.endpoint,
            "protocol": endpoint.protocol if endpoint else "recorded",
            "url": endpoint.url if endpoint else None,
        },
        "labels": list(case.labels),
        "trials": case.trials,
        "pass_rate": case.pass_rate,
        "timeout": case.timeout,
        "skip": case.skip,
        "steps": steps,
        **({"cell": case.cell} if case.cell is not None else {}),
        **({"recorded": case.recording.as_dict()} if case.recording is not None else {}),
    }


@app.command("plan")
def plan_command(
    paths: Annotated[
        list[str],
        typer.Argument(metavar="PATH", help="Spec files or folders; PATH::eval name selects one eval."),
    ],
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    label: Labels = None,
    keyword: Keyword = None,
    limit: Limit = None,
    project: ProjectFile = None,
    config: Config = None,
    judge_model: JudgeModel = None,
    matrix: Matrix = False,
    cell: Cells = None,
) -> None:
    """Show what would be sent, to where, and which checks apply (no network).

    Every template is rendered with every dataset row, so a misspelt key (input.ctiy) shows up
    here, before a run. Exit 0 when the plan compiles, 2 when a spec or the selection is wrong.
    """
    from specengine.engine.prepare import PrepareOptions, count_cases, prepare
    from specengine.errors import UsageError
    from specengine.source.matrix import split_axis_arguments

    paths, axes = split_axis_arguments(paths) if matrix else (paths, [])
    try:
        prepared = prepare(
            paths,
            PrepareOptions(
                project=project,
                config=config,
                labels=tuple(label or ()),
                keyword=keyword,
                limit=limit,
                judge_model=judge_model,
                resolve_endpoints=False,
                check_variables=True,
                matrix=matrix or bool(cell),
                axes=tuple(axes),
                cells=tuple(cell or ()),
            ),
        )
        # a first pass renders every template with every row, so a failing row stops the command
        # before anything is printed; the second prints case by case, holding none of them
        count = count_cases(prepared).count
    except UsageError as exc:  # a SpecError too: a template that fails for one dataset row shows up here
        raise usage_exit(*exc.lines) from None
    if not count:  # as `run` does: a plan that would run nothing is a mistake in the command line
        raise usage_exit("error: the selection matched no case (check --label, -k and PATH::eval)")
    endpoints = prepared.plan.endpoints
    per_cell: dict[str | None, int] = {}

    def counted(case: Case) -> Case:
        per_cell[case.cell] = per_cell.get(case.cell, 0) + 1
        return case

    cases = (case_as_dict(counted(case), endpoints.get(case.endpoint)) for case in prepared.cases())
    out = sys.stdout
    cells = prepared.plan.cells
    if json_out:  # the text json.dumps({"cases": [...]}, indent=2) gives, one case at a time
        out.write('{\n  "cases": [')
        for position, case in enumerate(cases):
            text = json.dumps(case, indent=2, ensure_ascii=False).replace("\n", "\n    ")
            out.write(("\n    " if position == 0 else ",\n    ") + text)
        out.write("\n  ]")
        if cells:
            listed = [{**one.as_dict(), "cases": per_cell.get(one.name, 0)} for one in cells]
            text = json.dumps(listed, indent=2, ensure_ascii=False).replace("\n", "\n  ")
            out.write(f',\n  "cells": {text}')
        out.write("\n}\n")
        out.flush()
        return
    no_judge = not prepared.plan.judge.model
    for case in cases:
        out.write("".join(f"{line}\n" for line in _case_lines(case, no_judge)))
    if cells:
        out.write(f"{len(cells)} cell{'s' * (len(cells) != 1)}:\n")
        for one in cells:
            settings = ", ".join(f"{name}={value}" for name, value in one.shown.items())
            where = f"endpoint {one.endpoint}" if one.endpoint else "each spec's endpoint"
            detail = f"{where}{'; ' + settings if settings else ''}"
            n = per_cell.get(one.name, 0)
            out.write(f"  {one.name}: {n} case{'s' * (n != 1)} ({detail})\n")
    out.flush()
    typer.echo(f"{count} case{'s' * (count != 1)}", err=True)


def _case_lines(case: dict[str, Any], no_judge: bool) -> Iterator[str]:
    """The lines `plan` prints for one case."""
    endpoint = case["endpoint"]
    yield f"{case['id']}  ({case['spec']}:{case['line']})"
    if case.get("cell"):
        yield f"  cell: {case['cell']}"
    recorded = case.get("recorded")
    if recorded is not None:
        where = f" ({recorded['file']})" if recorded.get("file") else ""
        yield (
            f"  recorded: conversation {recorded['conversation']} of source {recorded['source']}{where},"
            " graded as it happened: nothing is sent"
        )
    else:
        target = endpoint["url"] or ("built-in demo agent" if endpoint["protocol"] == "demo" else "")
        yield f"  endpoint: {endpoint['name']} [{endpoint['protocol']}] {target}".rstrip()
    if case["trials"] > 1:
        yield f"  trials: {case['trials']} (pass rate {case['pass_rate']:g})"
    if case["skip"]:
        yield f"  skipped: {case['skip']}"
    turn, simulated = 0, False
    for step in case["steps"]:
        if step.get("reset"):
            yield "  --- reset ---"
            continue
        turn += 1
        simulate = step.get("simulate")
        if simulate is not None:
            simulated = True
            named = f" (simulator {simulate['simulator']})" if simulate.get("simulator") else ""
            yield f"  turn {turn}… simulated user{named}: {simulate['user']!r}"
            yield f"    goal: {simulate['goal']!r}, at most {simulate['max_turns']} messages"
            if simulate.get("first_message"):
                yield f"    first message: {simulate['first_message']!r}"
        elif "recorded" in step:
            yield f"  turn {turn} recorded: {step['recorded']!r}"
        else:  # after a simulated part the turn's number depends on how long it went
            yield f"  {'then' if simulated else f'turn {turn}'} send: {step['send']!r}"
        for check in step["checks"]:
            soft = "" if check["gate"] else " (soft)"
            skipped = (
                " (will be skipped: no judge configured)" if no_judge and check["matcher"] == "judge" else ""
            )
            yield f"    - {check['name']}{soft}{skipped}  [line {check['line']}]"
