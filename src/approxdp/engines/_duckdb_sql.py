"""The SQL the DuckDB engine runs: literals, membership tests and the aggregation statement.

Every statement reads the table as ``__approxdp_source`` (:data:`SOURCE`).

Per-key limits (:class:`~approxdp.engines.shapes.PerKeyLimit`) need no ``random()``: each row
gets the rank of its (key, group) pair under the engine-independent keyed hash of
:mod:`approxdp.engines.keyed_hash` (so DuckDB and Spark keep the same groups for the same
seed; the group part comes from a dictionary of the distinct groups, joined back), one window
over the rows, partitioned by key and ordered by the rank alone, keeps the rows of groups whose
rank is among the key's ``max_groups`` smallest distinct ranks; those rows are aggregated per
(key, rank) — one (key, group) pair each — and pairs with more than ``max_rows`` rows are
rescaled. If two groups of one key share a rank among its best (a 32-bit collision: rare), the
statement says so (``__ties``) and is run again ranking by (rank, group values), NULL last,
which is exact in every case but slower, as string group values then enter the sort. The
shapes::

    rows                              # (key, by..., rank, value per aggregation)
    → kept  dense_rank(rank) ≤ max_groups   # the same, only rows of each key's best groups
    → pairs GROUP BY key, rank        # (by..., n, partials, mixed?), ≤ max_groups per key
    → groups GROUP BY by              # (by..., Σ partial·min(1, max_rows/n), Σ min(n, max_rows))

Cost: with 10^6 keys in random order, no exact per-key limit is cheap. Grouping all rows by
key (a hash table far larger than the CPU caches) already takes about twice the CPU of a
plain ``GROUP BY`` over a few hundred cells, and a key's second-smallest *distinct* rank has
no one-pass scalar aggregate in DuckDB. Aggregating every (key, group) pair first (10^7
groups) costs more than the window over the rows (measured: 28× a plain ``GROUP BY`` against
17×); the keyed rank costs about 20% more than DuckDB's own ``hash()`` would, the price of
identical results on both engines. ``benchmarks/release.py`` measures it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from approxdp.engines.derivation import Expression
from approxdp.engines.keyed_hash import DuckDBSteps, hash_input_of_duckdb_type, seed_state
from approxdp.engines.shapes import (
    AggregateRequest,
    Aggregation,
    CellMapRequest,
    KeyValue,
    Membership,
)
from approxdp.errors import ParameterTypeError

__all__ = [
    "SOURCE",
    "build_aggregate_sql",
    "cells_sql",
    "double_literal",
    "expression_sql",
    "in_table_sql",
    "membership_sql",
    "quote_identifier",
    "rank_order_sql",
    "sql_literal",
]

#: The name every statement gives the table it reads.
SOURCE = "__approxdp_source"


def quote_identifier(name: str) -> str:
    """SQL identifier quoting: ``a"b`` → ``"a""b"``."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: KeyValue) -> str:
    """Render a key value as an SQL literal (strings quoted, ``None`` as NULL)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return "'NaN'::DOUBLE"
        if math.isinf(value):
            return "'Infinity'::DOUBLE" if value > 0 else "'-Infinity'::DOUBLE"
        return repr(float(value))
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ParameterTypeError(
        f"domain values must be str, int, float, bool or None, got {type(value).__name__} "
        f"{value!r}"
    )


def double_literal(value: float) -> str:
    """The exact float64 ``value`` as SQL (``CAST('0.1' AS DOUBLE)``: never a DECIMAL)."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_CALLS = {"least": "LEAST", "greatest": "GREATEST", "floor": "floor", "abs": "abs",
          "sign": "sign", "log10": "log10"}


def expression_sql(expr: Expression, x: str) -> str:
    """``expr`` (:mod:`approxdp.engines.derivation`) as SQL over the value ``x`` (SQL)."""
    args = [expression_sql(a, x) for a in expr.args]
    if expr.op == "value":
        return x
    if expr.op == "number":
        return double_literal(expr.constant)
    if expr.op in _INFIX:
        return f"({args[0]} {_INFIX[expr.op]} {args[1]})"
    if expr.op == "integer":
        return f"CAST({args[0]} AS BIGINT)"
    return f"{_CALLS[expr.op]}({', '.join(args)})"


