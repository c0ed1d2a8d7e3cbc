"""The Spark engine's row transformations: filter, derived column, lookup join.

Each is a lazy DataFrame step run on the executors. The predicate or expression is Spark SQL
generated from its checked tree (:mod:`approxdp.engines.expressions`: every identifier in
backticks, every literal escaped) and handed to ``functions.expr``, never text the caller
wrote; its semantics are normalised to DuckDB's (``tests/engines/test_conformance.py``). The
lookup of a join is broadcast (lookups are small). The shapes::

    filter       rows                  → rows where the predicate is true
    derive       rows                  → (columns..., name = expression)
    join         rows ⋈ lookup on keys → (columns..., lookup's other columns)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from approxdp.engines._spark_hash import quote_column as _q
from approxdp.engines.transforms import (
    JoinHow,
    check_derived_name,
    check_expression_columns,
    check_join,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.shapes import KeyValue

__all__ = ["column_types", "duplicate_keys", "filter_rows", "join_lookup", "with_expression"]

_INTEGER = ("ByteType", "ShortType", "IntegerType", "LongType")
_FLOAT = ("FloatType", "DoubleType", "DecimalType")
_STRING = ("StringType", "VarcharType", "CharType")


def column_types(df: DataFrame) -> dict[str, ValueType]:
    """Row-expression types of a DataFrame's columns."""
    out: dict[str, ValueType] = {}
    for f in df.schema.fields:
        kind = type(f.dataType).__name__
        if kind in _INTEGER:
            out[f.name] = "integer"
        elif kind in _FLOAT:
            out[f.name] = "float"
        elif kind in _STRING:
            out[f.name] = "string"
        elif kind == "BooleanType":
            out[f.name] = "boolean"
        else:
            out[f.name] = "other"
    return out


def filter_rows(df: DataFrame, predicate: RowExpression) -> DataFrame:
    """``df.filter(expr(predicate))``."""
    from pyspark.sql import functions as F

    check_expression_columns(column_types(df), predicate)
    return df.filter(F.expr(predicate.sql("spark")))


def with_expression(df: DataFrame, name: str, expression: RowExpression) -> DataFrame:
    """``df.withColumn(name, expr(expression))``."""
    from pyspark.sql import functions as F

    types = column_types(df)
    check_expression_columns(types, expression)
    check_derived_name(types, name)
    return df.withColumn(name, F.expr(expression.sql("spark")))


def join_lookup(
    df: DataFrame, lookup: DataFrame, on: Sequence[tuple[str, str]], how: JoinHow
) -> DataFrame:
    """``df`` joined with the broadcast ``lookup``, keeping ``df``'s columns and the lookup's
    other columns."""
    from pyspark.sql import functions as F

    added = check_join(column_types(df), column_types(lookup), on, how)
    # columns are named through aliases, not through their DataFrames: a lookup derived from
    # the same DataFrame would otherwise resolve both sides of `k = k` to one column (a
    # condition always true: a cross join)
    left, right = df.alias("__approxdp_l"), lookup.alias("__approxdp_r")

    def col(side: str, name: str) -> Column:
        return F.col(f"{side}.{_q(name)}")

    cond = [col("__approxdp_l", a) == col("__approxdp_r", b) for a, b in on]
    joined = left.join(F.broadcast(right), cond, how)
    return joined.select(*(col("__approxdp_l", c).alias(c) for c in df.columns),
                         *(col("__approxdp_r", c).alias(c) for c in added))


def duplicate_keys(
    df: DataFrame, columns: Sequence[str], limit: int
) -> tuple[int, tuple[tuple[KeyValue, ...], ...]]:
    """Distinct non-NULL key values on more than one row: how many, and a few (sorted)."""
    from pyspark.sql import functions as F

    cols = [F.col(_q(c)) for c in columns]
    present = df
    for c in cols:
        present = present.filter(c.isNotNull())
    dup = present.groupBy(*cols).count().filter(F.col("count") > 1).select(*cols)
    n = int(dup.count())
    if n == 0:
        return 0, ()
    rows = dup.orderBy(*cols).limit(limit).collect()
    return n, tuple(tuple(r) for r in rows)
