"""The embedded DuckDB engine: every primitive is one SQL query run inside DuckDB.

Accepted inputs: a CSV (``.csv``, ``.csv.gz``, ``.tsv``) or Parquet (``.parquet``, ``.pq``)
path, a pandas or Polars DataFrame, a PyArrow Table or RecordBatchReader, or a DuckDB relation
(which is queried on its own connection, so views and temporary tables it refers to work).
``duckdb`` is imported only when an engine is created.

Per-key limits (:class:`~approxdp.engines.base.PerKeyLimit`) need no ``random()`` and no
join: one window over the rows, partitioned by key and ordered by the integer
``hash(seed, key, by...)`` alone, keeps the rows of groups whose hash is among the key's
``max_groups`` smallest distinct hashes; those rows are aggregated per (key, hash) — one
(key, group) pair each — and pairs with more than ``max_rows`` rows are rescaled. If two
groups of one key share a hash among its best (a 64-bit collision: almost never), the
statement says so (``__ties``) and is run again ranking by (hash, group values), NULL last,
which is exact in every case but slower, as string group values then enter the sort. The
shapes::

    rows                              # (key, by..., hash, value per aggregation)
    → kept  dense_rank(hash) ≤ max_groups   # the same, only rows of each key's best groups
    → pairs GROUP BY key, hash        # (by..., n, partials, mixed?), ≤ max_groups per key
    → groups GROUP BY by              # (by..., Σ partial·min(1, max_rows/n), Σ min(n, max_rows))

Cost: with 10^6 keys in random order, no exact per-key limit is cheap. Grouping all rows by
key (a hash table far larger than the CPU caches) already takes about twice the CPU of a
plain ``GROUP BY`` over a few hundred cells, applying the per-key choice back to the rows (a
join) as much again, and a key's second-smallest *distinct* hash has no one-pass scalar
aggregate in DuckDB (``min(x, n)`` keeps duplicates, ``DISTINCT`` aggregates and lists cost
more than the window). Aggregating every (key, group) pair first (the obvious plan, 10^7 groups)
costs more than the window over the rows; ``benchmarks/release.py`` measures the result.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from approxdp.engines.base import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    ColumnKind,
    KeyValue,
    Membership,
    check_columns,
    check_values,
)
from approxdp.errors import DataError, MissingDependencyError, ParameterTypeError

__all__ = ["DuckDBEngine", "DuckDBTable"]

_SOURCE = "__approxdp_source"
_CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")
_PARQUET_SUFFIXES = (".parquet", ".pq")
_NUMERIC_PREFIXES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
)  # fmt: skip
_counter = itertools.count()
#: One in-memory DuckDB database per (process, settings), shared by engines through cursors.
_DATABASES: dict[tuple[Any, ...], Any] = {}


def _import_duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is a runtime dependency
        raise MissingDependencyError(
            "the DuckDB engine needs the 'duckdb' package: pip install duckdb"
        ) from exc
    return duckdb


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


def _float_literal(x: float) -> str:
    return sql_literal(float(x))


@dataclass(frozen=True)
class DuckDBTable:
    """A DuckDB-backed table handle: ``run(sql)`` executes SQL in which the table is ``_SOURCE``.

    Its schema is read once, on first use, and kept in ``columns``.
    """

    connection: Any | None
    relation: Any | None
    description: str
    columns: dict[str, ColumnKind] = field(default_factory=dict, compare=False, repr=False)

    def run(self, sql: str) -> Any:
        """Execute ``sql`` (referring to the table as ``__approxdp_source``); return a relation."""
        if self.relation is not None:
            return self.relation.query(_SOURCE, sql)
        if self.connection is None:
            raise DataError(f"table handle {self.description!r} has no relation or connection")
        return self.connection.sql(sql)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` and fetch its rows; unreadable data raises :class:`DataError`."""
        with _data_errors(self.description):
            return list(self.run(sql).fetchall())

    def arrow(self, sql: str) -> Any:
        """Run ``sql`` and fetch it as a PyArrow table; unreadable data raises ``DataError``."""
        with _data_errors(self.description):
            return _arrow(self.run(sql))


@contextlib.contextmanager
def _data_errors(description: str) -> Iterator[None]:
    """Turn DuckDB's errors about the data (unreadable file, bad encoding, a value that does
    not convert) into :class:`DataError` naming the input; other errors pass unchanged."""
    duckdb = _import_duckdb()
    try:
        yield
    except (duckdb.InvalidInputException, duckdb.ConversionException, duckdb.IOException) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {description}: {first}") from exc


