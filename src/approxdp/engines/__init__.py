"""Engines: where the data lives and the aggregation runs. They know nothing about privacy.

:class:`~approxdp.engines.base.Engine` is the protocol; ``DuckDBEngine`` (embedded, default)
and ``SparkEngine`` (:mod:`approxdp.engines.spark`, the optional ``approxdp[spark]`` extra)
implement it, importing ``duckdb``/``pyspark`` only when created. :func:`engine_for` picks an
engine for a data source.
"""

from __future__ import annotations

from typing import Any

from approxdp.engines.base import Engine
from approxdp.engines.derivation import Derivation, Expression
from approxdp.engines.shapes import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    CellMapRequest,
    CellMapResult,
    ColumnKind,
    Membership,
    PerKeyLimit,
)
from approxdp.errors import UnknownMethodError

__all__ = [
    "ENGINES",
    "AggregateRequest",
    "AggregateResult",
    "Aggregation",
    "CellMapRequest",
    "CellMapResult",
    "ColumnKind",
    "Derivation",
    "Engine",
    "Expression",
    "Membership",
    "PerKeyLimit",
    "engine_for",
]

#: Engine names accepted by :func:`engine_for` (``"auto"``: Spark for a Spark DataFrame,
#: else DuckDB).
ENGINES = ("auto", "duckdb", "spark")


def engine_for(source: object, engine: str | Engine[Any] = "auto") -> Engine[Any]:
    """Return an engine instance able to read ``source``.

    Args:
        source: The data; with ``engine="auto"`` a PySpark DataFrame selects the Spark engine
            (on the DataFrame's own session) and anything else DuckDB.
        engine: An engine name from :data:`ENGINES` or an object implementing :class:`Engine`.

    Returns:
        The engine, over whichever table handle it uses (``Engine[Any]``: the choice is made
        at run time; the handle its ``load`` returns goes back only to it).

    Raises:
        UnknownMethodError: ``engine`` is not a known name.
        MissingDependencyError: ``engine="spark"`` without PySpark installed.
    """
    if not isinstance(engine, str):
        return engine
    if engine == "auto":
        from approxdp.engines.spark import is_spark_dataframe

        engine = "spark" if is_spark_dataframe(source) else "duckdb"
    if engine == "duckdb":
        from approxdp.engines.duckdb import DuckDBEngine

        return DuckDBEngine()
    if engine == "spark":
        from approxdp.engines.spark import SparkEngine, is_spark_dataframe

        return SparkEngine(source.sparkSession if is_spark_dataframe(source) else None)
    raise UnknownMethodError(f"engine must be one of {list(ENGINES)}, got engine={engine!r}")
