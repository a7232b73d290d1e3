"""A matrix run's plan: the specs compiled once per cell, the cells' cases interleaved.

Every cell holds the same cases (only the endpoint and the `vars` differ), so the plan walks the
cells side by side: the first case in every cell, then the second in every cell, and so on. Cells
then run at the same time, each endpoint within its own max_concurrency, and an interrupted run has
every cell about as far along. A case's id ends with ` @ <cell>`, which makes it unique in the
results file, so `--resume`, `--rerun-failed`, `--shard` and `merge` work per cell as they work per
case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

from specengine.compile.case_stream import CaseStream
from specengine.compile.compiler import CompileOptions, SpecInput, compile_plan
from specengine.plan import Case, Cell, EndpointConfig, JudgeConfig, Plan, SimulatorConfig
from specengine.source.matrix import cell_case_id


def compile_matrix(
    specs: Sequence[SpecInput],
    judge: JudgeConfig,
    options: CompileOptions,
    cells: Sequence[Cell],
    simulators: Mapping[str | None, SimulatorConfig] | None = None,
) -> Plan:
    """The plan of every cell; SpecError (located) or MissingVariable as compile_plan raises them."""
    plans = [compile_plan(specs, judge, replace(options, cell=cell), simulators) for cell in cells]
    endpoints: dict[str, EndpointConfig] = {}
    for plan in plans:
        endpoints.update(plan.endpoints)
    factories = [_uncached(plan) for plan in plans]
    names = [cell.name for cell in cells]

    def cases() -> Iterator[Case]:
        index = 0
        for side_by_side in zip(*(factory() for factory in factories), strict=True):
            for name, case in zip(names, side_by_side, strict=True):
                yield replace(case, id=cell_case_id(case.id, name), index=index, cell=name)
                index += 1

    return Plan(
        endpoints=endpoints,
        judge=judge,
        case_factory=CaseStream(cases),
        specs=plans[0].specs if plans else (),
        simulators=dict(simulators or {}),
        cells=tuple(cells),
    )


def _uncached(plan: Plan) -> Callable[[], Iterator[Case]]:
    """A cell's cases compiled afresh on each pass: the matrix plan keeps what it hands on itself,
    so a cell's own stream keeping its cases too would hold them twice."""
    factory = plan.case_factory
    return factory.compile_cases if isinstance(factory, CaseStream) else factory
