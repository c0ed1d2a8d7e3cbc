"""Execute an allocated plan: aggregate in the engine, spend, then add noise to the aggregates.

Order matters. Everything that can fail runs before the spend: the data checks (columns, types,
empty table, domain), every aggregation, and the preparation of the noise itself — the
mechanism, the secure lattice and its certificate, the check that every aggregate is finite
and fits the lattice, the comparisons with other calibrations (:func:`prepare_noise`,
:func:`check_releasable`). A failing release therefore spends nothing, and a spend is recorded
only for a release that will be delivered. The accountant is charged before any noise is
drawn, so a refused spend (:class:`~approxdp.errors.BudgetExceededError`) releases nothing.

A release whose noise comes from a seed (``PrivateTable(seed=...)``) is a reproducible
simulation, not a private release: its result says so everywhere (``secure = False``, values
that :func:`~approxdp.mechanisms.is_secure` rejects, :data:`SEEDED_NOTE` in its notes and
``explain()``, the file name of cells written by the engine).
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from approxdp.accounting.protocols import Accountant
from approxdp.engines.base import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    CellMapRequest,
    ColumnKind,
    Engine,
    Membership,
    PerKeyLimit,
    TableT,
    check_columns,
    check_values,
)
from approxdp.errors import DataError, NotPrivateError
from approxdp.mechanisms import GaussianMechanism
from approxdp.mechanisms.gaussian import SecureGaussianNoise
from approxdp.mechanisms.lattice import MAX_INDEX
from approxdp.releases.dense import LARGE_DOMAIN_CELLS, CellNoise, n_cells
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery
from approxdp.releases.result import MethodComparison, ReleaseResult, compare_methods
from approxdp.releases.specs import Mean

__all__ = [
    "SEEDED_NOTE",
    "PreparedNoise",
    "build_request",
    "check_releasable",
    "execute",
    "prepare_noise",
]

FloatArray = npt.NDArray[np.float64]

#: The note every seeded release carries (its noise is a reproducible simulation).
SEEDED_NOTE = ("seeded simulation: noise reproducible from the seed, NOT private (tests and "
               "demos only; release without a seed to publish)")


def build_request(
    aq: AllocatedQuery, allocated: AllocatedPlan, key: int, *, filter_domain: bool = True
) -> AggregateRequest:
    """The engine request of one allocated query (domain filter, bounds, caps, measures)."""
    q = aq.query
    bounds = allocated.plan.bounds
    aggs = []
    prefix = "m"  # measure names distinct from the group columns (a column may be "m0")
    while any(c.lower().startswith(prefix) for c in q.by):
        prefix += "m"
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


def _run_merged(
    engine: Engine[TableT], table: TableT, requests: list[AggregateRequest]
) -> list[AggregateResult]:
    """Run requests that share grouping, filter and limits as ONE engine aggregation."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault((r.by, r.keep, r.sample), []).append(i)
    out: list[AggregateResult | None] = [None] * len(requests)
    for (by, keep, sample), members in groups.items():
        # output names distinct from the group columns (a column may be called "q0_m0")
        prefix = "q"
        while any(c.lower().startswith(prefix) for c in by):
            prefix += "q"
        aggs = tuple(
            Aggregation(f"{prefix}{i}_{a.name}", a.function, a.column, a.low, a.high, a.shift,
                        a.where)
            for i in members for a in requests[i].aggregations
        )
        res = engine.aggregate(table, AggregateRequest(by, aggs, keep, sample))
        for i in members:
            values = {a.name: res.values[f"{prefix}{i}_{a.name}"]
                      for a in requests[i].aggregations}
            out[i] = AggregateResult(res.keys, values, res.rows_used, res.group_rows)
    return [r for r in out if r is not None]


EMPTY_TABLE = "the table is empty (0 rows); nothing to release and nothing was spent"


