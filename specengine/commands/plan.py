"""`specengine plan`: print the compiled eval plan without touching the network."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specengine.cli import app
from specengine.commands.options import Config, JudgeModel, Keyword, Labels, Limit, ProjectFile

if TYPE_CHECKING:
    from specengine.plan import Case, EndpointConfig


def case_as_dict(case: Case, endpoint: EndpointConfig) -> dict[str, Any]:
    """What a case will do: where it is sent, each turn's message, each check and its line."""
    steps: list[dict[str, Any]] = []
    for step in case.steps:
        if step.kind == "reset":
            steps.append({"reset": True})
            continue
        steps.append(
            {
                "send": step.message,
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
        "endpoint": {"name": case.endpoint, "protocol": endpoint.protocol, "url": endpoint.url},
        "labels": list(case.labels),
        "trials": case.trials,
        "pass_rate": case.pass_rate,
        "timeout": case.timeout,
        "skip": case.skip,
        "steps": steps,
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
) -> None:
    """Show what would be sent, to where, and which checks apply (no network).

    Every template is rendered with every dataset row, so a misspelt key (input.ctiy) shows up
    here, before a run. Exit 0 when the plan compiles, 2 when a spec or the selection is wrong.
    """
    from specengine.errors import UsageError
    from specengine.run.prepare import PrepareOptions, prepare

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
            ),
        )
        cases = [case_as_dict(case, prepared.plan.endpoints[case.endpoint]) for case in prepared.cases()]
    except UsageError as exc:  # a SpecError too: a template that fails for one dataset row shows up here
        for line in exc.lines:
            typer.echo(line, err=True)
        raise typer.Exit(2) from None
    if not cases:  # as `run` does: a plan that would run nothing is a mistake in the command line
        typer.echo("error: the selection matched no case (check --label, -k and PATH::eval)", err=True)
        raise typer.Exit(2)
    if json_out:
        typer.echo(json.dumps({"cases": cases}, indent=2, ensure_ascii=False))
        return
    no_judge = not prepared.plan.judge.model
    for case in cases:
        endpoint = case["endpoint"]
        typer.echo(f"{case['id']}  ({case['spec']}:{case['line']})")
        target = endpoint["url"] or ("built-in demo agent" if endpoint["protocol"] == "demo" else "")
        typer.echo(f"  endpoint: {endpoint['name']} [{endpoint['protocol']}] {target}".rstrip())
        if case["trials"] > 1:
            typer.echo(f"  trials: {case['trials']} (pass rate {case['pass_rate']:g})")
        if case["skip"]:
            typer.echo(f"  skipped: {case['skip']}")
        turn = 0
        for step in case["steps"]:
            if step.get("reset"):
                typer.echo("  --- reset ---")
                continue
            turn += 1
            typer.echo(f"  turn {turn} send: {step['send']!r}")
            for check in step["checks"]:
                soft = "" if check["gate"] else " (soft)"
                skipped = (
                    " (will be skipped: no judge configured)"
                    if no_judge and check["matcher"] == "judge"
                    else ""
                )
                typer.echo(f"    - {check['name']}{soft}{skipped}  [line {check['line']}]")
    typer.echo(f"{len(cases)} case{'s' * (len(cases) != 1)}", err=True)