def _arrow(rel: Any) -> Any:
    method = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return method()


class DuckDBEngine:
    """Run the engine primitives as SQL in an embedded, in-process DuckDB database.

    Args:
        threads: Worker threads for DuckDB (default: DuckDB's own choice).
        memory_limit: DuckDB memory limit such as ``"2GB"`` (default: DuckDB's own).
        progress_bar: Let DuckDB draw its progress bar on queries that run long (off by
            default: a library should not write to the terminal uninvited).
    """

    name = "duckdb"

    def __init__(
        self, threads: int | None = None, memory_limit: str | None = None,
        progress_bar: bool = False,
    ) -> None:
        self._duckdb = _import_duckdb()
        config: dict[str, Any] = {}
        if threads is not None:
            config["threads"] = int(threads)
        if memory_limit is not None:
            config["memory_limit"] = memory_limit
        # engines with the same settings share one in-memory database (opening one takes tens
        # of milliseconds); each engine has its own connection to it, so what it registers
        # stays its own
        key = (os.getpid(), *sorted(config.items()))
        database = _DATABASES.get(key)
        if database is None:
            database = _DATABASES[key] = self._duckdb.connect(database=":memory:", config=config)
        self._connection = database.cursor()
        self._connection.execute(f"SET enable_progress_bar = {str(bool(progress_bar)).lower()}")

    # -- loading ---------------------------------------------------------------------------
    def accepts(self, source: Any) -> bool:
        """True for paths and for the in-memory table kinds listed in the module docstring."""
        if isinstance(source, str | os.PathLike):
            return True
        if isinstance(source, self._duckdb.DuckDBPyRelation):
            return True
        module = type(source).__module__.split(".")[0]
        return module in ("pandas", "polars", "pyarrow")

    def load(self, source: Any) -> DuckDBTable:
        """Wrap a path, DataFrame, Arrow table or DuckDB relation (see the module docstring)."""
        if isinstance(source, self._duckdb.DuckDBPyRelation):
            return DuckDBTable(None, source, "DuckDB relation")
        if isinstance(source, str | os.PathLike):
            return self._load_path(Path(source))
        module = type(source).__module__.split(".")[0]
        if module not in ("pandas", "polars", "pyarrow"):
            raise ParameterTypeError(
                "data must be a CSV/Parquet path, a pandas or Polars DataFrame, a PyArrow table "
                f"or a DuckDB relation, got {type(source).__module__}.{type(source).__name__}"
            )
        if module == "polars":
            source = source.to_arrow()
        name = f"__approxdp_input_{next(_counter)}"
        self._connection.register(name, source)
        view = self._connection.sql(f"SELECT * FROM {quote_identifier(name)}")
        return DuckDBTable(None, view, f"{module} {type(source).__name__}")

    def _load_path(self, path: Path) -> DuckDBTable:
        if not path.exists():
            raise DataError(f"data file not found: {str(path)!r}")
        lower = path.name.lower()
        literal = sql_literal(str(path))
        if lower.endswith(_PARQUET_SUFFIXES):
            reader = f"read_parquet({literal})"
        elif lower.endswith(_CSV_SUFFIXES):
            reader = f"read_csv({literal})"
        else:
            raise DataError(
                f"cannot tell the format of {str(path)!r}: use a name ending in "
                f"{', '.join(_CSV_SUFFIXES + _PARQUET_SUFFIXES)}"
            )
        with _data_errors(f"file {str(path)!r}"):
            view = self._connection.sql(f"SELECT * FROM {reader}")
        return DuckDBTable(None, view, f"file {path.name}")

    # -- metadata --------------------------------------------------------------------------
    def schema(self, table: DuckDBTable) -> dict[str, ColumnKind]:
        """Column names in order, with their :class:`ColumnKind`."""
        if table.columns:
            return dict(table.columns)
        if table.relation is not None:  # the relation knows its columns: no query needed
            rows = list(zip(table.relation.columns, table.relation.types, strict=True))
        else:
            rows = table.rows(f"DESCRIBE SELECT * FROM {_SOURCE}")
        out: dict[str, ColumnKind] = {}
        for row in rows:
            name, dtype = str(row[0]), str(row[1]).upper()
            if dtype.startswith(_NUMERIC_PREFIXES):
                kind = ColumnKind.NUMERIC
            elif dtype == "BOOLEAN":
                kind = ColumnKind.BOOLEAN
            elif dtype.startswith("VARCHAR"):
                kind = ColumnKind.STRING
            else:
                kind = ColumnKind.OTHER
            out[name] = kind
        table.columns.update(out)
        return out

    def count_rows(self, table: DuckDBTable) -> int:
        """``SELECT count(*)``."""
        return int(table.rows(f"SELECT count(*) FROM {_SOURCE}")[0][0])

    def count_outside(
        self, table: DuckDBTable, condition: Membership, limit: int = 3
    ) -> tuple[int, tuple[KeyValue, ...]]:
        """Rows whose ``condition.column`` is not in ``condition.values``, with examples."""
        schema = self.schema(table)
        if condition.column not in schema:
            raise DataError(f"column {condition.column!r} not found; the table has columns "
                            f"{list(schema)}")
        check_values(schema, condition, "domain")
        col = quote_identifier(condition.column)
        where = f"NOT {membership_sql(condition)}"
        n = int(table.rows(f"SELECT count(*) FROM {_SOURCE} WHERE {where}")[0][0])
        if n == 0:
            return 0, ()
        rows = table.rows(
            f"SELECT DISTINCT {col} FROM {_SOURCE} WHERE {where} ORDER BY 1 LIMIT {int(limit)}"
        )
        return n, tuple(r[0] for r in rows)

    # -- aggregation -----------------------------------------------------------------------
    def aggregate(self, table: DuckDBTable, request: AggregateRequest) -> AggregateResult:
        """Run a (possibly key-sampled) grouped count/sum as one SQL query (two, in the rare
        case where two groups of one key share a hash: see the module docstring)."""
        check_columns(self.schema(table), request)
        result = table.arrow(build_aggregate_sql(request))
        if "__ties" in result.column_names and any(result.column("__ties").to_pylist()):
            result = table.arrow(build_aggregate_sql(request, ties=True))
        keys = {
            c: np.asarray(result.column(c).to_pylist(), dtype=object) for c in request.by
        }
        values = {
            a.name: np.asarray(result.column(a.name).to_numpy(zero_copy_only=False), dtype=float)
            for a in request.aggregations
        }
        group_rows = np.asarray(
            result.column("__rows").to_numpy(zero_copy_only=False), dtype=np.int64
        )
        return AggregateResult(keys, values, int(group_rows.sum()), group_rows)


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