def membership_sql(cond: Membership) -> str:
    """``column IN (...)``, with NULL handled by ``IS NULL`` (``IN`` never matches NULL)."""
    col = quote_identifier(cond.column)
    present = [v for v in cond.values if v is not None]
    parts = []
    if present:
        parts.append(f"{col} IN ({', '.join(sql_literal(v) for v in present)})")
    if len(present) != len(cond.values):
        parts.append(f"{col} IS NULL")
    return "(" + (" OR ".join(parts) if parts else "FALSE") + ")"


def in_table_sql(cond: Membership, table_name: str) -> str:
    """``column IN (SELECT v FROM table_name)``, NULL matching when ``None`` is listed."""
    col = quote_identifier(cond.column)
    sql = f"{col} IN (SELECT v FROM {quote_identifier(table_name)})"
    if None in cond.values:
        sql += f" OR {col} IS NULL"
    return f"({sql})"


def _float_literal(x: float) -> str:
    return sql_literal(float(x))


def _value_sql(agg: Aggregation) -> str:
    """Per-row contribution of ``agg`` (NULL when it contributes nothing)."""
    conds = [membership_sql(m) for m in agg.where]
    if agg.column is not None:
        col = f"CAST({quote_identifier(agg.column)} AS DOUBLE)"
        conds.append(f"NOT isnan({col})")  # NULL for NULL, so NULL rows drop out too
    if agg.function == "count":
        value = "1"
    else:
        col = f"CAST({quote_identifier(agg.column or '')} AS DOUBLE)"
        value = f"greatest(least({col}, {_float_literal(agg.high)}), {_float_literal(agg.low)})"
        if agg.shift != 0.0:
            value = f"({value} - {_float_literal(agg.shift)})"
    if not conds:
        return value
    return f"CASE WHEN {' AND '.join(conds)} THEN {value} END"


def _partial(agg: Aggregation, values: str) -> str:
    """``count(values)`` or ``sum(values)``: the per-group partial of ``agg``."""
    return f"{'count' if agg.function == 'count' else 'sum'}({values})"


