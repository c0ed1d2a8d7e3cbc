"""Releases computed from columns derived inside the engine (quantiles' tree bins, variance's
centred powers): what such a release needs from its table, and the one path every one of them
takes — check the column, plan and allocate, derive, then execute (one spend, after every
check; see :func:`~approxdp.releases.execute.execute`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import numpy as np

from approxdp.accounting.budget.protocols import Accountant
from approxdp.engines.base import ColumnKind, Engine, TableT
from approxdp.errors import DataCheckError, DataError
from approxdp.releases.execute import execute
from approxdp.releases.plan import AllocatedPlan, ReleasePlan, allocate
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import ContributionBounds, Neighbouring, Query

__all__ = ["TableRelease", "release_derived"]


@dataclass(frozen=True)
class TableRelease(Generic[TableT]):
    """A table with its accountant and release settings (from a
    :class:`~approxdp.releases.session.PrivateTable`), and the bounding key and noise source
    of one release."""

    engine: Engine[TableT]
    table: TableT
    accountant: Accountant
    neighbouring: Neighbouring
    contribution: ContributionBounds
    method: str
    key: int
    rng: np.random.Generator | None

    def numeric_schema(self, column: str, name: str) -> Mapping[str, ColumnKind]:
        """The table's schema, after checking ``column`` is there and numeric (DataError,
        nothing spent, otherwise)."""
        schema = self.engine.schema(self.table)
        if column not in schema:
            close = difflib.get_close_matches(column, list(schema), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(f"{name}: column {column!r} not found; the table has columns "
                            f"{list(schema)}{hint}; nothing was spent")
        if schema[column] is not ColumnKind.NUMERIC:
            raise DataError(
                f"{name}: column {column!r} must be numeric, but it is {schema[column].value}; "
                f"casts={{{column!r}: 'double'}} turns every value that is not a number into "
                "a missing value; nothing was spent"
            )
        return schema


def release_derived(
    ctx: TableRelease[Any], queries: Sequence[Query], *, epsilon: float, delta: float,
    derive: Callable[[Any], Any], name: str, column: str, **options: Any,
) -> tuple[AllocatedPlan, tuple[ReleaseResult, ...]]:
    """Allocate (ε, δ) over ``queries`` (one jointly calibrated plan), run them on the table
    ``derive`` makes from ``ctx.table`` (rows without a value in ``column`` dropped), spend
    once. ``options`` go to :func:`~approxdp.releases.execute.execute`."""
    allocated = allocate(ReleasePlan(tuple(queries), ctx.neighbouring, ctx.contribution),
                         epsilon, delta, method=ctx.method)
    derived = derive(ctx.table)
    try:
        results = execute(allocated, ctx.engine, derived, ctx.accountant, key=ctx.key,
                          rng=ctx.rng, **options)
    except DataError as exc:
        if "table is empty" in str(exc):
            raise DataCheckError(
                f"{name}: column {column!r} has no value (every row is missing, or the table "
                "is empty); nothing was spent",
                advice=f"{name}: column {column!r} has no values to release",
            ) from exc
        raise
    return allocated, results