def check_measure_columns(
    engine: Engine[TableT],
    table: TableT,
    schema: Mapping[str, ColumnKind],
    allocated: AllocatedPlan,
) -> None:
    """Raise :class:`DataError` (nothing spent) for a value column that is not numeric, naming
    the query, the column, how many values are not numbers with examples, and the way out (a
    cast that makes them missing values). A table with no rows says that instead: a header-only
    CSV has only text columns. (The engines' own check names internal aggregation names.)"""
    for aq in allocated.queries:
        for meas in aq.query.measures():
            col = meas.column
            if col is None or col not in schema or schema[col] is ColumnKind.NUMERIC:
                continue
            if engine.count_rows(table) == 0:
                raise DataError(EMPTY_TABLE)
            label = aq.query.label()
            cast = (f"casts={{{col!r}: 'double'}} turns every value that is not a number into "
                    "a missing value (and reports how many)")
            if schema[col] is ColumnKind.STRING:
                n_bad, examples = engine.count_unconvertible(table, col)
                if n_bad:
                    raise DataError(
                        f"{label}: column {col!r} must be numeric, but it holds text: {n_bad} "
                        f"value(s) are not numbers, e.g. {list(examples)}; clean them, or "
                        f"{cast}; nothing was spent (this check is exact, not private)"
                    )
                raise DataError(
                    f"{label}: column {col!r} holds numbers stored as text; {cast}; nothing "
                    "was spent"
                )
            raise DataError(
                f"{label}: column {col!r} must be numeric, but it is {schema[col].value}; "
                f"convert it first, or {cast}; nothing was spent"
            )


_NAN = object()  # one token for every NaN key (NaN != NaN, so sets and dicts miss it)


def _canonical(value: Any) -> Any:
    """``value``, with any float NaN replaced by one token so NaN keys match a NaN in a domain."""
    return _NAN if isinstance(value, float) and math.isnan(value) else value


#: Key values a declared domain can list (what a domain check compares group keys with).
_KEY_LITERALS = (str, int, float, bool, np.integer, np.floating, np.bool_)


