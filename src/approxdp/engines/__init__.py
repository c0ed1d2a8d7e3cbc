"""Engines: where the data lives and the aggregation runs. They know nothing about privacy.

:class:`~approxdp.engines.base.Engine` is the protocol; :class:`DuckDBEngine` (embedded,
default) implements it, importing ``duckdb`` only when created. :func:`engine_for` picks an
engine for a data source.
"""

from __future__ import annotations

from typing import Any

from approxdp.engines.base import (
    AggregateRequest,
    AggregateResult,
    Aggregation,
    ColumnKind,
    Engine,
    Membership,
    PerKeyLimit,
)
from approxdp.errors import UnknownMethodError

__all__ = [
    "ENGINES",
    "AggregateRequest",
    "AggregateResult",
    "Aggregation",
    "ColumnKind",
    "Engine",
    "Membership",
    "PerKeyLimit",
    "engine_for",
]

#: Engine names accepted by :func:`engine_for`.
ENGINES = ("duckdb",)


def engine_for(source: Any, engine: str | Engine = "duckdb") -> Engine:
    """Return an engine instance able to read ``source``.

    Args:
        source: The data (unused for now; engines such as Spark will inspect it).
        engine: An engine name from :data:`ENGINES` or an object implementing :class:`Engine`.

    Raises:
        UnknownMethodError: ``engine`` is not a known name.
    """
    if not isinstance(engine, str):
        return engine
    if engine == "duckdb":
        from approxdp.engines.duckdb import DuckDBEngine

        return DuckDBEngine()
    raise UnknownMethodError(f"engine must be one of {list(ENGINES)}, got engine={engine!r}")