def group_hash_sql(seed: int, unit: str, by: Sequence[str]) -> str:
    """The SQL of ``hash(seed, unit, group...)``, the order in which a unit keeps its groups
    (arguments are quoted identifiers)."""
    return f"hash({int(seed)}, {unit}, {', '.join(by)})"


def build_aggregate_sql(request: AggregateRequest, *, ties: bool = False) -> str:
    """The SQL statement for ``request`` over the table ``__approxdp_source``.

    Under a per-key limit with grouping, the statement ranks groups by their hash alone and
    adds a column ``__ties``, true where two groups of one key shared a hash among its best;
    then the result is invalid and ``ties=True`` gives the statement that ranks by (hash,
    group values), exact in every case but slower (strings enter the sort).
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
            f"FROM {_SOURCE} WHERE {where}{group}{order}"
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
            f"FROM {_SOURCE} WHERE {where}), "
            f"__pairs AS (SELECT count(*) AS __n{partials} FROM __rows_cte GROUP BY __unit)"
        )
    else:
        # rows → (unit, by..., hash, __v_i), only the rows of each unit's max_groups best
        # groups: one window over the rows. With ties=True, MATERIALIZED keeps DuckDB from
        # aggregating all (unit, group) pairs before the window (costlier than the window);
        # without, it would also cost parallelism.
        ghash = group_hash_sql(s.seed, unit, by)
        rank_order = ", ".join(f"{c} NULLS LAST" for c in ["__h", *(by if ties else [])])
        kept = (
            f"__kept AS{' MATERIALIZED' if ties else ''} (SELECT "
            f"{', '.join([f'{unit} AS __unit', *by, f'{ghash} AS __h', *values])} "
            f"FROM {_SOURCE} WHERE {where} QUALIFY dense_rank() OVER "
            f"(PARTITION BY __unit ORDER BY {rank_order}) <= {s.max_groups})"
        )
        if ties:
            # → pairs (by..., n, partials): one per kept (unit, group)
            pairs = (
                f"__pairs AS (SELECT {sel_by}count(*) AS __n{partials} FROM __kept "
                f"GROUP BY {', '.join(['__unit', *by])})"
            )
        else:
            # → pairs (by..., n, partials, mixed) per kept (unit, hash): one group each,
            # unless two groups share the hash (then "mixed", and the caller asks again)
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
