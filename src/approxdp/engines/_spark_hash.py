"""The keyed hash of :mod:`approxdp.engines.keyed_hash` as Spark SQL expressions.

The Spark engine ranks each (unit, group) pair with it for per-key limits; the definition and
its Python reference are in :mod:`approxdp.engines.keyed_hash`, and the conformance suite
checks this rendering against both (and against DuckDB's).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from approxdp.engines.keyed_hash import (
    FMIX_MULTIPLIER,
    MASK32,
    MULTIPLIER,
    NULL_LIMB,
    HashInput,
    seed_state,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["quote_column", "with_rank"]


def quote_column(name: str) -> str:
    """Backtick-quote a column name for ``F.col`` (dots and spaces taken literally)."""
    return "`" + name.replace("`", "``") + "`"


def with_rank(
    pairs: DataFrame, by: Sequence[str], kinds: Sequence[HashInput], unit_kind: HashInput,
    seed: int, floats: Collection[str] = (),
) -> DataFrame:
    """Add ``__rank``: the keyed hash of :mod:`approxdp.engines.keyed_hash`.

    The group part is computed once per distinct group (a small dictionary, broadcast back)
    when a group column is hashed as text, inline otherwise; then the unit is absorbed per
    pair. Steps are Spark SQL expressions (one JVM call each, not one per operator), and each
    ``fmix`` reads a named column, so no expression is copied into another. ``floats``: the
    columns (``__unit`` for the unit) of float type, whose NaN and infinities Java prints
    unlike DuckDB and Python (``NaN``, ``Infinity``): they are hashed as ``nan``, ``inf``.
    """
    from pyspark.sql import functions as F

    groups = pairs.select(*(F.col(quote_column(c)) for c in by))
    text = "text" in kinds
    if text:  # distinct groups; reuses the pairs' shuffle
        groups = groups.distinct()
    groups = groups.withColumns({
        f"__hin{i}": F.expr(_input_sql(quote_column(c), kind, c in floats))
        for i, (c, kind) in enumerate(zip(by, kinds, strict=True))
    })
    state = f"CAST({seed_state(seed)} AS BIGINT)"
    for i, kind in enumerate(kinds):
        state = _absorb_sql(state, _limbs_sql(f"__hin{i}", kind))
    groups = groups.withColumn("__hstate", F.expr(state))
    groups = groups.withColumn("__hgroup", F.expr(_fmix_sql("__hstate")))
    if text:
        table = groups.select(
            *(F.col(quote_column(c)).alias(f"__g{i}") for i, c in enumerate(by)), F.col("__hgroup")
        )
        on = [pairs[quote_column(c)].eqNullSafe(table[f"__g{i}"]) for i, c in enumerate(by)]
        with_group = pairs.join(F.broadcast(table), on, "inner").drop(
            *(f"__g{i}" for i in range(len(by)))
        )
    else:  # integers only: cheap enough per pair
        with_group = pairs.withColumns({
            f"__hin{i}": F.expr(_input_sql(quote_column(c), kind, c in floats))
            for i, (c, kind) in enumerate(zip(by, kinds, strict=True))
        }).withColumn("__hstate", F.expr(state))
        with_group = with_group.withColumn("__hgroup", F.expr(_fmix_sql("__hstate")))
    unit = with_group.withColumn(
        "__hunit", F.expr(_input_sql("__unit", unit_kind, "__unit" in floats))
    )
    mixed = unit.withColumn(
        "__hmix", F.expr(_absorb_sql("__hgroup", _limbs_sql("__hunit", unit_kind)))
    )
    return mixed.withColumn("__rank", F.expr(_fmix_sql("__hmix")))


def _input_sql(col: str, kind: HashInput, is_float: bool = False) -> str:
    """What a value enters the hash as: a BIGINT, or the md5 hex of its text form (a float's
    NaN and infinities in DuckDB's and Python's spelling, ``nan``, ``inf``, ``-inf``)."""
    if kind == "integer":
        return f"CAST({col} AS BIGINT)"
    if is_float:
        return (f"md5(CASE WHEN isnan({col}) THEN 'nan' WHEN {col} = double('inf') THEN 'inf' "
                f"WHEN {col} = double('-inf') THEN '-inf' ELSE CAST({col} AS STRING) END)")
    return f"md5(CAST({col} AS STRING))"


def _limbs_sql(hashed: str, kind: HashInput) -> list[str]:
    """The two limbs of a value from its hash input (a BIGINT, or an md5 hex string)."""
    if kind == "integer":
        parts = [f"({hashed} & {MASK32})", f"(shiftright({hashed}, 32) & {MASK32})"]
    else:  # bytes d[o:o+4] little-endian: their hex pairs in reverse order
        parts = [
            "CAST(conv(concat("
            + ", ".join(f"substring({hashed}, {2 * (o + 3 - j) + 1}, 2)" for j in range(4))
            + "), 16, 10) AS BIGINT)"
            for o in (0, 4)
        ]
    return [f"coalesce({p}, {NULL_LIMB})" for p in parts]


def _absorb_sql(state: str, limbs: Sequence[str]) -> str:
    for x in limbs:
        state = f"(({state}) * {MULTIPLIER} + {x}) & {MASK32}"
    return state


def _fmix_sql(x: str) -> str:
    for _ in range(2):
        x = f"(({x}) ^ shiftright({x}, 16))"
        x = f"((({x}) * {FMIX_MULTIPLIER}) & {MASK32})"
    return f"(({x}) ^ shiftright({x}, 16))"
