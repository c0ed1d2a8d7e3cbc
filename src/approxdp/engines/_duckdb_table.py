"""DuckDB table handles and the translation of DuckDB errors, for :mod:`approxdp.engines.duckdb`.

A :class:`DuckDBTable` wraps a relation (or a connection) in which the table is the SQL name
``__approxdp_source``; every DuckDB error raised while running it becomes a
:class:`~approxdp.errors.DataError` naming the input (:func:`data_errors`), so no DuckDB
exception leaves the engine. :func:`path_reader` turns a file path into the table function
that reads it.
"""

from __future__ import annotations

import contextlib
import glob
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from approxdp.engines._duckdb_sql import SOURCE, sql_literal
from approxdp.engines.base import engine_error, is_glob
from approxdp.engines.shapes import ColumnKind
from approxdp.errors import DataError, MissingDependencyError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


__all__ = ["DuckDBTable", "arrow_of", "data_errors", "import_duckdb", "path_reader"]

CSV_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")


def import_duckdb() -> ModuleType:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - duckdb is a runtime dependency
        raise MissingDependencyError(
            "the DuckDB engine needs the 'duckdb' package: pip install duckdb"
        ) from exc
    return duckdb


@dataclass(frozen=True)
class DuckDBTable:
    """A DuckDB-backed table handle: ``run(sql)`` executes SQL in which the table is
    ``__approxdp_source``.

    Its schema is read once, on first use, and kept in ``columns``.
    """

    connection: duckdb.DuckDBPyConnection | None
    relation: duckdb.DuckDBPyRelation | None
    description: str
    own: bool = False  # the relation lives on the engine's own connection
    columns: dict[str, ColumnKind] = field(default_factory=dict, compare=False, repr=False)

    def run(self, sql: str) -> duckdb.DuckDBPyRelation:
        """Execute ``sql`` (referring to the table as ``__approxdp_source``); return a relation."""
        if self.relation is not None:
            rel = self.relation.query(SOURCE, sql)
        else:
            rel = self.connection.sql(sql) if self.connection is not None else None
        if rel is None:  # a SELECT always gives a relation
            raise DataError(f"table handle {self.description!r} gave no result for {sql!r}")
        return rel

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` and fetch its rows; unreadable data raises :class:`DataError`."""
        with data_errors(self.description):
            return list(self.run(sql).fetchall())

    def arrow(self, sql: str) -> pa.Table:
        """Run ``sql`` and fetch it as a PyArrow table; unreadable data raises ``DataError``."""
        with data_errors(self.description):
            return arrow_of(self.run(sql))


@contextlib.contextmanager
def data_errors(description: str) -> Iterator[None]:
    """Turn every DuckDB error (an unreadable file, a bad encoding, a value that does not
    convert...) into :class:`DataError` naming the input: no DuckDB exception leaves the
    engine, so no front end needs to know DuckDB."""
    duckdb = import_duckdb()
    try:
        yield
    except duckdb.Error as exc:
        raise engine_error(description, exc) from exc


def arrow_of(rel: duckdb.DuckDBPyRelation) -> pa.Table:
    method = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
    return method()


def path_reader(path: Path) -> str:
    """The DuckDB table function that reads ``path`` (a CSV or Parquet file, a glob, or a
    Hive-partitioned Parquet folder); a missing file or an unknown format is a ``DataError``."""
    pattern = is_glob(str(path))
    if pattern and not glob.glob(str(path), recursive=True):
        raise DataError(f"no file matches the pattern {str(path)!r}")
    if not pattern and not path.exists():
        raise DataError(f"data file not found: {str(path)!r}")
    lower = path.name.lower()
    literal = sql_literal(str(path))
    if path.is_dir():  # a (Hive-)partitioned Parquet folder: key=value/ sub-folders
        files = sql_literal(str(path / "**" / "*.parquet"))
        if not glob.glob(str(path / "**" / "*.parquet"), recursive=True):
            raise DataError(f"folder {str(path)!r} holds no .parquet file")
        reader = f"read_parquet({files}, hive_partitioning = true)"
    elif lower.endswith(PARQUET_SUFFIXES):
        reader = f"read_parquet({literal}, hive_partitioning = true)" if pattern else (
            f"read_parquet({literal})")
    elif lower.endswith(CSV_SUFFIXES):
        # types from every row, not a sample: a bad value deep in a numeric column makes
        # the column text here (named, with examples, before any spend) instead of a
        # "Conversion Error" halfway through a query (as Spark's inferSchema reads all too)
        reader = f"read_csv({literal}, sample_size = -1)"
    else:
        raise DataError(
            f"cannot tell the format of {str(path)!r}: use a name ending in "
            f"{', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} (or a Parquet folder)"
        )
    return reader