def _check_domain_in_result(
    aq: AllocatedQuery, agg: AggregateResult, *, filtered: bool = False
) -> AggregateResult:
    """Raise if any group lies outside the declared domain; else return ``agg`` unchanged.

    Used when the aggregation ran without the domain filter (no per-unit limits): with every
    row inside the domain the filter is a no-op, so one scan serves both the check and the
    release. ``filtered``: the engine already kept only rows in the domain (or checked them),
    so a group that is not a domain value is one the engine matched in SQL that Python does
    not (a date column against string values): found before anything is spent.
    """
    dom = aq.query.cell_domain
    if not dom:
        return agg
    for col, vals in dom:
        allowed = {_canonical(v) for v in vals}
        bad = [j for j, v in enumerate(agg.keys[col]) if _canonical(v) not in allowed]
        if bad and filtered:
            value = agg.keys[col][bad[0]]
            raise DataError(
                f"column {col!r} holds {type(value).__name__} values such as {value!r}, which "
                f"the engine matched to domain[{col!r}] = {list(vals)[:3]}... but which are not "
                "equal to any of them; cast the column to a string or number type first"
            )
        if bad:
            n_out = int(agg.group_rows[bad].sum())
            examples = sorted({agg.keys[col][j] for j in bad}, key=repr)[:3]
            odd = next((agg.keys[col][j] for j in bad if agg.keys[col][j] is not None
                        and not isinstance(agg.keys[col][j], _KEY_LITERALS)), None)
            hint = (
                f"add them to domain[{col!r}] or pass outside_domain='drop'" if odd is None
                else f"its values are {type(odd).__name__}, which never equal a domain's "
                "str/int/float/bool values: cast the column to a string or number type first"
            )
            raise DataError(
                f"{n_out} row(s) have column {col!r} outside the declared domain (e.g. "
                f"{examples}); {hint} (this check is exact, not private)"
            )
    return agg


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

    Queries over a declared domain of at least ``large_domain_cells`` cells are noised where
    the data lives (:mod:`approxdp.releases.dense`), after the spend; their cells stay in the
    engine (written under ``output_dir`` if given) and the result's ``table`` points to them.

    Raises:
        DataError: Missing/misspelled or non-numeric column, empty table, data outside a
            declared domain (``outside_domain="error"``). Nothing is spent.
        BudgetExceededError: From the accountant; nothing is spent and no noise drawn.
    """
    schema = engine.schema(table)
    bounded = allocated.plan.bounds.privacy_unit is not None
    large = [
        bool(aq.query.by) and n_cells(aq.query.cell_domain) >= large_domain_cells
        for aq in allocated.queries
    ]
    # without per-unit limits the domain check rides on the aggregation itself (one scan);
    # with outside_domain="error" every row is checked to be in the domain (there, or counted
    # first under per-unit limits or for a large domain), so a domain filter would be a no-op
    # and is left out
    fold = [
        aq.query.outside == "error" and not bounded and not big
        for aq, big in zip(allocated.queries, large, strict=True)
    ]
    requests = [
        build_request(aq, allocated, key, filter_domain=aq.query.outside != "error")
        for aq in allocated.queries
    ]
    check_measure_columns(engine, table, schema, allocated)
    for req in requests:
        check_columns(schema, req)
    for aq in allocated.queries:  # also where no filter carries the domain (checked in Python)
        for col, vals in aq.query.cell_domain or ():
            check_values(schema, Membership(col, vals), "domain")
    # an unfiltered, unbounded aggregate counts every row: no separate scan to count them
    whole = next((i for i, r in enumerate(requests)
                  if not r.keep and r.sample is None and not large[i]), None)
    n_rows = engine.count_rows(table) if whole is None else -1
    if n_rows == 0:
        raise DataError(EMPTY_TABLE)
    checked: set[Membership] = set()
    for aq, f in zip(allocated.queries, fold, strict=True):
        if aq.query.outside == "error" and not f and aq.query.cell_domain:
            for col, vals in aq.query.cell_domain:
                if Membership(col, vals) in checked:
                    continue  # queries over the same domain: one scan
                checked.add(Membership(col, vals))
                n_out, examples = engine.count_outside(table, Membership(col, vals))
                if n_out:
                    raise DataError(
                        f"{n_out} row(s) have column {col!r} outside the declared "
                        f"domain (e.g. {list(examples)}); add them to domain[{col!r}] "
                        "or pass outside_domain='drop' (this check is exact, not private)"
                    )
    small = [i for i, big in enumerate(large) if not big]
    merged = _run_merged(engine, table, [requests[i] for i in small])
    aggregates: dict[int, AggregateResult] = {
        i: _check_domain_in_result(allocated.queries[i], agg, filtered=not fold[i])
        for i, agg in zip(small, merged, strict=True)
    }
    if whole is not None:
        n_rows = aggregates[whole].rows_used
        if n_rows == 0:
            raise DataError(EMPTY_TABLE)
    if output_dir is not None and any(large):
        _check_output_dir(output_dir)
    for aq, big in zip(allocated.queries, large, strict=True):
        if big:  # the cells' table has the group columns and these: no clash, checked now
            outputs = ("value", "std", "ci_low", "ci_high", "__cell", "__rows",
                       *(("sum_centred", "count") if isinstance(aq.query, Mean) else ()))
            clash = [c for c in aq.query.by if c.lower() in outputs]
            if clash:
                raise DataError(
                    f"group column {clash[0]!r} has the name of an output column of a "
                    f"large-domain release ({', '.join(outputs)}); rename it; nothing was spent"
                )
    # the noise of every query, prepared and checked against its aggregates before the spend
    seeded = rng is not None
    noises: dict[int, PreparedNoise] = {}
    for i, aq in enumerate(allocated.queries):
        if large[i]:
            dimension = n_cells(aq.query.cell_domain) * len(aq.query.measures())
            noises[i] = prepare_noise(aq, allocated, seeded, dimension)
            check_releasable(aq, noises[i], None, n_rows)
        else:
            true = _cells(aq, aggregates[i])[1]
            noises[i] = prepare_noise(aq, allocated, seeded, max(true.size, 1))
            check_releasable(aq, noises[i], true, n_rows)
    event = allocated.event()
    if event is not None:
        accountant.spend(event)  # raises BudgetExceededError before any noise is drawn
    z = -float(special.ndtri((1.0 - level) / 2.0))
    return tuple(
        _noise_large(aq, requests[i], allocated, engine, table, rng, z, level, n_rows,
                     output_dir, noises[i])
        if large[i] else _noise_one(aq, aggregates[i], allocated, rng, z, level, n_rows,
                                    noises[i])
        for i, aq in enumerate(allocated.queries)
    )


@dataclass(frozen=True)
class PreparedNoise:
    """Everything one query's noise needs, computed (and able to fail) before the spend.

    Attributes:
        mechanism: The calibrated Gaussian, or None when the query is released exactly (Δ = 0).
        sigma: Its σ on the scaled vector (0.0 when exact).
        secure: The lattice, exact sampler and domination certificate of the secure release
            for the query's whole vector; None when seeded or exact.
        comparisons: The σ other calibrations would need (:func:`compare_methods`).
    """

    mechanism: GaussianMechanism | None
    sigma: float
    secure: SecureGaussianNoise | None
    comparisons: tuple[MethodComparison, ...]


def prepare_noise(
    aq: AllocatedQuery, allocated: AllocatedPlan, seeded: bool, dimension: int
) -> PreparedNoise:
    """The calibrated mechanism, its secure lattice for ``dimension`` coordinates and the
    comparisons of one query. Raises (typed, nothing spent) where the secure release has no
    certificate — σ/Δ below about 0.025, i.e. ε in the thousands — or calibration fails."""
    if aq.sigma <= 0:
        return PreparedNoise(None, 0.0, None, ())
    mech = GaussianMechanism(
        allocated.epsilon, allocated.delta_gaussian, aq.effective_sensitivity,
        method=allocated.method,
    )
    secure = None
    if not seeded:
        try:
            secure = mech.secure_noise(dimension)
        except NotPrivateError as exc:
            raise NotPrivateError(
                f"{aq.query.label()}: epsilon={allocated.epsilon:g} calibrates sigma = "
                f"{mech.sigma / mech.sensitivity:.3g} x sensitivity, too little noise for the "
                "secure (lattice) release to be certified (it needs sigma/sensitivity above "
                "about 0.025, i.e. epsilon below about a thousand); use a smaller epsilon; "
                "nothing was spent"
            ) from exc
    comparisons = compare_methods(allocated.epsilon, allocated.delta_gaussian,
                                  aq.effective_sensitivity, float(mech.sigma))
    return PreparedNoise(mech, float(mech.sigma), secure, comparisons)


def check_releasable(
    aq: AllocatedQuery, noise: PreparedNoise, true: FloatArray | None, n_rows: int
) -> None:
    """Raise :class:`DataError` (nothing spent) if the release could not be computed from
    these aggregates: a sum that overflowed to ±inf (too many rows at bounds this wide), or a
    value too large for the secure lattice (|x/g| ≥ 2^52). ``true`` is the (cells, measures)
    matrix of aggregates, or None for a large domain, whose cells stay in the engine: there
    every scaled coordinate is bounded by the rows read (each row adds at most 1 once scaled),
    and that bound is checked instead."""
    measures = aq.query.measures()
    scales = np.array([m.scale for m in measures])
    if true is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            flat = true / scales
        for j, meas in enumerate(measures):
            column = flat[:, j] if flat.ndim == 2 else flat[j:j + 1]
            if not bool(np.all(np.isfinite(column))):
                what = meas.column if meas.column is not None else "rows"
                raise DataError(
                    f"{aq.query.label()}: the {meas.kind} of {what!r} clamped to "
                    f"{list(meas.bounds)} overflows float64 (beyond ±1.8e308): the bounds are "
                    "too wide for this many rows; use tighter bounds; nothing was spent"
                )
        largest = float(np.max(np.abs(flat))) if flat.size else 0.0
    else:
        largest = float(n_rows)
    if noise.secure is not None:
        limit = MAX_INDEX * noise.secure.lattice.g
        if not largest < limit:
            raise DataError(
                f"{aq.query.label()}: an aggregate of {largest:.6g} (in units of the bounds) "
                f"is too large for the secure lattice of this release (|value| < 2^52 x "
                f"{noise.secure.lattice.g:g} = {limit:.6g}): epsilon is large for this many "
                "rows; use a smaller epsilon or wider bounds; nothing was spent"
            )


def _check_output_dir(output_dir: str) -> None:
    """Create a local ``output_dir`` and check it is writable, before anything is spent (a
    URI such as ``s3://...`` is left to the engine)."""
    if "://" in output_dir:
        return
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as exc:
        raise DataError(f"output_dir {output_dir!r} cannot be created: {exc.strerror}; nothing "
                        "was spent") from exc
    if not os.access(output_dir, os.W_OK | os.X_OK):
        raise DataError(f"output_dir {output_dir!r} is not writable; nothing was spent")


def _noise_large(
    aq: AllocatedQuery,
    request: AggregateRequest,
    allocated: AllocatedPlan,
    engine: Engine[TableT],
    table: TableT,
    rng: np.random.Generator | None,
    z: float,
    level: float,
    n_rows: int,
    output_dir: str | None,
    prepared: PreparedNoise,
) -> ReleaseResult:
    """Aggregate and noise a large declared domain inside the engine (already paid for)."""
    q = aq.query
    domain = q.cell_domain or ()
    measures = q.measures()
    sigma, secure, comparisons = prepared.sigma, prepared.secure, prepared.comparisons
    mechanism = "exact" if prepared.mechanism is None else "gaussian"
    noise = CellNoise(
        tuple(a.name for a in request.aggregations), tuple(m.scale for m in measures), sigma,
        secure, None if rng is None else int(rng.integers(0, 2**63 - 1)), z, level,
        q.bounds if isinstance(q, Mean) else None,
    )
    path = None
    if output_dir is not None:  # a seeded simulation says so in its file name too
        tag = "-seeded-NOT-PRIVATE" if rng is not None and sigma > 0 else ""
        path = os.path.join(output_dir, f"release-{uuid.uuid4().hex[:12]}{tag}.parquet")
    cells = engine.map_cells(table, CellMapRequest(request, domain, noise, noise.outputs, path))
    notes: list[str] = []
    if rng is not None and sigma > 0:
        notes.append(SEEDED_NOTE)
    if q.outside == "drop":
        notes.append("rows outside the declared domain were dropped (not counted anywhere)")
    empty = np.zeros(0)
    return ReleaseResult(
        label=q.label(), kind=q.kind, columns=q.by, keys=[], values=empty, std=empty,
        ci_low=empty, ci_high=empty, level=level, mechanism=mechanism, method=allocated.method,
        sigma=sigma, sensitivity=aq.sensitivity, effective_sensitivity=aq.effective_sensitivity,
        epsilon=allocated.epsilon, delta=allocated.delta, threshold=None,
        rows={"read": n_rows, "used": cells.rows_used, "dropped": n_rows - cells.rows_used},
        comparisons=comparisons, notes=tuple(notes), table=cells,
        secure=not (rng is not None and sigma > 0),
    )


def _cells(aq: AllocatedQuery, agg: AggregateResult) -> tuple[list[tuple[Any, ...]], FloatArray]:
    """Cells to release and their true (unnoised) measure matrix, shape (cells, measures)."""
    q = aq.query
    n_meas = len(q.measures())
    found = np.column_stack(list(agg.values.values())[:n_meas]).astype(float)  # measure order
    found_keys = list(zip(*(agg.keys[c] for c in q.by), strict=True)) if q.by else [()]
    if not q.by:
        return [()], found[:1]
    if q.cell_domain is None:
        return found_keys, found
    cells = q.cells()
    index = {tuple(map(_canonical, cell)): i for i, cell in enumerate(cells)}
    table = np.zeros((len(cells), n_meas))
    for key, row in zip(found_keys, found, strict=True):
        table[index[tuple(map(_canonical, key))]] = row
    return cells, table


def _noise_one(
    aq: AllocatedQuery,
    agg: AggregateResult,
    allocated: AllocatedPlan,
    rng: np.random.Generator | None,
    z: float,
    level: float,
    n_rows: int,
    prepared: PreparedNoise,
) -> ReleaseResult:
    q = aq.query
    measures = q.measures()
    scales = np.array([m.scale for m in measures])
    cells, true = _cells(aq, agg)
    mech = prepared.mechanism
    sigma, secure, comparisons = prepared.sigma, prepared.secure, prepared.comparisons
    if mech is not None:
        flat = (true / scales).ravel()
        released = np.asarray(mech.release(flat, rng=rng), dtype=np.float64)
        noisy = released.reshape(true.shape) * scales
        mechanism = "gaussian"
    else:
        noisy, mechanism = true.copy(), "exact"
    std_unit, ci_unit = noise_spread(sigma, secure, level)
    stds = np.broadcast_to(scales * std_unit, noisy.shape)
    ci_stds = np.broadcast_to(scales * ci_unit, noisy.shape)
    keep = np.ones(len(cells), dtype=bool)
    if aq.threshold is not None:
        j = max(i for i, m in enumerate(measures) if m.kind == "count")
        keep = noisy[:, j] > aq.threshold
    noisy, stds, ci_stds = noisy[keep], stds[keep], ci_stds[keep]
    cells = [c for c, k in zip(cells, keep, strict=True) if k]
    notes: list[str] = []
    if rng is not None and mech is not None:
        notes.append(SEEDED_NOTE)
    extra: dict[str, FloatArray] = {}
    informative = None
    if isinstance(q, Mean):
        values, std, lo, hi = _mean(q, noisy, stds, level, ci_stds)
        informative = (lo > q.bounds[0]) | (hi < q.bounds[1])
        extra = {"sum_centred": noisy[:, 0], "count": noisy[:, 1]}
        notes.append("mean = c + Σ̃(x − c)/ñ clamped to the bounds; CI is conservative "
                     "(Bonferroni box over the sum's and count's intervals)")
    elif q.kind == "linearqueries":
        values, std = noisy[0], stds[0]
        lo, hi = values - z * ci_stds[0], values + z * ci_stds[0]
    else:
        values, std = noisy[:, 0], stds[:, 0]
        lo, hi = values - z * ci_stds[:, 0], values + z * ci_stds[:, 0]
        if noisy.shape[1] > 1:
            extra = {"count": noisy[:, 1]}
    if q.cell_domain is not None and q.outside == "drop":
        notes.append("rows outside the declared domain were dropped (not counted anywhere)")
    rows = {"read": n_rows, "used": agg.rows_used, "dropped": n_rows - agg.rows_used}
    return ReleaseResult(
        label=q.label(), kind=q.kind, columns=q.by,
        keys=cells if q.kind != "linearqueries" else [(i,) for i in range(values.size)],
        values=np.asarray(values, dtype=float), std=np.asarray(std, dtype=float),
        ci_low=np.asarray(lo, dtype=float), ci_high=np.asarray(hi, dtype=float), level=level,
        mechanism=mechanism, method=allocated.method, sigma=sigma / 1.0, sensitivity=aq.sensitivity,
        effective_sensitivity=aq.effective_sensitivity, epsilon=allocated.epsilon,
        delta=allocated.delta, threshold=aq.threshold, rows=rows, comparisons=comparisons,
        extra=extra, notes=tuple(notes), secure=not (rng is not None and mech is not None),
        informative=informative,
    )


def noise_spread(
    sigma: float, secure: SecureGaussianNoise | None, level: float
) -> tuple[float, float]:
    """(standard deviation, interval scale) of one scaled coordinate's noise.

    Float noise N(0, σ²): both are σ, and value ± z·σ is an exact interval. Secure noise is the
    query rounded onto the lattice gZ plus N_Z(0, s²) on it: its scale is ``secure.sigma``
    (s·g, a little above σ: the lattice calibration adds noise, never removes it), and the
    interval scale is the h/z of :meth:`SecureGaussianNoise.half_width` (which bounds the tail
    of the discrete noise and the rounding), taken at α = 1 − level and α/2 (the mean's box
    uses both sides at α/2), whichever is larger, so value ± z·scale holds its level.
    """
    if secure is None or sigma == 0.0:
        return sigma, sigma
    alpha = 1.0 - level
    ci = max(
        secure.half_width(a) / -float(special.ndtri(a / 2.0)) for a in (alpha, alpha / 2.0)
    )
    return secure.sigma, max(ci, secure.sigma)


def _mean(
    q: Mean, noisy: FloatArray, stds: FloatArray, level: float,
    ci_stds: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Mean per cell from (Σ̃(x − c), ñ) with a conservative interval.

    With S ∈ [Σ̃ ± z σ_S] and n ∈ [ñ ± z σ_n], each at level 1 − α/2 (z = Φ̄⁻¹(α/4)), the true
    clamped mean c + S/n lies, with probability ≥ 1 − α, between the extremes of c + S/n over
    the box's corners (S/n is monotone in each argument when n > 0); if the box reaches n ≤ 0
    the interval is the whole of [L, U]. Where ñ ≤ 0 the value is the midpoint c.
    """
    low, high = q.bounds
    c = low / 2 + high / 2  # (low + high)/2 without overflow
    half = high / 2 - low / 2  # (high − low)/2 without overflow
    s, n = noisy[:, 0], noisy[:, 1]
    ss, sn = stds[:, 0], stds[:, 1]
    positive = n > 0
    ratio = np.divide(s, n, out=np.zeros_like(s), where=positive)
    values = np.clip(c + ratio, low, high)
    # delta method where ñ > 0; never more than (U − L)/2, the largest standard deviation of
    # a value confined to [L, U] (Popoviciu), which is also the answer where ñ ≤ 0 (no NaN)
    # hypot: no overflow of the squares where the bounds are wide (±1e200 gave std = ∞ → U − L)
    delta_method = np.hypot(ss, (values - c) * sn) / np.where(positive, n, 1.0)
    std = np.where(positive, np.minimum(delta_method, half), half)
    zb = -float(special.ndtri((1.0 - level) / 4.0))
    if ci_stds is not None:  # interval scales (secure noise: see noise_spread)
        ss, sn = ci_stds[:, 0], ci_stds[:, 1]
    s_lo, s_hi, n_lo, n_hi = s - zb * ss, s + zb * ss, n - zb * sn, n + zb * sn
    ok = n_lo > 0
    safe_lo = np.where(ok, n_lo, 1.0)
    safe_hi = np.where(ok, n_hi, 1.0)
    corners = np.stack([s_lo / safe_lo, s_lo / safe_hi, s_hi / safe_lo, s_hi / safe_hi])
    lo = np.where(ok, np.clip(c + corners.min(axis=0), low, high), low)
    hi = np.where(ok, np.clip(c + corners.max(axis=0), low, high), high)
    return values, std, lo, hi
