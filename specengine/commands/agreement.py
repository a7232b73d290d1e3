"""`specengine agreement [RUNS…]`: how often judges agreed with the people who reviewed their verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specengine.commands import app, cannot_write, usage_exit
from specengine.commands.query import ProjectDir

if TYPE_CHECKING:
    from specengine.review.agreement import JudgeVerdict
    from specengine.review.store import Review


@app.command()
def agreement(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[RUNS]...", help="Run ids or results files (default: every run of the project)."
        ),
    ] = None,
    folder: ProjectDir = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    export_examples: Annotated[
        Path | None,
        typer.Option(
            "--export-examples",
            metavar="FILE",
            help="Also write the reviewed judge verdicts as few-shot examples (YAML), one list per"
            " judge check, for its examples:.",
        ),
    ] = None,
) -> None:
    """Judge agreement with human reviews: agreement rate, Cohen's kappa, the 2×2 table, disagreements.

    Reviews are made in `specengine serve` (on a judge check of a case) and kept in
    .specengine/reviews.jsonl. Each reviewed reply counts once, judged by the newest run given.
    `--export-examples FILE` turns those reviews into examples a judge learns from.
    """
    import json

    from specengine.errors import UsageError
    from specengine.index.judged import judge_verdicts_for
    from specengine.report.agreement_text import agreement_text
    from specengine.review.agreement import measure_agreement

    try:
        verdicts, reviews = judge_verdicts_for(folder, runs or [])
    except UsageError as exc:
        raise usage_exit(*exc.lines) from None
    report = measure_agreement(verdicts, reviews)
    if json_out:
        typer.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(agreement_text(report), nl=False)
    if export_examples is not None:
        _export_examples(export_examples, folder, runs or [], verdicts, reviews)


def _export_examples(
    target: Path, folder: Path, runs: list[str], verdicts: list[JudgeVerdict], reviews: list[Review]
) -> None:
    """Write the reviewed judge verdicts as few-shot examples; say how many, on stderr."""
    from specengine.index.judged import case_documents
    from specengine.results.decode import read_case
    from specengine.review.agreement import reviewed_verdicts
    from specengine.review.examples import examples_yaml, reviewed_example

    pairs = reviewed_verdicts(verdicts, reviews)
    documents = case_documents(folder, runs, [(verdict.run, verdict.case) for verdict, _ in pairs])
    examples = []
    for verdict, review in pairs:
        document = documents.get((verdict.run, verdict.case))
        example = reviewed_example(verdict, review, read_case(document)) if document is not None else None
        if example is not None:
            examples.append(example)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(examples_yaml(examples), encoding="utf-8")
    except OSError as exc:
        raise usage_exit(cannot_write(target, exc)) from None
    judges = len({example.judge for example in examples})
    overrides = sum(1 for example in examples if example.overrides)
    typer.echo(
        f"wrote {target}: {len(examples)} example{'s' * (len(examples) != 1)} for {judges}"
        f" judge check{'s' * (judges != 1)} ({overrides} overriding the judge)",
        err=True,
    )
