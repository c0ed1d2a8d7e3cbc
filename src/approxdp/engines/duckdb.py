"""The embedded DuckDB engine: every primitive is one SQL query run inside DuckDB.

Accepted inputs: a CSV (``.csv``, ``.csv.gz``, ``.tsv``; column types are inferred from every
row, like Spark's ``inferSchema``) or Parquet (``.parquet``, ``.pq``) path, a pandas or Polars
DataFrame, a PyArrow Table or RecordBatchReader, or a DuckDB relation (which is queried on its
own connection, so views and temporary tables it refers to work).
``duckdb`` is imported only when an engine is created.

Per-key limits and what they cost: :mod:`approxdp.engines._duckdb_sql`, which writes the
statements.
"""

from __future__ import annotations

import functools
import itertools
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from approxdp.engines import duckdb_rows
from approxdp.engines._duckdb_cells import stream_cells
from approxdp.engines._duckdb_sql import SOURCE as _SOURCE
from approxdp.engines._duckdb_sql import (
    build_aggregate_sql,
    expression_sql,
    in_table_sql,
    membership_sql,
    quote_identifier,
)
from approxdp.engines._duckdb_table import (
    DuckDBTable,
    data_errors,
    import_duckdb,
    path_reader,
)
from approxdp.engines.base import Engine
from approxdp.engines.checks import (
    check_column,
    check_columns,
    check_condition_column,
    check_new_columns,
)
from approxdp.engines.derivation import Derivation
from approxdp.engines.shapes import (
    AggregateRequest,
    AggregateResult,
    CellAggregate,
    CellMapRequest,
    CellMapResult,
    ColumnKind,
    KeyValue,
    Membership,
    aggregate_result,
)
from approxdp.errors import DataError, ParameterTypeError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.transforms import JoinHow

__all__ = ["DuckDBEngine", "DuckDBTable"]

_NUMERIC_PREFIXES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
)  # fmt: skip
_counter = itertools.count()
_INLINE_VALUES = 2000  # longer membership lists become semi-joins on registered tables
#: One in-memory DuckDB database per (process, settings), shared by engines through cursors.
_DATABASES: dict[tuple[object, ...], duckdb.DuckDBPyConnection] = {}


P = ParamSpec("P")
R = TypeVar("R")


