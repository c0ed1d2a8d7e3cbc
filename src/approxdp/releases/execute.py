"""Execute an allocated plan: check and aggregate in the engine, spend, then add noise.

Order matters. Everything that can fail runs before the spend: the data checks (columns,
types, empty table, domain: :mod:`~approxdp.releases._checks`), every aggregation
(:mod:`~approxdp.releases._aggregation`), and the preparation of the noise itself — each
query's mechanism built from the σ its allocation calibrated, the secure lattice and its
certificate, the check that every aggregate is finite and fits the lattice, the comparisons
with other calibrations (:mod:`~approxdp.releases.noise`) — and last the check that every
query will add exactly the noise the spend records. A failing release therefore spends
nothing, and a spend is recorded only for a release that will be delivered. The accountant is
charged before any noise is drawn, so a refused spend
(:class:`~approxdp.errors.BudgetExceededError`) releases nothing. Then each query is noised,
in this process (:mod:`~approxdp.releases._driver`) or, over a large declared domain, where the
data lives (:mod:`~approxdp.releases.dense`).

A release whose noise comes from a seed (``PrivateTable(seed=...)``) is a reproducible
simulation, not a private release: its result says so everywhere (``secure = False``, values
that :func:`~approxdp.mechanisms.is_secure` rejects,
:data:`~approxdp.releases.noise.SEEDED_NOTE` in its notes and ``explain()``, the file name of
cells written by the engine).

A plan's statistics computed from derived columns (:class:`~approxdp.releases.derived.
DerivedQuery`: quantiles, variance, bounds) run their parts on the table the engine derives
for each (:meth:`Engine.derive <approxdp.engines.base.Engine.derive>`): the checks and
aggregations above run per table, all before the one spend; after it, each statistic is
computed from its parts' noisy results.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any, Generic

import numpy as np
import numpy.typing as npt

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.protocols import Accountant
from approxdp.engines.base import Engine, TableT
from approxdp.engines.shapes import AggregateRequest, AggregateResult, CellAggregate
from approxdp.errors import DataCheckError, DataError, SmallDataWarning
from approxdp.releases._aggregation import build_request, cell_matrix, run_merged
from approxdp.releases._checks import (
    EMPTY_TABLE,
    check_domain_in_result,
    check_measure_columns,
    check_outside_domain,
    check_request_columns,
    empty_table,
)
from approxdp.releases._driver import release_collected
from approxdp.releases._intervals import normal_quantile
from approxdp.releases.dense import (
    LARGE_DOMAIN_CELLS,
    check_cell_columns,
    check_output_dir,
    n_cells,
    release_dense,
)
from approxdp.releases.derived import DerivedQuery, check_numeric_column
from approxdp.releases.noise import (
    PreparedNoise,
    check_recorded_sigma,
    check_releasable,
    prepare_noise,
)
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery
from approxdp.releases.result import ReleaseResult

__all__ = ["execute"]

FloatArray = npt.NDArray[np.float64]


@dataclass
class _Stage(Generic[TableT]):
    """The parts of a plan that run on one table (the plan's, or one a statistic derives),
    checked and aggregated, with their noise prepared: everything before the spend."""

    table: TableT
    parts: list[int]  # indices into allocated.queries
    queries: list[AllocatedQuery]
    requests: list[AggregateRequest] = field(default_factory=list)
    large: list[bool] = field(default_factory=list)
    aggregates: dict[int, AggregateResult] = field(default_factory=dict)
    collected: dict[int, tuple[list[tuple[Any, ...]], FloatArray]] = field(default_factory=dict)
    cells: dict[int, CellAggregate] = field(default_factory=dict)  # large domains, held
    n_rows: int = -1


def execute(
    allocated: AllocatedPlan,
    engine: Engine[TableT],
    table: TableT,
    accountant: Accountant,
    *,
    key: int,
    rng: np.random.Generator | None,
    level: float = 0.95,
    large_domain_cells: int = LARGE_DOMAIN_CELLS,
    output_dir: str | None = None,
) -> tuple[ReleaseResult, ...]:
    """Run ``allocated`` on ``table``; spend through ``accountant``; return one result per
    query of the plan.

    Queries over a declared domain of at least ``large_domain_cells`` cells are aggregated
    before the spend (:meth:`~approxdp.engines.base.Engine.aggregate_cells`, held where the
    data lives) and noised there after it (:mod:`approxdp.releases.dense`); their cells stay in
    the engine (written under ``output_dir`` if given) and the result's ``table`` points to
    them. Every result carries the spend's receipt when the accountant gives one.
    The parts of a derived statistic are always collected (its post-processing reads them).

    Raises:
        DataError: Missing/misspelled or non-numeric column, empty table, data outside a
            declared domain (``outside_domain="error"``). Nothing is spent.
        BudgetExceededError: From the accountant; nothing is spent and no noise drawn.
        InternalError: A query's noise is not the noise the spend records (a bug). Nothing
            is spent.
    """
    schema = engine.schema(table)
    entries = allocated.plan.queries
    for entry in entries:  # before any table is derived or scanned
        if isinstance(entry, DerivedQuery):
            check_numeric_column(schema, entry.column, entry.label())
    plain = _Stage(table, [], [])
    stages: list[tuple[DerivedQuery | None, _Stage[TableT]]] = [(None, plain)]
    queries = list(allocated.queries)
    for i, entry in enumerate(entries):
        parts = [j for j, owner in enumerate(allocated.owners) if owner == i]
        if not isinstance(entry, DerivedQuery):
            plain.parts += parts
            continue
        derivation = entry.derivation(schema)  # its columns named unlike the table's
        for j, part in zip(parts, entry.parts(derivation), strict=True):
            queries[j] = dataclasses.replace(queries[j], query=part)  # same spec, same Δ
        stages.append((entry, _Stage(engine.derive(table, derivation), parts, [])))
    try:
        return _spend_and_release(allocated, engine, accountant, entries, queries, stages,
                                  key=key, rng=rng, level=level,
                                  large_domain_cells=large_domain_cells, output_dir=output_dir)
    finally:
        for _, stage in stages:  # (map_cells closed those it used)
            for aggregate in stage.cells.values():
                aggregate.close()


def _spend_and_release(
    allocated: AllocatedPlan, engine: Engine[TableT], accountant: Accountant,
    entries: tuple[Any, ...], queries: list[AllocatedQuery],
    stages: list[tuple[DerivedQuery | None, _Stage[TableT]]], *, key: int,
    rng: np.random.Generator | None, level: float, large_domain_cells: int,
    output_dir: str | None,
) -> tuple[ReleaseResult, ...]:
    """Check and aggregate every stage, prepare the noise, spend, release (the body of
    :func:`execute`; the large domains' aggregates it leaves in the stages are closed
    there)."""
    for stat, stage in stages:
        stage.queries = [queries[j] for j in stage.parts]
        if not stage.parts:
            continue
        try:
            _check_and_aggregate(stage, allocated, engine, key=key,
                                 large_domain_cells=0 if stat else large_domain_cells,
                                 output_dir=output_dir)
        except DataError as exc:
            if stat is None or not str(exc).startswith(EMPTY_TABLE):
                raise
            raise DataCheckError(
                f"{stat.label()}: column {stat.column!r} has no value (every row is missing, "
                "or the table is empty); nothing was spent",
                advice=f"{stat.label()}: column {stat.column!r} has no values to release",
            ) from exc
    # the noise of every part, prepared and checked against its aggregates before the spend
    seeded = rng is not None
    noises: dict[int, PreparedNoise] = {}
    for _, stage in stages:
        for j, aq, big in zip(stage.parts, stage.queries, stage.large, strict=True):
            if big:
                dimension = n_cells(aq.query.cell_domain) * len(aq.query.measures())
                noises[j] = prepare_noise(aq, allocated, seeded, dimension)
                check_releasable(aq, noises[j], None, stage.n_rows)
            else:
                true = stage.collected[j][1]
                noises[j] = prepare_noise(aq, allocated, seeded, max(true.size, 1))
                check_releasable(aq, noises[j], true, stage.n_rows)
    for _, stage in stages:  # cells chosen privately: warn where most would be dropped
        for j, aq, big in zip(stage.parts, stage.queries, stage.large, strict=True):
            if aq.threshold is not None and not big:
                warn_below_threshold(aq, stage.collected[j][1])
    for stat, stage in stages:  # a statistic whose result would say nothing: refused now
        if stat is not None and stage.parts:
            stat.check_before_spend([stage.collected[j][1] for j in stage.parts],
                                    [noises[j] for j in stage.parts])
    ordered = [noises[j] for j in range(len(queries))]
    event = allocated.event()
    check_recorded_sigma(allocated, event, ordered)  # the noise below is the noise recorded
    receipts: tuple[Receipt, ...] = ()
    if event is not None:
        # raises BudgetExceededError before any noise is drawn
        record = accountant.spend(event, seeded=seeded)
        receipt = getattr(record, "receipt", None)
        receipts = () if receipt is None else (receipt,)
    results: dict[int, ReleaseResult] = {}
    owner_of = {j: (stat, stage) for stat, stage in stages for j in stage.parts}
    for j in range(len(queries)):  # in plan order: the seeded noise is drawn in this order
        stat, stage = owner_of[j]
        at = stage.parts.index(j)
        part_level = level if stat is None else stat.part_level(level)
        z = normal_quantile(part_level)
        aq = queries[j]
        if stage.large[at]:
            results[j] = release_dense(aq, allocated, stage.requests[at], engine, stage.table,
                                       noises[j], rng=rng, z=z, level=part_level,
                                       n_rows=stage.n_rows, output_dir=output_dir,
                                       aggregate=stage.cells.pop(j))
        else:
            results[j] = release_collected(aq, allocated, stage.aggregates[j],
                                           *stage.collected[j], noises[j], rng=rng, z=z,
                                           level=part_level, n_rows=stage.n_rows)
        if receipts:
            results[j] = dataclasses.replace(results[j], receipts=receipts)
    out = []
    for i, entry in enumerate(entries):
        mine = [results[j] for j, owner in enumerate(allocated.owners) if owner == i]
        out.append(entry.finish(mine, level) if isinstance(entry, DerivedQuery) else mine[0])
    return tuple(out)


def warn_below_threshold(aq: AllocatedQuery, true: FloatArray) -> None:
    """Warn (:class:`~approxdp.errors.SmallDataWarning`, exact, for the data holder) when
    at least half of the groups a query will choose by DP partition selection hold fewer rows
    than its threshold: they will most likely be dropped, and a public domain (or more
    budget) would release them."""
    if aq.threshold is None or true.size == 0:
        return
    measures = aq.query.measures()
    j = max(i for i, m in enumerate(measures) if m.kind == "count")
    counts = true.reshape(len(true), -1)[:, j]
    below = int(np.sum(counts <= aq.threshold))
    if 2 * below < len(counts):
        return
    warnings.warn(SmallDataWarning(
        f"{aq.query.label()}: {below} of the {len(counts)} groups have at most "
        f"{aq.threshold:.4g} rows, the partition-selection threshold: they will most likely "
        "be left out of the release",
        advice=f"{aq.query.label()}: most groups may fall below the partition-selection "
               f"threshold ({aq.threshold:.4g} rows): declare a public domain, or use a larger "
               "epsilon",
    ), stacklevel=4)


def _check_and_aggregate(
    stage: _Stage[TableT], allocated: AllocatedPlan, engine: Engine[TableT], *, key: int,
    large_domain_cells: int, output_dir: str | None,
) -> None:
    """Check the data of one table's parts and aggregate them (nothing spent): the domains,
    columns, empty table, rows outside a domain; fills ``stage``'s requests, aggregates, true
    values and row count. ``large_domain_cells`` 0: every part is collected."""
    table, queries = stage.table, stage.queries
    schema = engine.schema(table)
    bounded = allocated.plan.bounds.privacy_unit is not None
    large = [
        large_domain_cells > 0 and bool(aq.query.by)
        and n_cells(aq.query.cell_domain) >= large_domain_cells
        for aq in queries
    ]
    # without per-unit limits the domain check rides on the aggregation itself (one scan);
    # with outside_domain="error" every row is checked to be in the domain (there, or counted
    # first under per-unit limits or for a large domain), so a domain filter would be a no-op
    # and is left out
    fold = [
        aq.query.outside == "error" and not bounded and not big
        for aq, big in zip(queries, large, strict=True)
    ]
    requests = [
        build_request(aq, allocated, key, filter_domain=aq.query.outside != "error")
        for aq in queries
    ]
    check_measure_columns(engine, table, schema, queries)
    check_request_columns(schema, requests, queries)
    # an unfiltered, unbounded aggregate counts every row: no separate scan to count them
    whole = next((i for i, r in enumerate(requests)
                  if not r.keep and r.sample is None and not large[i]), None)
    n_rows = engine.count_rows(table) if whole is None else -1
    # after a filter (or join) zero rows is an answer, not an error: refusing would tell the
    # recipient that nobody matched (docs/security.md, "A filter that matches nobody")
    filtered = allocated.plan.bounds.filtered
    if n_rows == 0 and not filtered:
        raise empty_table()
    check_outside_domain(engine, table, [
        aq for aq, f in zip(queries, fold, strict=True) if aq.query.outside == "error" and not f
    ])
    small = [i for i, big in enumerate(large) if not big]
    merged = run_merged(engine, table, [requests[i] for i in small])
    aggregates: dict[int, AggregateResult] = {
        i: check_domain_in_result(queries[i], agg, filtered=not fold[i])
        for i, agg in zip(small, merged, strict=True)
    }
    if whole is not None:
        n_rows = aggregates[whole].rows_used
        if n_rows == 0 and not filtered:
            raise empty_table()
    if output_dir is not None and any(large):
        check_output_dir(output_dir)
    for aq, big in zip(queries, large, strict=True):
        if big:  # the cells' table has the group columns and its own: no clash, checked now
            check_cell_columns(aq.query)
    stage.requests, stage.large, stage.n_rows = requests, large, n_rows
    for i, big in enumerate(large):  # a large domain's aggregate too, before the spend
        if big:
            stage.cells[stage.parts[i]] = engine.aggregate_cells(table, requests[i])
    for i in small:
        j = stage.parts[i]
        stage.aggregates[j] = aggregates[i]
        stage.collected[j] = cell_matrix(queries[i], aggregates[i])

