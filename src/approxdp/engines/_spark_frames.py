"""The building blocks of the Spark engine's plans (:mod:`approxdp.engines.spark`): the column
expressions of its primitives — memberships, aggregations, derived columns, the text-to-double
conversion — and Arrow transfer to and from Spark. PySpark is imported inside each function,
so importing this module needs no PySpark."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from approxdp.engines._spark_hash import quote_column as _q
from approxdp.engines.derivation import Expression
from approxdp.engines.shapes import Aggregation, CellMapRequest, KeyValue, Membership
from approxdp.errors import DataError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "aggregate_column",
    "arrow_for_spark",
    "cell_grid",
    "collect_arrow",
    "create_frame",
    "expression_column",
    "membership_column",
    "sort_nulls_last",
    "try_double",
    "values_frame",
]


def try_double(F: Any, column: str) -> Any:
    """``column`` as a double, NULL where it does not convert (under ANSI mode too: try_cast)."""
    return F.expr(f"try_cast(cast({_q(column)} AS string) AS double)")


def values_frame(
    session: SparkSession, columns: dict[str, Sequence[KeyValue] | range], column: str
) -> DataFrame:
    """A Spark DataFrame from Python value lists, sent as Arrow (fast for long lists)."""
    import pyarrow as pa

    try:
        table = pa.table({name: pa.array(list(values)) for name, values in columns.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DataError(f"values for column {column!r} mix types: {exc}") from exc
    return create_frame(session, table)


def create_frame(session: SparkSession, table: pa.Table) -> DataFrame:
    """``createDataFrame`` from a PyArrow table (PySpark >= 4; older ones go via pandas)."""
    try:
        return session.createDataFrame(table)
    except TypeError:  # pragma: no cover - PySpark 3.5 takes no Arrow table
        return session.createDataFrame(table.to_pandas())


def membership_column(col: Column, cond: Membership) -> Column:
    """``col IN values`` with NULL matching when ``None`` is listed (NULL otherwise → no match)."""
    from pyspark.sql import functions as F

    present = [v for v in cond.values if v is not None]
    parts = []
    if present:
        parts.append(col.isin(present))
    if len(present) != len(cond.values):
        parts.append(col.isNull())
    if not parts:
        return F.lit(False)
    out = parts[0]
    for p in parts[1:]:
        out = out | p
    return out


def aggregate_column(agg: Aggregation, col: Column) -> Column:
    """The aggregate of ``agg`` over ``col``: a count (as a double) or a sum."""
    from pyspark.sql import functions as F

    return F.count(col).cast("double") if agg.function == "count" else F.sum(col)


def collect_arrow(df: DataFrame) -> pa.Table:
    """A small DataFrame on the driver as a PyArrow table."""
    if hasattr(df, "toArrow"):
        return df.toArrow()
    import pyarrow as pa  # pragma: no cover - PySpark < 4

    rows = df.collect()
    return pa.table({c: [r[i] for r in rows] for i, c in enumerate(df.columns)})


def sort_nulls_last(table: pa.Table, by: Sequence[str]) -> pa.Table:
    """Sort an Arrow table by ``by`` ascending, NULLs last (as DuckDB's ORDER BY ... NULLS LAST)."""
    try:  # PyArrow >= 20: null placement per sort key
        return table.sort_by([(c, "ascending", "at_end") for c in by])
    except (TypeError, ValueError):  # pragma: no cover - older PyArrow
        return table.sort_by([(c, "ascending") for c in by], null_placement="at_end")


def arrow_for_spark(table: pa.Table) -> pa.Table:
    """Spark reads plain strings best: large/view strings become ``pa.string()``."""
    import pyarrow as pa

    fields = []
    for f in table.schema:
        if pa.types.is_large_string(f.type) or str(f.type) == "string_view":
            fields.append(pa.field(f.name, pa.string(), f.nullable))
        else:
            fields.append(f)
    return table.cast(pa.schema(fields))


def expression_column(F: Any, expr: Expression, x: Any) -> Any:
    """``expr`` (:mod:`approxdp.engines.derivation`) as a Spark column over the value ``x``:
    constants as float64 literals, ``floor`` as float64 (Spark's own returns a long)."""
    args = [expression_column(F, a, x) for a in expr.args]
    op = expr.op
    if op == "value":
        return x
    if op == "number":
        return F.lit(float(expr.constant))
    if op == "add":
        return args[0] + args[1]
    if op == "subtract":
        return args[0] - args[1]
    if op == "multiply":
        return args[0] * args[1]
    if op == "divide":
        return args[0] / args[1]
    if op == "integer":
        return args[0].cast("long")
    if op == "floor":
        return F.floor(args[0]).cast("double")
    functions = {"least": F.least, "greatest": F.greatest, "abs": F.abs, "sign": F.signum,
                 "log10": F.log10}
    return functions[op](*args)


def cell_grid(df: DataFrame, request: CellMapRequest) -> DataFrame:
    """The grid's cells of :meth:`~approxdp.engines.spark.SparkEngine.map_cells` on the
    executors: (key..., __cell), row-major cell index.

    One small DataFrame per column, (value, position · stride); the longest is spread over
    ``spark.sql.shuffle.partitions`` partitions and the others cross-joined onto it, so the
    cells (and the function over them) are generated in parallel. The join order does not
    change a cell's index.
    """
    from pyspark.sql import functions as F

    session = df.sparkSession
    sizes = [len(v) for _, v in request.grid]
    strides = [math.prod(sizes[i + 1 :]) for i in range(len(sizes))]
    frames = []
    for i, (col, values) in enumerate(request.grid):
        frame = values_frame(session, {"v": values, "pos": range(len(values))}, col)
        frames.append(frame.select(
            F.col("v").cast(df.schema[col].dataType).alias(col),
            (F.col("pos") * F.lit(strides[i])).alias(f"__c{i}"),
        ))
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    parts = int(session.conf.get("spark.sql.shuffle.partitions", "200") or 200)
    grid = frames[order[0]].repartition(max(1, min(sizes[order[0]], parts)))
    for i in order[1:]:
        grid = grid.crossJoin(F.broadcast(frames[i]))
    cell = sum((F.col(f"__c{i}") for i in range(1, len(sizes))), F.col("__c0"))
    return grid.select(*(F.col(_q(c)) for c, _ in request.grid), cell.alias("__cell"))
