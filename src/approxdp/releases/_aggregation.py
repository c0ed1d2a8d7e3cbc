"""From a plan's queries to engine aggregations, and from their results to each query's cells.

Each allocated query becomes one :class:`~approxdp.engines.shapes.AggregateRequest` (domain
filter, clamping bounds, per-unit limits, one aggregation per measure); requests that share
grouping, filter and limits run as one engine aggregation (one scan); and each result becomes
the query's cells with their true values, a (cells, measures) matrix in which the cells of a
declared domain that no row reached are zeros.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.engines.base import Engine, TableT
from approxdp.engines.shapes import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    Membership,
    PerKeyLimit,
)
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery

__all__ = ["build_request", "canonical_key", "cell_matrix", "run_merged"]

FloatArray = npt.NDArray[np.float64]

_NAN = object()  # one token for every NaN key (NaN != NaN, so sets and dicts miss it)


def canonical_key(value: Any) -> Any:
    """``value``, with any float NaN replaced by one token so NaN keys match a NaN in a domain."""
    return _NAN if isinstance(value, float) and math.isnan(value) else value


def _distinct_prefix(letter: str, columns: Iterable[str]) -> str:
    """``letter`` repeated until no column name starts with it (case-insensitive): output
    names made from it cannot clash with the group columns (a column may be called "m0")."""
    names = [c.lower() for c in columns]
    prefix = letter
    while any(c.startswith(prefix) for c in names):
        prefix += letter
    return prefix


def build_request(
    aq: AllocatedQuery, allocated: AllocatedPlan, key: int, *, filter_domain: bool = True
) -> AggregateRequest:
    """The engine request of one allocated query (domain filter, bounds, caps, measures)."""
    q = aq.query
    bounds = allocated.plan.bounds
    prefix = _distinct_prefix("m", q.by)
    aggs = []
    for j, meas in enumerate(q.measures()):
        low, high = meas.bounds if meas.kind == "sum" else (-math.inf, math.inf)
        aggs.append(Aggregation(f"{prefix}{j}", meas.kind, meas.column, low, high, meas.centre,
                                meas.where))
    dom = q.cell_domain
    keep = tuple(Membership(c, vals) for c, vals in dom) if dom and filter_domain else ()
    sample = None
    if bounds.privacy_unit is not None:
        k = bounds.max_partitions if q.by else 1
        sample = PerKeyLimit(bounds.privacy_unit, k, bounds.max_rows_per_partition, key)
    return AggregateRequest(q.by, tuple(aggs), keep, sample)


def run_merged(
    engine: Engine[TableT], table: TableT, requests: list[AggregateRequest]
) -> list[AggregateResult]:
    """Run requests that share grouping, filter and limits as ONE engine aggregation."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault((r.by, r.keep, r.sample), []).append(i)
    out: list[AggregateResult | None] = [None] * len(requests)
    for (by, keep, sample), members in groups.items():
        prefix = _distinct_prefix("q", by)
        aggs = tuple(
            Aggregation(f"{prefix}{i}_{a.name}", a.function, a.column, a.low, a.high, a.shift,
                        a.where)
            for i in members for a in requests[i].aggregations
        )
        res = engine.aggregate(table, AggregateRequest(by, aggs, keep, sample))
        # (key..., q<i>_<measure>...) per group → each request's own (key..., measure...)
        for i in members:
            values = {a.name: res.values[f"{prefix}{i}_{a.name}"]
                      for a in requests[i].aggregations}
            out[i] = AggregateResult(res.keys, values, res.rows_used, res.group_rows)
    return [r for r in out if r is not None]


def cell_matrix(
    aq: AllocatedQuery, agg: AggregateResult
) -> tuple[list[tuple[Any, ...]], FloatArray]:
    """Cells to release and their true (unnoised) measure matrix, shape (cells, measures).

    A global query has the one cell ``()``; a declared domain has every cell of its product,
    in :meth:`~approxdp.releases.specs.Query.cells` order, zeros where no row fell; without a
    domain the cells are the groups found (partition selection thresholds them later).
    """
    q = aq.query
    n_meas = len(q.measures())
    found = np.column_stack(list(agg.values.values())[:n_meas]).astype(float)  # measure order
    found_keys = list(zip(*(agg.keys[c] for c in q.by), strict=True)) if q.by else [()]
    if not q.by:
        return [()], found[:1]
    if q.cell_domain is None:
        return found_keys, found
    cells = q.cells()
    index = {tuple(map(canonical_key, cell)): i for i, cell in enumerate(cells)}
    table = np.zeros((len(cells), n_meas))
    for key, row in zip(found_keys, found, strict=True):
        table[index[tuple(map(canonical_key, key))]] = row
    return cells, table