def build_aggregate_sql(
    request: AggregateRequest, types: Mapping[str, str], *, ties: bool = False
) -> str:
    """The SQL statement for ``request`` over the table ``__approxdp_source``.

    ``types`` maps column names to DuckDB types (they decide how keys enter the keyed hash of
    :mod:`approxdp.engines.keyed_hash`). Under a per-key limit with grouping, the statement
    ranks a key's groups by the keyed rank alone and adds a column ``__ties``, true where two
    groups of one key shared a rank among its best (a 32-bit collision: rare); then the result
    is invalid and ``ties=True`` gives the statement that ranks by (rank, group values), exact
    in every case but slower (strings enter the sort).
    """
    by = [quote_identifier(c) for c in request.by]
    where = " AND ".join(membership_sql(m) for m in request.keep) or "TRUE"
    order = f" ORDER BY {', '.join(f'{c} NULLS LAST' for c in by)}" if by else ""
    group = f" GROUP BY {', '.join(by)}" if by else ""
    sel_by = "".join(f"{c}, " for c in by)
    aggs = request.aggregations
    if request.sample is None:
        # rows → (by..., aggregations, __rows)
        parts = [
            f"coalesce({_partial(a, _value_sql(a))}, 0)::DOUBLE AS {quote_identifier(a.name)}"
            for a in aggs
        ]
        return (
            f"SELECT {sel_by}{', '.join(parts)}, count(*) AS __rows "
            f"FROM {SOURCE} WHERE {where}{group}{order}"
        )
    s = request.sample
    unit = quote_identifier(s.key)
    m = s.max_rows
    values = [f"{_value_sql(a)} AS __v{i}" for i, a in enumerate(aggs)]
    partials = "".join(
        f", {_partial(a, f'__v{i}')}::DOUBLE AS __p{i}" for i, a in enumerate(aggs)
    )
    extra = ""
    if not by:
        # global: rows → (n, partials) per unit (one pair each)
        ctes = (
            f"__rows_cte AS (SELECT {', '.join([f'{unit} AS __unit', *values])} "
            f"FROM {SOURCE} WHERE {where}), "
            f"__pairs AS (SELECT count(*) AS __n{partials} FROM __rows_cte GROUP BY __unit)"
        )
    else:
        # rows → (unit, by..., rank, __v_i), only the rows of each unit's max_groups best
        # groups: one window over the rows (aggregating every (unit, group) pair first costs
        # more). The rank is the keyed hash: its group part comes from a dictionary of the
        # distinct groups (a small join) when a group column enters it as text, else inline.
        read = [c for a in aggs for c in (a.column, *(w.column for w in a.where))
                if c is not None]
        ranked = _keyed_rank_sql(request.by, s.key, s.seed, types, where, read)
        rank_order = ", ".join(
            f"{c} NULLS LAST" for c in ["__h", *(by if ties else [])]
        )
        kept = (
            f"__kept AS{' MATERIALIZED' if ties else ''} (SELECT "
            f"{', '.join(['__unit', *by, '__h', *values])} FROM ({ranked}) "
            f"QUALIFY dense_rank() OVER (PARTITION BY __unit ORDER BY {rank_order}) "
            f"<= {s.max_groups})"
        )
        if ties:
            # → pairs (by..., n, partials): one per kept (unit, group)
            pairs = (
                f"__pairs AS (SELECT {sel_by}count(*) AS __n{partials} FROM __kept "
                f"GROUP BY {', '.join(['__unit', *by])})"
            )
        else:
            # → pairs (by..., n, partials, mixed) per kept (unit, rank): one group each,
            # unless two groups share the rank (then "mixed", and the caller asks again)
            mixed = " OR ".join(
                f"min({c}) IS DISTINCT FROM max({c}) OR count({c}) NOT IN (0, count(*))"
                for c in by
            )
            pairs = (
                f"__pairs AS (SELECT {', '.join(f'min({c}) AS {c}' for c in by)}, "
                f"count(*) AS __n{partials}, ({mixed}) AS __mixed FROM __kept "
                f"GROUP BY __unit, __h)"
            )
            extra = ", bool_or(__mixed) AS __ties"
        ctes = f"{kept}, {pairs}"
    # → groups (by..., aggregations rescaled to ≤ max_rows rows per pair, __rows)
    finals = ", ".join(
        f"coalesce(sum(CASE WHEN __n <= {m} THEN __p{i} ELSE __p{i} * {m} / __n END), 0)"
        f"::DOUBLE AS {quote_identifier(a.name)}"
        for i, a in enumerate(aggs)
    )
    return (
        f"WITH {ctes} "
        f"SELECT {sel_by}{finals}, coalesce(sum(least(__n, {m})), 0)::BIGINT AS __rows{extra} "
        f"FROM __pairs{group}{order}"
    )


def rank_order_sql(rank: str) -> str:
    """The rank a unit orders its groups by, from the keyed rank (the rank itself; a test
    coarsens it to make most groups tie, so that the tie detection and the tie-breaking by
    group values are exercised)."""
    return rank


