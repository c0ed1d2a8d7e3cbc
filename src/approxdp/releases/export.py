"""Exports of a release for publication: its cells as a pandas or Polars DataFrame, a CSV or a
Parquet file, holding private values and public parameters only.

One row per released cell: the key columns (or ``index`` for the k values of linear queries),
``value``, ``std``, ``ci_low``, ``ci_high``, ``informative``, then the release's public
parameters on every row — ``statistic`` (its label), ``kind``, ``level``, ``epsilon``,
``delta``, ``mechanism``, ``method``, ``sigma`` and ``secure`` (False for a seeded simulation:
NOT private, not to be published). Nothing exact leaves: no row counts or other diagnostics,
no notes (a cast's note counts the values it could not convert). A Parquet file also carries
``approxdp.secure`` and ``approxdp.release`` (the public parameters as JSON) in its schema
metadata, as :meth:`ReleaseResult.to_arrow <approxdp.releases.result.ReleaseResult.to_arrow>`.
A release that spent from a ledger file carries its spend receipt(s) too: a last ``receipt``
column (``LEDGER_ID:INDEX:HASH``, ``;`` between two) and ``approxdp.receipts`` in the metadata,
which ``approxdp ledger verify FILE --receipt EXPORT`` checks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from approxdp.errors import DataError, MissingDependencyError

if TYPE_CHECKING:
    import pyarrow as pa


class Released(Protocol):
    """What an export reads of a :class:`~approxdp.releases.result.ReleaseResult` (which
    imports this module, so it is not imported here)."""

    @property
    def label(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def level(self) -> float: ...

    @property
    def mechanism(self) -> str: ...

    @property
    def method(self) -> str: ...

    @property
    def sigma(self) -> float: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def secure(self) -> bool: ...

    @property
    def informative(self) -> Any: ...

    @property
    def table(self) -> Any: ...

    def to_arrow(self) -> Any: ...

__all__ = ["PARAMETER_COLUMNS", "VALUE_COLUMNS", "export_table", "write_csv", "write_parquet"]

#: The columns of each cell's released numbers, after its key columns.
VALUE_COLUMNS = ("value", "std", "ci_low", "ci_high", "informative")
#: The release's public parameters, repeated on every row.
PARAMETER_COLUMNS = ("statistic", "kind", "level", "epsilon", "delta", "mechanism", "method",
                     "sigma", "secure")


def public_parameters(result: Released) -> dict[str, Any]:
    """The release's public parameters (the values of :data:`PARAMETER_COLUMNS`)."""
    return {"statistic": result.label, "kind": result.kind, "level": float(result.level),
            "epsilon": float(result.epsilon), "delta": float(result.delta),
            "mechanism": result.mechanism, "method": result.method,
            "sigma": float(result.sigma), "secure": bool(result.secure)}


def export_table(result: Released) -> pa.Table:
    """The release as one Arrow table: key columns, :data:`VALUE_COLUMNS`,
    :data:`PARAMETER_COLUMNS` (module docstring); schema metadata ``approxdp.secure`` and
    ``approxdp.release``."""
    import pyarrow as pa

    clash = sorted(set(result.columns)
                   & {*VALUE_COLUMNS, *PARAMETER_COLUMNS, "index", "receipt"})
    if clash:
        raise DataError(f"{result.label}: key column(s) {clash} have the name of an export "
                        "column; derive a renamed copy (PrivateTable.with_column) and release "
                        "by that")
    cells = result.to_arrow()  # key columns, value, std, ci_low, ci_high (+ metadata)
    n = cells.num_rows
    keys = list(result.columns)
    if not keys and n > 1 and result.table is None:  # the k values of linear queries
        cells = cells.append_column("index", pa.array(range(n), pa.int64()))
        keys = ["index"]
    if result.informative is not None and result.table is None:
        informative = pa.array(np.asarray(result.informative, dtype=bool).tolist(), pa.bool_())
    else:
        informative = pa.array([True] * n, pa.bool_())
    params = public_parameters(result)
    columns = {k: cells.column(k) for k in keys}
    columns |= {c: cells.column(c).cast(pa.float64()) for c in VALUE_COLUMNS[:-1]}
    columns["informative"] = informative
    columns |= {c: pa.array([v] * n) for c, v in params.items()}
    receipts = tuple(getattr(result, "receipts", ()))
    if receipts:  # the spend's proof in its ledger file (approxdp ledger verify --receipt)
        columns["receipt"] = pa.array([";".join(str(r) for r in receipts)] * n)
    meta = dict(cells.schema.metadata or {})
    meta[b"approxdp.release"] = json.dumps(params).encode()
    return pa.table(columns).replace_schema_metadata(meta)


def write_csv(result: Released, path: str | os.PathLike[str]) -> Path:
    """Write :func:`export_table` to ``path`` as CSV (header, one row per cell); returns it."""
    from pyarrow import csv

    out = Path(path)
    csv.write_csv(export_table(result), out)
    return out


def write_parquet(result: Released, path: str | os.PathLike[str]) -> Path:
    """Write :func:`export_table` to ``path`` as Parquet (with its metadata); returns it."""
    import pyarrow.parquet as pq

    out = Path(path)
    pq.write_table(export_table(result), out)
    return out


def to_polars(result: Released) -> Any:
    """:func:`export_table` as a Polars DataFrame."""
    try:
        import polars as pl
    except ImportError as exc:
        raise MissingDependencyError(
            "to_polars needs Polars: pip install polars (or 'approxdp[data]')") from exc
    return pl.from_arrow(export_table(result))


def to_pandas(result: Released) -> Any:
    """:func:`export_table` as a pandas DataFrame."""
    try:
        import pandas  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            "to_pandas needs pandas: pip install pandas (or 'approxdp[data]')") from exc
    return export_table(result).to_pandas()
