"""Execute an allocated plan: check and aggregate in the engine, spend, then add noise.

Order matters. Everything that can fail runs before the spend: the data checks (columns,
types, empty table, domain: :mod:`~approxdp.releases.checks`), every aggregation
(:mod:`~approxdp.releases.aggregation`), and the preparation of the noise itself — each
query's mechanism built from the σ its allocation calibrated, the secure lattice and its
certificate, the check that every aggregate is finite and fits the lattice, the comparisons
with other calibrations (:mod:`~approxdp.releases.noise`) — and last the check that every
query will add exactly the noise the spend records. A failing release therefore spends
nothing, and a spend is recorded only for a release that will be delivered. The accountant is
charged before any noise is drawn, so a refused spend
(:class:`~approxdp.errors.BudgetExceededError`) releases nothing. Then each query is noised,
in this process (:mod:`~approxdp.releases.driver`) or, over a large declared domain, where the
data lives (:mod:`~approxdp.releases.dense`).

A release whose noise comes from a seed (``PrivateTable(seed=...)``) is a reproducible
simulation, not a private release: its result says so everywhere (``secure = False``, values
that :func:`~approxdp.mechanisms.is_secure` rejects,
:data:`~approxdp.releases.noise.SEEDED_NOTE` in its notes and ``explain()``, the file name of
cells written by the engine).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.accounting.budget.chain import Receipt
from approxdp.accounting.budget.protocols import Accountant
from approxdp.engines.base import (
    AggregateRequest,
    AggregateResult,
    CellAggregate,
    Engine,
    TableT,
)
from approxdp.releases.aggregation import build_request, cell_matrix, run_merged
from approxdp.releases.checks import (
    check_domain_in_result,
    check_measure_columns,
    check_outside_domain,
    check_request_columns,
    empty_table,
)
from approxdp.releases.dense import (
    LARGE_DOMAIN_CELLS,
    check_cell_columns,
    check_output_dir,
    n_cells,
    release_dense,
)
from approxdp.releases.driver import release_collected
from approxdp.releases.intervals import normal_quantile
from approxdp.releases.noise import (
    PreparedNoise,
    check_recorded_sigma,
    check_releasable,
    prepare_noise,
)
from approxdp.releases.plan import AllocatedPlan
from approxdp.releases.result import ReleaseResult

__all__ = ["execute"]

FloatArray = npt.NDArray[np.float64]


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
    """Run ``allocated`` on ``table``; spend through ``accountant``; return one result per query.

    Queries over a declared domain of at least ``large_domain_cells`` cells are aggregated
    before the spend (:meth:`~approxdp.engines.base.Engine.aggregate_cells`, held where the
    data lives) and noised there after it (:mod:`approxdp.releases.dense`); their cells stay in
    the engine (written under ``output_dir`` if given) and the result's ``table`` points to
    them.

    Raises:
        DataError: Missing/misspelled or non-numeric column, empty table, data outside a
            declared domain (``outside_domain="error"``). Nothing is spent.
        BudgetExceededError: From the accountant; nothing is spent and no noise drawn.
        InternalError: A query's noise is not the noise the spend records (a bug). Nothing
            is spent.
    """
    queries = allocated.queries
    schema = engine.schema(table)
    bounded = allocated.plan.bounds.privacy_unit is not None
    large = [
        bool(aq.query.by) and n_cells(aq.query.cell_domain) >= large_domain_cells
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
    check_measure_columns(engine, table, schema, allocated)
    check_request_columns(schema, requests, allocated)
    # an unfiltered, unbounded aggregate counts every row: no separate scan to count them
    whole = next((i for i, r in enumerate(requests)
                  if not r.keep and r.sample is None and not large[i]), None)
    n_rows = engine.count_rows(table) if whole is None else -1
    if n_rows == 0:
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
        if n_rows == 0:
            raise empty_table()
    if output_dir is not None and any(large):
        check_output_dir(output_dir)
    for aq, big in zip(queries, large, strict=True):
        if big:  # the cells' table has the group columns and its own: no clash, checked now
            check_cell_columns(aq.query)
    # a large domain's aggregate too is computed now, before the spend, and held by the engine
    cells: dict[int, CellAggregate] = {}
    try:
        for i, big in enumerate(large):
            if big:
                cells[i] = engine.aggregate_cells(table, requests[i])
        return _spend_and_noise(allocated, engine, table, accountant, requests, aggregates,
                                cells, large, rng=rng, level=level, n_rows=n_rows,
                                output_dir=output_dir)
    finally:
        for aggregate in cells.values():  # (map_cells closed those it used)
            aggregate.close()


def _spend_and_noise(
    allocated: AllocatedPlan, engine: Engine[TableT], table: TableT, accountant: Accountant,
    requests: list[AggregateRequest], aggregates: dict[int, AggregateResult],
    cells: dict[int, CellAggregate], large: list[bool], *, rng: np.random.Generator | None,
    level: float, n_rows: int, output_dir: str | None,
) -> tuple[ReleaseResult, ...]:
    """Prepare and check every query's noise, spend, then add it (the end of :func:`execute`,
    every aggregate in hand)."""
    queries = allocated.queries
    # the noise of every query, prepared and checked against its aggregates before the spend
    seeded = rng is not None
    noises: list[PreparedNoise] = []
    collected: dict[int, tuple[list[tuple[Any, ...]], FloatArray]] = {}
    for i, aq in enumerate(queries):
        if large[i]:
            dimension = n_cells(aq.query.cell_domain) * len(aq.query.measures())
            noises.append(prepare_noise(aq, allocated, seeded, dimension))
            check_releasable(aq, noises[i], None, n_rows)
        else:
            collected[i] = cell_matrix(aq, aggregates[i])
            true = collected[i][1]
            noises.append(prepare_noise(aq, allocated, seeded, max(true.size, 1)))
            check_releasable(aq, noises[i], true, n_rows)
    event = allocated.event()
    check_recorded_sigma(allocated, event, noises)  # the noise below is the noise recorded
    receipts: tuple[Receipt, ...] = ()
    if event is not None:
        # raises BudgetExceededError before any noise is drawn
        record = accountant.spend(event, seeded=seeded)
        receipt = getattr(record, "receipt", None)
        receipts = () if receipt is None else (receipt,)
    z = normal_quantile(level)
    results = tuple(
        release_dense(aq, allocated, requests[i], engine, table, noises[i], rng=rng, z=z,
                      level=level, n_rows=n_rows, output_dir=output_dir, aggregate=cells[i])
        if large[i] else
        release_collected(aq, allocated, aggregates[i], *collected[i], noises[i], rng=rng, z=z,
                          level=level, n_rows=n_rows)
        for i, aq in enumerate(queries)
    )
    if not receipts:
        return results
    return tuple(dataclasses.replace(r, receipts=receipts) for r in results)
