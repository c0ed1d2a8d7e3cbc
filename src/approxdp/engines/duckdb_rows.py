"""The DuckDB engine's row transformations: filter, derived column, lookup join.

Each is one SQL statement over the table (``__approxdp_source``), made into a new lazy
handle: the predicate or expression is DuckDB SQL generated from its checked tree
(:mod:`approxdp.engines.expressions`), never text the caller wrote. The shapes::

    filter       rows                  → rows where the predicate is true
    derive       rows                  → (columns..., name = expression)
    join         rows ⋈ lookup on keys → (columns..., lookup's other columns)

:class:`~approxdp.engines.duckdb.DuckDBEngine` calls these functions (they take the parts of
its state they need, so this module does not import it).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from approxdp.engines._duckdb_sql import SOURCE, quote_identifier
from approxdp.engines.transforms import (
    JoinHow,
    check_derived_name,
    check_expression_columns,
    check_join,
)
from approxdp.errors import DataError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.shapes import KeyValue

__all__ = ["column_types", "duplicate_keys", "filter_rows", "join_lookup", "with_expression"]

_INTEGER_PREFIXES = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
    "UBIGINT", "UHUGEINT",
)  # fmt: skip
_FLOAT_PREFIXES = ("FLOAT", "DOUBLE", "DECIMAL", "REAL")
_names = itertools.count()


class _Handle(Protocol):
    """What these functions need of a :class:`~approxdp.engines.duckdb.DuckDBTable`."""

    @property
    def relation(self) -> duckdb.DuckDBPyRelation | None: ...

    @property
    def own(self) -> bool: ...

    def run(self, sql: str) -> duckdb.DuckDBPyRelation: ...

    def rows(self, sql: str) -> list[tuple[Any, ...]]: ...

    def arrow(self, sql: str) -> pa.Table: ...


H = TypeVar("H", bound=_Handle)


def _derived(table: H, sql: str, *, own: bool | None = None) -> H:
    """A new handle on ``sql`` over ``table`` (its schema read afresh)."""
    rel = table.run(sql)
    handle: Any = table  # a DuckDBTable (a dataclass)
    return cast(H, dataclasses.replace(handle, connection=None, relation=rel,
                                       own=table.own if own is None else own, columns={}))


def column_types(sql_types: dict[str, str]) -> dict[str, ValueType]:
    """Row-expression types from DuckDB's SQL types (upper case)."""
    out: dict[str, ValueType] = {}
    for name, dtype in sql_types.items():
        if dtype.startswith(_INTEGER_PREFIXES):
            out[name] = "integer"
        elif dtype.startswith(_FLOAT_PREFIXES):
            out[name] = "float"
        elif dtype == "BOOLEAN":
            out[name] = "boolean"
        elif dtype.startswith("VARCHAR"):
            out[name] = "string"
        else:
            out[name] = "other"
    return out


def filter_rows(table: H, types: dict[str, ValueType], predicate: RowExpression) -> H:
    """``SELECT * ... WHERE predicate``."""
    check_expression_columns(types, predicate)
    return _derived(table, f"SELECT * FROM {SOURCE} WHERE {predicate.sql('duckdb')}")


def with_expression(
    table: H, types: dict[str, ValueType], name: str, expression: RowExpression
) -> H:
    """``SELECT *, (expression) AS name``."""
    check_expression_columns(types, expression)
    check_derived_name(types, name)
    return _derived(table, f"SELECT *, ({expression.sql('duckdb')}) AS "
                           f"{quote_identifier(name)} FROM {SOURCE}")


def join_lookup(
    connection: duckdb.DuckDBPyConnection, table: H, lookup: H,
    types: tuple[dict[str, ValueType], dict[str, ValueType]], on: Sequence[tuple[str, str]],
    how: JoinHow,
) -> H:
    """``SELECT s.*, l.<other columns> FROM table s [INNER|LEFT] JOIN lookup l ON ...``.

    The lookup is registered on the engine's ``connection`` under a new name (a view of it
    when it lives there already, else its rows, fetched as Arrow: lookups are small), so
    ``table`` must be one the engine loaded (a path, DataFrame or Arrow table), not a DuckDB
    relation of another connection.
    """
    added = check_join(types[0], types[1], on, how)
    if not table.own:
        raise DataError(
            "join_public on DuckDB needs the private data loaded by approxdp (a path, "
            "DataFrame or Arrow table), not a DuckDB relation of your own connection; join "
            "there first, or pass the data itself"
        )
    name = f"__approxdp_lookup_{next(_names)}"
    if lookup.own and lookup.relation is not None:
        lookup.relation.create_view(name, replace=False)
    else:
        connection.register(name, lookup.arrow(f"SELECT * FROM {SOURCE}"))
    cond = " AND ".join(f"s.{quote_identifier(a)} = l.{quote_identifier(b)}" for a, b in on)
    extra = "".join(f", l.{quote_identifier(c)}" for c in added)
    return _derived(table, f"SELECT s.*{extra} FROM {SOURCE} AS s {how.upper()} JOIN "
                           f"{quote_identifier(name)} AS l ON {cond}", own=True)


def duplicate_keys(
    table: H, columns: Sequence[str], limit: int
) -> tuple[int, tuple[tuple[KeyValue, ...], ...]]:
    """Distinct non-NULL key values on more than one row: how many, and a few (sorted)."""
    cols = ", ".join(quote_identifier(c) for c in columns)
    present = " AND ".join(f"{quote_identifier(c)} IS NOT NULL" for c in columns)
    dup = f"SELECT {cols} FROM {SOURCE} WHERE {present} GROUP BY {cols} HAVING count(*) > 1"
    n = int(table.rows(f"SELECT count(*) FROM ({dup})")[0][0])
    if n == 0:
        return 0, ()
    rows = table.rows(f"{dup} ORDER BY {cols} LIMIT {int(limit)}")
    return n, tuple(tuple(r) for r in rows)