def _keyed_rank_sql(
    by: Sequence[str], unit: str, seed: int, types: Mapping[str, str], where: str,
    read: Sequence[str],
) -> str:
    """A SELECT of every row meeting ``where`` with ``__unit``, its group columns, the columns
    the aggregations read (``read``) and ``__h``, the keyed rank of
    :mod:`approxdp.engines.keyed_hash`. Only those columns: a source column that happens to be
    called ``__h`` or like a step (``__kg0``...) must not shadow one (the aggregations' values
    are computed after the window, on the kept rows only).

    With a text-keyed group column the group part is computed once per distinct group (a
    dictionary from a scan of the group columns, joined back to the rows on the group values,
    NULL matching NULL); integer keys are hashed inline.
    """
    cols = [quote_identifier(c) for c in by]
    text_keys = any(hash_input_of_duckdb_type(types[c]) == "text" for c in by)
    g = DuckDBSteps("__kg")
    state = str(seed_state(seed))
    for c, q in zip(by, cols, strict=True):
        state = g.absorb(state, g.limbs(q, types[c]))
    group_state = g.fmix(state)
    u = DuckDBSteps("__ku")
    unit_sql = ("r." if text_keys else "") + quote_identifier(unit)
    prefix = "g." if text_keys else ""
    rank = u.fmix(u.absorb(prefix + group_state, u.limbs(unit_sql, types[unit])))
    steps = [name for name, _ in (u.steps if text_keys else g.steps + u.steps)]
    hidden = ", ".join(steps)
    kept = [quote_identifier(c) for c in dict.fromkeys([*by, *read])]
    rows = (f"(SELECT {', '.join(dict.fromkeys([*kept, quote_identifier(unit)]))} "
            f"FROM {SOURCE} WHERE {where})")
    if not text_keys:
        inner = (f"SELECT {', '.join(kept)}, {quote_identifier(unit)} AS __unit, "
                 f"{g.select_list()}, {u.select_list()} FROM {rows}")
    else:
        on = " AND ".join(f"r.{q} IS NOT DISTINCT FROM g.{q}" for q in cols)
        dictionary = (f"SELECT {', '.join(cols)}, {g.select_list()} FROM "
                      f"(SELECT DISTINCT {', '.join(cols)} FROM {SOURCE} WHERE {where})")
        inner = (f"SELECT {', '.join('r.' + q for q in kept)}, "
                 f"r.{quote_identifier(unit)} AS __unit, {u.select_list()} FROM "
                 f"{rows} r JOIN ({dictionary}) g ON {on}")
    return f"SELECT * EXCLUDE ({hidden}), {rank_order_sql(rank)} AS __h FROM ({inner})"


def cells_sql(request: CellMapRequest, aggregate: str, grids: Sequence[str]) -> str:
    """The join of :meth:`~approxdp.engines.duckdb.DuckDBEngine.map_cells`: the registered
    ``grids`` (columns ``v``, ``pos``: one per grid column) crossed into every cell, left-joined
    with the registered ``aggregate`` (``k0..``, ``m0..``), with each cell's row-major index::

        grid × grid × ...                      # (g0.v, g1.v, ..., __cell)
        → left join aggregate on the keys      # (key..., __cell, measure (0.0 if empty)...)
    """
    names = [a.name for a in request.aggregate.aggregations]
    strides = _strides([len(v) for _, v in request.grid])
    selects = [f"g{i}.v AS {quote_identifier(col)}" for i, (col, _) in enumerate(request.grid)]
    joins = [f"{quote_identifier(grid)} g{i}" for i, grid in enumerate(grids)]
    cell = [f"g{i}.pos * {stride}" for i, stride in enumerate(strides)]
    on = " AND ".join(f"g{i}.v IS NOT DISTINCT FROM a.k{i}" for i in range(len(request.grid)))
    measures = ", ".join(
        f"coalesce(a.m{j}, 0.0)::DOUBLE AS {quote_identifier(a)}" for j, a in enumerate(names)
    )
    return (
        f"SELECT {', '.join(selects)}, ({' + '.join(cell)})::BIGINT AS __cell, {measures} "
        f"FROM {' CROSS JOIN '.join(joins)} LEFT JOIN {aggregate} a ON {on}"
    )


def _strides(sizes: Sequence[int]) -> list[int]:
    """Row-major strides: the last column varies fastest."""
    out = [1] * len(sizes)
    for i in range(len(sizes) - 2, -1, -1):
        out[i] = out[i + 1] * sizes[i + 1]
    return out