def translated(method: Callable[Concatenate[DuckDBEngine, P], R]
                ) -> Callable[Concatenate[DuckDBEngine, P], R]:
    """A primitive whose DuckDB errors become :class:`DataError` naming its table (or the
    source it loads)."""

    def run(self: DuckDBEngine, /, *args: P.args, **kwargs: P.kwargs) -> R:
        first = args[0] if args else None
        what = first.description if isinstance(first, DuckDBTable) else (
            f"file {str(first)!r}" if isinstance(first, str | os.PathLike) else "the data")
        with data_errors(what):
            return method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


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
        self._duckdb = import_duckdb()
        config: dict[str, str | int] = {}
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
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- loading ---------------------------------------------------------------------------
    def accepts(self, source: object) -> bool:
        """True for paths and for the in-memory table kinds listed in the module docstring."""
        if isinstance(source, str | os.PathLike):
            return True
        if isinstance(source, self._duckdb.DuckDBPyRelation):
            return True
        module = type(source).__module__.split(".")[0]
        return module in ("pandas", "polars", "pyarrow")

    @translated
    def load(self, source: object) -> DuckDBTable:
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
                " (a Spark DataFrame runs on engine='spark')"
            )
        # a pandas/Polars/PyArrow object, told apart by its module (none is imported here)
        data: Any = source
        if module == "polars":
            data = data.to_arrow()
        name = f"__approxdp_input_{next(_counter)}"
        self._connection.register(name, data)
        view = self._connection.sql(f"SELECT * FROM {quote_identifier(name)}")
        return DuckDBTable(None, view, f"{module} {type(data).__name__}", own=True)

    def _load_path(self, path: Path) -> DuckDBTable:
        reader = path_reader(path)
        with data_errors(f"file {str(path)!r}"):
            view = self._connection.sql(f"SELECT * FROM {reader}")
        return DuckDBTable(None, view, f"file {path.name}", own=True)

    # -- metadata --------------------------------------------------------------------------
    @translated
    def sql_types(self, table: DuckDBTable) -> dict[str, str]:
        """Column names in order, with their DuckDB SQL types (upper case)."""
        if table.relation is not None:  # the relation knows its columns: no query needed
            rows = list(zip(table.relation.columns, table.relation.types, strict=True))
        else:
            rows = table.rows(f"DESCRIBE SELECT * FROM {_SOURCE}")
        return {str(row[0]): str(row[1]).upper() for row in rows}

    @translated
    def schema(self, table: DuckDBTable) -> dict[str, ColumnKind]:
        """Column names in order, with their :class:`ColumnKind`."""
        if table.columns:
            return dict(table.columns)
        out: dict[str, ColumnKind] = {}
        for name, dtype in self.sql_types(table).items():
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

    @translated
    def column_types(self, table: DuckDBTable) -> dict[str, ValueType]:
        """Column names in order, with their row-expression type."""
        return duckdb_rows.column_types(self.sql_types(table))

    @translated
    def count_rows(self, table: DuckDBTable) -> int:
        """``SELECT count(*)``."""
        return int(table.rows(f"SELECT count(*) FROM {_SOURCE}")[0][0])

    @translated
    def count_outside(
        self, table: DuckDBTable, condition: Membership, limit: int = 3
    ) -> tuple[int, tuple[KeyValue, ...]]:
        """Rows whose ``condition.column`` is not in ``condition.values``, with examples."""
        check_condition_column(self.schema(table), condition)
        col = quote_identifier(condition.column)
        name = None
        if len(condition.values) > _INLINE_VALUES and table.own:
            name = self._register_values(condition)
            inside = in_table_sql(condition, name)
        else:
            inside = membership_sql(condition)
        where = f"NOT coalesce({inside}, FALSE)"  # NULL is outside unless None is listed
        try:
            n = int(table.rows(f"SELECT count(*) FROM {_SOURCE} WHERE {where}")[0][0])
            if n == 0:
                return 0, ()
            rows = table.rows(
                f"SELECT DISTINCT {col} FROM {_SOURCE} WHERE {where} ORDER BY 1 LIMIT {int(limit)}"
            )
        finally:
            if name is not None:
                self._connection.unregister(name)
        return n, tuple(r[0] for r in rows)

    @translated
    def count_unconvertible(
        self, table: DuckDBTable, column: str, limit: int = 3
    ) -> tuple[int, tuple[str, ...]]:
        """Rows whose ``column`` is not NULL but ``TRY_CAST(... AS DOUBLE)`` is, with examples."""
        if check_column(self.schema(table), column) is ColumnKind.NUMERIC:
            return 0, ()
        text = f"CAST({quote_identifier(column)} AS VARCHAR)"
        bad = f"{text} IS NOT NULL AND TRY_CAST({text} AS DOUBLE) IS NULL"
        n = int(table.rows(f"SELECT count(*) FROM {_SOURCE} WHERE {bad}")[0][0])
        if n == 0:
            return 0, ()
        rows = table.rows(
            f"SELECT DISTINCT {text} FROM {_SOURCE} WHERE {bad} ORDER BY 1 LIMIT {int(limit)}"
        )
        return n, tuple(str(r[0]) for r in rows)

    @translated
    def cast_to_double(self, table: DuckDBTable, column: str) -> DuckDBTable:
        """``SELECT * REPLACE (TRY_CAST(column AS DOUBLE) AS column)`` as a new handle."""
        schema = self.schema(table)
        check_column(schema, column)
        col = quote_identifier(column)
        value = (f"CAST({col} AS DOUBLE)" if schema[column] is ColumnKind.NUMERIC
                 else f"TRY_CAST(CAST({col} AS VARCHAR) AS DOUBLE)")
        rel = table.run(f"SELECT * REPLACE ({value} AS {col}) FROM {_SOURCE}")
        return DuckDBTable(None, rel, table.description, own=table.own)

    @translated
    def derive(self, table: DuckDBTable, derivation: Derivation) -> DuckDBTable:
        """Rows with a value, plus the columns of ``derivation``, as a new handle."""
        check_new_columns(self.schema(table), derivation.column, derivation.names)
        x = f"CAST({quote_identifier(derivation.column)} AS DOUBLE)"
        cols = ", ".join(f"{expression_sql(expr, x)} AS {quote_identifier(name)}"
                         for name, expr in derivation.outputs)
        rel = table.run(f"SELECT *, {cols} FROM {_SOURCE} WHERE {x} IS NOT NULL AND NOT "
                        f"isnan({x})")
        return DuckDBTable(None, rel, table.description, own=table.own)

    # -- row transformations (approxdp.engines.duckdb_rows) ---------------------------------
    @translated
    def filter_rows(self, table: DuckDBTable, predicate: RowExpression) -> DuckDBTable:
        """``SELECT * ... WHERE predicate`` as a new handle."""
        return duckdb_rows.filter_rows(table, self.column_types(table), predicate)

    @translated
    def with_expression(
        self, table: DuckDBTable, name: str, expression: RowExpression
    ) -> DuckDBTable:
        """``SELECT *, (expression) AS name`` as a new handle."""
        return duckdb_rows.with_expression(table, self.column_types(table), name, expression)

    @translated
    def join_lookup(
        self, table: DuckDBTable, lookup: DuckDBTable, on: Sequence[tuple[str, str]],
        how: JoinHow,
    ) -> DuckDBTable:
        """``table`` joined with ``lookup`` (see :func:`.duckdb_rows.join_lookup`)."""
        types = (self.column_types(table), self.column_types(lookup))
        return duckdb_rows.join_lookup(self._connection, table, lookup, types, on, how)

    @translated
    def duplicate_keys(
        self, table: DuckDBTable, columns: Sequence[str], limit: int = 3
    ) -> tuple[int, tuple[tuple[KeyValue, ...], ...]]:
        """Distinct non-NULL values of ``columns`` on more than one row, and a few."""
        schema = self.schema(table)
        for column in columns:
            check_column(schema, column)
        return duckdb_rows.duplicate_keys(table, columns, limit)

    # -- aggregation -----------------------------------------------------------------------
    @translated
    def aggregate(self, table: DuckDBTable, request: AggregateRequest) -> AggregateResult:
        """Run a (possibly key-sampled) grouped count/sum as one SQL query (two, in the rare
        case where two groups of one key share a rank: see :func:`build_aggregate_sql`)."""
        result = self._aggregate_arrow(table, request)
        if "__ties" in result.column_names and any(result.column("__ties").to_pylist()):
            result = self._aggregate_arrow(table, request, ties=True)
        return aggregate_result(result, request)

    def _aggregate_arrow(
        self, table: DuckDBTable, request: AggregateRequest, *, ties: bool = False
    ) -> pa.Table:
        """The aggregate as an Arrow table: (by..., aggregations, __rows[, __ties]), sorted by
        ``by``."""
        types = self.sql_types(table)
        check_columns(self.schema(table), request)
        long_lists = [m for m in request.keep if len(m.values) > _INLINE_VALUES and table.own]
        if not long_lists:
            return table.arrow(build_aggregate_sql(request, types, ties=ties))
        # long IN lists parse slowly: filter by semi-joins on registered value tables first
        names = [self._register_values(m) for m in long_lists]
        try:
            conds = " AND ".join(
                in_table_sql(m, name) for m, name in zip(long_lists, names, strict=True)
            )
            view = DuckDBTable(None, table.run(f"SELECT * FROM {_SOURCE} WHERE {conds}"),
                               table.description, own=True)
            short = AggregateRequest(
                request.by, request.aggregations,
                tuple(m for m in request.keep if m not in long_lists), request.sample,
            )
            return view.arrow(build_aggregate_sql(short, types, ties=ties))
        finally:
            for name in names:
                self._connection.unregister(name)

    def _register_values(self, cond: Membership) -> str:
        import pyarrow as pa

        name = f"__approxdp_values_{next(_counter)}"
        present = [v for v in cond.values if v is not None]
        try:
            arr = pa.array(present)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise DataError(f"values for column {cond.column!r} mix types: {exc}") from exc
        self._connection.register(name, pa.table({"v": arr}))
        return name

    # -- cells of a grid --------------------------------------------------------------------
    @translated
    def aggregate_cells(self, table: DuckDBTable, request: AggregateRequest) -> CellAggregate:
        """The aggregate (one row per non-empty cell) fetched as Arrow into this process."""
        import pyarrow.compute as pc

        agg = self._aggregate_arrow(table, request)  # (by..., aggregations, __rows)
        return CellAggregate(agg, request, int(pc.sum(agg.column("__rows")).as_py() or 0))

    @translated
    def map_cells(
        self, table: DuckDBTable, request: CellMapRequest, aggregate: CellAggregate | None = None,
    ) -> CellMapResult:
        """Left-join the aggregate onto every grid cell, stream batches through the function.

        The aggregate (one row per non-empty cell, :meth:`aggregate_cells`) is an Arrow table;
        the grid is the cross product of registered value lists, generated inside DuckDB;
        batches stream from the join through ``request.function`` into a Parquet file
        (``request.path``, or a file in this engine's temporary directory), never held whole
        in memory.
        """
        out_path = self._cells_path(request.path)
        if aggregate is None:
            aggregate = self.aggregate_cells(table, request.aggregate)
        return stream_cells(self._connection, request, aggregate, out_path, next(_counter))

    def _cells_path(self, path: str | None) -> str:
        if path is not None:
            if Path(path).exists():
                raise DataError(f"output path {path!r} already exists; choose a new path")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            return str(path)
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="approxdp-cells-")
        return str(Path(self._tmp.name) / f"cells_{next(_counter)}.parquet")


if TYPE_CHECKING:  # mypy checks that DuckDBEngine implements the Engine protocol over DuckDBTable

    def _implements_engine(engine: DuckDBEngine) -> Engine[DuckDBTable]:
        return engine
