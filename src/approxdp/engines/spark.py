"""The Apache Spark engine: every primitive is a DataFrame plan run on the executors.

Accepted inputs: a ``pyspark.sql.DataFrame`` (classic or Spark Connect), a CSV or Parquet path
(read with the active SparkSession, or a new local one), or a pandas/Polars DataFrame or a
PyArrow table (turned into a Spark DataFrame). Only the DataFrame API is used — no RDDs, no
``SparkContext`` — so the engine works over Spark Connect too. ``pyspark`` is imported only
when an engine is created; without it a :class:`~approxdp.errors.MissingDependencyError` says
``pip install 'approxdp[spark]'``.

What runs where: filtering, clamping, the per-key limit and the grouping run on the executors;
the driver receives only the aggregate (one row per non-empty group). :meth:`map_cells` goes
further: the grid, the join and the mapping function run on the executors and the result is
written (or checkpointed) there, never collected. The per-key limit ranks (unit, group) pairs
with the engine-independent keyed hash of :mod:`approxdp.engines.keyed_hash`, so it keeps
exactly the groups the DuckDB engine keeps for the same seed. The shapes::

    rows                      # (unit, by..., value per aggregation)
    → pairs  groupBy unit, by   # (unit, by..., n, partial per aggregation)
    → rank, keep ≤ max_groups   # row_number() over (partition by unit order by rank, by...)
    → groups groupBy by         # (by..., Σ partial·min(1, max_rows/n), Σ min(n, max_rows))
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from approxdp.engines import spark_rows
from approxdp.engines._spark_frames import (
    aggregate_column,
    arrow_for_spark,
    cell_grid,
    collect_arrow,
    create_frame,
    expression_column,
    membership_column,
    sort_nulls_last,
    try_double,
    values_frame,
)
from approxdp.engines._spark_hash import quote_column as _q
from approxdp.engines._spark_hash import with_rank
from approxdp.engines._spark_table import (
    INTEGER_TYPES,
    NUMERIC_TYPES,
    STRING_TYPES,
    SparkTable,
    is_spark_dataframe,
    read_path,
    require_pyspark,
    spark_errors,
    type_name,
)
from approxdp.engines.base import Engine, engine_error
from approxdp.engines.checks import (
    check_column,
    check_columns,
    check_condition_column,
    check_new_columns,
)
from approxdp.engines.derivation import Derivation
from approxdp.engines.keyed_hash import HashInput
from approxdp.engines.shapes import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    CellAggregate,
    CellBatchMapper,
    CellMapRequest,
    CellMapResult,
    ColumnKind,
    KeyValue,
    Membership,
    aggregate_result,
)
from approxdp.errors import DataError, ParameterTypeError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.transforms import JoinHow

__all__ = ["SparkEngine", "SparkTable", "is_spark_dataframe"]

_INLINE_VALUES = 2000  # longer membership lists become (broadcast) semi-joins
_counter = itertools.count()


P = ParamSpec("P")
R = TypeVar("R")


def translated(method: Callable[Concatenate[SparkEngine, P], R]
                ) -> Callable[Concatenate[SparkEngine, P], R]:
    """A primitive whose Spark errors become :class:`DataError` naming its table (or the
    source it loads): no Spark exception leaves the engine."""

    def run(self: SparkEngine, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except spark_errors() as exc:
            first = args[0] if args else None
            what = first.description if isinstance(first, SparkTable) else (
                f"file {str(first)!r}" if isinstance(first, str | os.PathLike) else "the data")
            raise engine_error(what, exc) from exc

    functools.update_wrapper(run, method)
    return run


class SparkEngine:
    """Run the engine primitives as Spark DataFrame plans.

    Args:
        spark: The SparkSession to use for paths and in-memory tables (default: the active
            session, else a new local one). DataFrames always run on their own session.
    """

    name = "spark"

    def __init__(self, spark: SparkSession | None = None) -> None:
        require_pyspark()
        self._spark = spark

    @property
    def spark(self) -> SparkSession:
        """The SparkSession for paths and in-memory inputs (created on first use)."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is None:  # a new local session: workers run this interpreter
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
                active = SparkSession.builder.appName("approxdp").getOrCreate()
            self._spark = active
        return self._spark

    # -- loading ---------------------------------------------------------------------------
    def accepts(self, source: object) -> bool:
        """True for Spark DataFrames, paths, and pandas/Polars/PyArrow tables."""
        if is_spark_dataframe(source) or isinstance(source, str | os.PathLike):
            return True
        return type(source).__module__.split(".")[0] in ("pandas", "polars", "pyarrow")

    @translated
    def load(self, source: object) -> SparkTable:
        """Wrap a DataFrame, read a path, or convert an in-memory table (module docstring)."""
        if is_spark_dataframe(source):
            return SparkTable(source, "Spark DataFrame")
        if isinstance(source, str | os.PathLike):
            return self._load_path(str(source))
        module = type(source).__module__.split(".")[0]
        if module not in ("pandas", "polars", "pyarrow"):
            raise ParameterTypeError(
                "data must be a Spark DataFrame, a CSV/Parquet path, a pandas or Polars "
                f"DataFrame or a PyArrow table, got {type(source).__module__}."
                f"{type(source).__name__}"
            )
        import pyarrow as pa

        # a pandas/Polars/PyArrow object, told apart by its module (none is imported here)
        table: Any = source
        if module == "polars":
            table = table.to_arrow()
        elif module == "pandas":  # via Arrow: Spark's own pandas path converts row by row
            table = pa.Table.from_pandas(table, preserve_index=False)
        if isinstance(table, pa.RecordBatchReader):
            table = table.read_all()
        table = arrow_for_spark(table)
        return SparkTable(create_frame(self.spark, table), f"{module} {type(table).__name__}")

    def _load_path(self, path: str) -> SparkTable:
        return SparkTable(read_path(self.spark, path), f"file {Path(path).name}")

    # -- metadata --------------------------------------------------------------------------
    @translated
    def schema(self, table: SparkTable) -> dict[str, ColumnKind]:
        """Column names in order, with their :class:`ColumnKind`."""
        out: dict[str, ColumnKind] = {}
        for field in table.df.schema.fields:
            kind = type_name(field.dataType)
            if kind in NUMERIC_TYPES:
                out[field.name] = ColumnKind.NUMERIC
            elif kind == "BooleanType":
                out[field.name] = ColumnKind.BOOLEAN
            elif kind in STRING_TYPES:
                out[field.name] = ColumnKind.STRING
            else:
                out[field.name] = ColumnKind.OTHER
        return out

    @translated
    def column_types(self, table: SparkTable) -> dict[str, ValueType]:
        """Column names in order, with their row-expression type."""
        return spark_rows.column_types(table.df)

    def _hash_inputs(self, table: SparkTable) -> dict[str, HashInput]:
        return {
            f.name: "integer" if type_name(f.dataType) in INTEGER_TYPES else "text"
            for f in table.df.schema.fields
        }

    @translated
    def count_rows(self, table: SparkTable) -> int:
        """``df.count()``."""
        return int(table.df.count())

    @translated
    def count_outside(
        self, table: SparkTable, condition: Membership, limit: int = 3
    ) -> tuple[int, tuple[KeyValue, ...]]:
        """Rows whose ``condition.column`` is not in ``condition.values``, with examples."""
        check_condition_column(self.schema(table), condition)
        from pyspark.sql import functions as F

        outside = self._filter(table.df, (condition,), keep=False)
        n = int(outside.count())
        if n == 0:
            return 0, ()
        col = F.col(_q(condition.column))
        rows = outside.select(col).distinct().orderBy(col.asc_nulls_last()).limit(limit)
        return n, tuple(r[0] for r in rows.collect())

    @translated
    def count_unconvertible(
        self, table: SparkTable, column: str, limit: int = 3
    ) -> tuple[int, tuple[str, ...]]:
        """Rows whose ``column`` is not NULL but ``try_cast(... AS DOUBLE)`` is, with examples."""
        if check_column(self.schema(table), column) is ColumnKind.NUMERIC:
            return 0, ()
        from pyspark.sql import functions as F

        text = F.col(_q(column)).cast("string")
        bad = table.df.filter(text.isNotNull() & try_double(F, column).isNull())
        n = int(bad.count())
        if n == 0:
            return 0, ()
        rows = bad.select(text.alias("v")).distinct().orderBy("v").limit(limit).collect()
        return n, tuple(str(r[0]) for r in rows)

    @translated
    def cast_to_double(self, table: SparkTable, column: str) -> SparkTable:
        """``withColumn(column, try_cast(column AS DOUBLE))`` as a new handle."""
        schema = self.schema(table)
        check_column(schema, column)
        from pyspark.sql import functions as F

        value = (F.col(_q(column)).cast("double") if schema[column] is ColumnKind.NUMERIC
                 else try_double(F, column))
        return SparkTable(table.df.withColumn(column, value), table.description)

    @translated
    def derive(self, table: SparkTable, derivation: Derivation) -> SparkTable:
        """Rows with a value, plus the columns of ``derivation``, as a new handle."""
        check_new_columns(self.schema(table), derivation.column, derivation.names)
        from pyspark.sql import functions as F

        x = F.col(_q(derivation.column)).cast("double")
        df = table.df.filter(x.isNotNull() & ~F.isnan(x))
        for name, expr in derivation.outputs:
            df = df.withColumn(name, expression_column(F, expr, x))
        return SparkTable(df, table.description)

    def _filter(
        self, df: DataFrame, conds: Sequence[Membership], keep: bool = True
    ) -> DataFrame:
        """Rows meeting every condition (``keep``), or rows failing the single condition."""
        from pyspark.sql import functions as F

        for cond in conds:
            col = df[_q(cond.column)]
            present = [v for v in cond.values if v is not None]
            if len(present) <= _INLINE_VALUES:
                inside = membership_column(col, cond)
                df = df.filter(inside if keep else ~F.coalesce(inside, F.lit(False)))
                continue
            listed = [*present, None] if None in cond.values else present
            values = self._values_frame(df, cond.column, listed)
            match = col.eqNullSafe(values["__v"]) if None in cond.values else col == values["__v"]
            df = df.join(F.broadcast(values), match, "left_semi" if keep else "left_anti")
        return df

    def _values_frame(
        self, df: DataFrame, column: str, values: Sequence[KeyValue]
    ) -> DataFrame:
        """A one-column DataFrame ``__v`` of ``values``, typed like ``df[column]`` (via Arrow)."""
        from pyspark.sql import functions as F

        return values_frame(df.sparkSession, {"__v": values}, column).select(
            F.col("__v").cast(df.schema[column].dataType).alias("__v")
        )

    # -- row transformations (approxdp.engines.spark_rows) ----------------------------------
    @translated
    def filter_rows(self, table: SparkTable, predicate: RowExpression) -> SparkTable:
        """``df.filter(expr(predicate))`` as a new handle."""
        return SparkTable(spark_rows.filter_rows(table.df, predicate), table.description)

    @translated
    def with_expression(self, table: SparkTable, name: str, expression: RowExpression
                        ) -> SparkTable:
        """``df.withColumn(name, expr(expression))`` as a new handle."""
        return SparkTable(spark_rows.with_expression(table.df, name, expression),
                          table.description)

    @translated
    def join_lookup(self, table: SparkTable, lookup: SparkTable,
                    on: Sequence[tuple[str, str]], how: JoinHow) -> SparkTable:
        """``table`` joined with the broadcast ``lookup`` (:func:`.spark_rows.join_lookup`)."""
        return SparkTable(spark_rows.join_lookup(table.df, lookup.df, on, how),
                          table.description)

    @translated
    def duplicate_keys(self, table: SparkTable, columns: Sequence[str], limit: int = 3
                       ) -> tuple[int, tuple[tuple[KeyValue, ...], ...]]:
        """Distinct non-NULL values of ``columns`` on more than one row, and a few."""
        schema = self.schema(table)
        for column in columns:
            check_column(schema, column)
        return spark_rows.duplicate_keys(table.df, columns, limit)

    # -- aggregation -----------------------------------------------------------------------
    @translated
    def aggregate(self, table: SparkTable, request: AggregateRequest) -> AggregateResult:
        """Run a (possibly key-sampled) grouped count/sum on the executors; collect the groups."""
        out = self._aggregate_frame(table, request)  # (by..., aggregations, __rows)
        result = collect_arrow(out)  # small: sorted here, not by a distributed sort
        if request.by:
            result = sort_nulls_last(result, request.by)
        return aggregate_result(result, request)

    def _aggregate_frame(self, table: SparkTable, request: AggregateRequest) -> DataFrame:
        """The aggregate as a lazy DataFrame: (by..., aggregations, __rows)."""
        from pyspark.sql import functions as F

        check_columns(self.schema(table), request)
        df = self._filter(table.df, request.keep)
        by = [F.col(_q(c)).alias(c) for c in request.by]
        group_cols = [F.col(_q(c)) for c in request.by]
        aggs = request.aggregations
        values = [self._value(df, a).alias(f"__v{i}") for i, a in enumerate(aggs)]
        if request.sample is None:
            rows = df.select(*by, *values)  # (by..., __v_i)
            parts = [
                F.coalesce(aggregate_column(a, F.col(f"__v{i}")), F.lit(0.0)).alias(a.name)
                for i, a in enumerate(aggs)
            ]
            grouped = rows.groupBy(*group_cols) if request.by else rows
            return grouped.agg(*parts, F.count(F.lit(1)).cast("long").alias("__rows"))
        s = request.sample
        m = s.max_rows
        rows = df.select(F.col(_q(s.key)).alias("__unit"), *by, *values)
        # pairs: (unit, by..., n, partial per aggregation)
        pairs = rows.groupBy(F.col("__unit"), *group_cols).agg(
            F.count(F.lit(1)).alias("__n"),
            *(aggregate_column(a, F.col(f"__v{i}")).alias(f"__p{i}") for i, a in enumerate(aggs)),
        )
        if request.by:  # ≤ max_groups pairs per unit, smallest keyed rank first
            kinds = self._hash_inputs(table)
            floats = {f.name for f in table.df.schema.fields
                      if type_name(f.dataType) in ("FloatType", "DoubleType")}
            pairs = with_rank(pairs, request.by, [kinds[c] for c in request.by],
                               kinds[s.key], s.seed,
                               floats={*(c for c in request.by if c in floats),
                                       *(("__unit",) if s.key in floats else ())})
            from pyspark.sql import Window

            window = Window.partitionBy("__unit").orderBy(
                F.col("__rank").asc(), *(F.col(_q(c)).asc_nulls_last() for c in request.by)
            )
            pairs = pairs.withColumn("__rn", F.row_number().over(window))
            pairs = pairs.filter(F.col("__rn") <= s.max_groups)
        # groups: (by..., aggregations rescaled to ≤ max_rows rows per pair, __rows)
        n = F.col("__n")
        finals = [
            F.coalesce(
                F.sum(F.when(n <= m, F.col(f"__p{i}")).otherwise(F.col(f"__p{i}") * m / n)),
                F.lit(0.0),
            ).cast("double").alias(a.name)
            for i, a in enumerate(aggs)
        ]
        used = F.coalesce(F.sum(F.least(n, F.lit(m))), F.lit(0)).cast("long").alias("__rows")
        grouped = pairs.groupBy(*group_cols) if request.by else pairs
        return grouped.agg(*finals, used)

    def _value(self, df: DataFrame, agg: Aggregation) -> Column:
        """Per-row contribution of ``agg`` (NULL when it contributes nothing)."""
        from pyspark.sql import functions as F

        conds = [membership_column(df[_q(m.column)], m) for m in agg.where]
        if agg.column is not None:
            col = df[_q(agg.column)].cast("double")
            conds.append(col.isNotNull() & ~F.isnan(col))
        if agg.function == "count":
            value = F.lit(1)
        else:
            col = df[_q(agg.column or "")].cast("double")
            value = F.greatest(F.least(col, F.lit(float(agg.high))), F.lit(float(agg.low)))
            if agg.shift != 0.0:
                value = value - F.lit(float(agg.shift))
        if not conds:
            return value
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        return F.when(F.coalesce(cond, F.lit(False)), value)

    # -- cells of a grid --------------------------------------------------------------------
    @translated
    def aggregate_cells(self, table: SparkTable, request: AggregateRequest) -> CellAggregate:
        """The aggregate, persisted on the executors (and counted, which computes it)."""
        from pyspark.sql import functions as F

        agg = self._aggregate_frame(table, request).persist()
        try:
            rows_used = int(agg.agg(F.sum("__rows")).collect()[0][0] or 0)
        except BaseException:
            agg.unpersist()
            raise

        def unpersist() -> None:
            agg.unpersist()

        return CellAggregate(agg, request, rows_used, on_close=unpersist)

    @translated
    def map_cells(
        self, table: SparkTable, request: CellMapRequest, aggregate: CellAggregate | None = None,
    ) -> CellMapResult:
        """Left-join the aggregate onto the grid, ``mapInArrow`` the function; all on executors.

        The aggregate (:meth:`aggregate_cells`) is persisted on the executors; the grid is the
        cross product of one small DataFrame per column (built from the value lists, the only
        data the driver sends); the result is written as Parquet to ``request.path``, or else
        checkpointed on the executors (``localCheckpoint``: lost blocks raise rather than
        recompute, so the function never runs twice for a cell).
        """
        from pyspark.sql import functions as F
        from pyspark.sql import types
        by = request.aggregate.by
        if request.path is not None and "://" not in request.path and Path(request.path).exists():
            raise DataError(f"output path {request.path!r} already exists; choose a new path")
        if aggregate is None:
            aggregate = self.aggregate_cells(table, request.aggregate)
        agg: DataFrame = aggregate.handle  # type: ignore[assignment]
        try:
            rows_used = aggregate.rows_used
            renamed = agg.select(
                *(F.col(_q(c)).alias(f"__k{i}") for i, c in enumerate(by)),
                *(F.col(_q(a.name)).alias(f"__m{j}")
                  for j, a in enumerate(request.aggregate.aggregations)),
            )
            grid = cell_grid(table.df, request)  # (key..., __cell)
            on = [grid[_q(c)].eqNullSafe(renamed[f"__k{i}"]) for i, c in enumerate(by)]
            joined = grid.join(renamed, on, "left").select(
                *(grid[_q(c)] for c in by),
                F.col("__cell"),
                *(F.coalesce(F.col(f"__m{j}"), F.lit(0.0)).cast("double").alias(a.name)
                  for j, a in enumerate(request.aggregate.aggregations)),
            )
            fields = [joined.schema[c] for c in by]
            fields += [types.StructField(o, types.DoubleType(), True) for o in request.outputs]
            mapper = CellBatchMapper.of(request)
            mapped = joined.mapInArrow(mapper.map_batches, types.StructType(fields))
            if request.path is not None:
                try:
                    mapped.write.parquet(request.path)
                except Exception as exc:
                    if "PATH_ALREADY_EXISTS" in str(exc):
                        raise DataError(
                            f"output path {request.path!r} already exists; choose a new path"
                        ) from exc
                    raise
                out = mapped.sparkSession.read.parquet(request.path)
            else:
                out = mapped.localCheckpoint(eager=True)
        finally:
            aggregate.close()
        return CellMapResult(out, request.path, request.n_cells, rows_used)


if TYPE_CHECKING:  # mypy checks that SparkEngine implements the Engine protocol over SparkTable

    def _implements_engine(engine: SparkEngine) -> Engine[SparkTable]:
        return engine
