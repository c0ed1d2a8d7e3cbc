"""Immutable, validated descriptions of what to release (query specs) and how units contribute.

Privacy parameters never come from the data (reading them from it would leak it): clamping
bounds, domains and
contribution caps are arguments here, checked when the spec is built.

Each query is a list of *measures* (count or clamped sum, optionally filtered), computed per
cell of a grouping (``by``) or once globally. A cell's list of measures is released as one
vector with Gaussian noise; :mod:`approxdp.releases.sensitivity` derives its ℓ2 sensitivity.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from approxdp._validation import check_parameter
from approxdp.engines.checks import LITERAL_TYPES
from approxdp.engines.shapes import KeyValue, Membership
from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "CAST_ERRORS",
    "CastErrors",
    "ColumnQuery",
    "ContributionBounds",
    "Count",
    "Histogram",
    "LinearQueries",
    "LinearQuery",
    "Mean",
    "Measure",
    "Neighbouring",
    "Query",
    "Sum",
    "check_bounds",
]

#: ``"add-remove"``: neighbours differ by one unit's presence (unbounded DP);
#: ``"replace-one"``: one unit's rows are replaced by another's (bounded DP). Zhao et al. Remark 1.
Neighbouring = Literal["add-remove", "replace-one"]
NEIGHBOURING: tuple[str, ...] = ("add-remove", "replace-one")
OutsideDomain = Literal["error", "drop"]

#: What a table's casts do with values that are not numbers (``PrivateTable(cast_errors=)``):
#: ``drop`` them (they become missing values) or refuse the table with an ``error``.
CastErrors = Literal["drop", "error"]
CAST_ERRORS: tuple[CastErrors, ...] = ("drop", "error")


def check_bounds(name: str, bounds: object) -> tuple[float, float]:
    """Validate ``bounds = (low, high)``: finite, low <= high; return floats."""
    if not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2:
        raise ParameterTypeError(f"{name} must be a pair (low, high), got {bounds!r}")
    low = float(check_parameter(f"{name}[0]", bounds[0], "finite"))
    high = float(check_parameter(f"{name}[1]", bounds[1], "finite"))
    if low > high:
        raise InvalidParameterError(
            f"{name} must satisfy low <= high, got {name}=({low:g}, {high:g}); swap them"
        )
    return low, high


def _columns(name: str, columns: str | Sequence[str]) -> tuple[str, ...]:
    cols = (columns,) if isinstance(columns, str) else tuple(columns)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise ParameterTypeError(f"{name} must be a column name or a list of them, got {columns!r}")
    if len(set(cols)) != len(cols):
        raise InvalidParameterError(f"{name} lists a column twice: {list(cols)}")
    return cols


def _domain(
    by: tuple[str, ...], domain: Mapping[str, Sequence[KeyValue]] | None
) -> tuple[tuple[str, tuple[KeyValue, ...]], ...] | None:
    if domain is None:
        return None
    if not isinstance(domain, Mapping):
        raise ParameterTypeError(f"domain must map each column to its values, got {domain!r}")
    if set(domain) != set(by):
        raise InvalidParameterError(
            f"domain must give values for exactly the columns {list(by)}, got {list(domain)}"
        )
    out = []
    for col in by:
        values = domain[col]
        if isinstance(values, str) or not isinstance(values, Sequence | set | frozenset):
            raise ParameterTypeError(f"domain[{col!r}] must be a list of values, got {values!r}")
        vals = tuple(values)
        for v in vals:  # each a literal (a list or a dict is not a value, and not hashable)
            if v is not None and not isinstance(v, LITERAL_TYPES):
                raise ParameterTypeError(
                    f"domain[{col!r}] values must be str, int, float, bool or None, got "
                    f"{type(v).__name__} {v!r}; list each value on its own"
                )
        # NaN != NaN: two NaN objects would pass set() as distinct, yet match the same rows
        distinct = {"NaN" if isinstance(v, float) and math.isnan(v) else v for v in vals}
        if not vals or len(distinct) != len(vals):
            raise InvalidParameterError(
                f"domain[{col!r}] must be a non-empty list of distinct values, got {vals!r}"
            )
        out.append((col, vals))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ContributionBounds:
    """How much one privacy unit may contribute (enforced by the engine before aggregation).

    Args:
        privacy_unit: Column identifying the unit (person, account) to protect; ``None``: each
            row is a unit (then both caps must be 1).
        max_partitions: Cells of a grouped query a unit may contribute to (k).
        max_rows_per_partition: Rows' worth a unit may contribute to one cell, or to a global
            query (m). A unit with n > m rows in a cell counts m there and its sums are scaled
            by m/n (see :class:`approxdp.engines.shapes.PerKeyLimit`).
        filtered: Rows may have been dropped before the bounding (by
            :meth:`~approxdp.releases.PrivateTable.filter` or an inner
            :meth:`~approxdp.releases.PrivateTable.join_public`), so a unit present in the data
            may have no row left: its contribution to a global ``count(*)`` then ranges over
            [0, m] instead of [1, m]. Under replace-one this is what makes a filtered count
            noisy (one person swapped for another can leave or enter the filter); add/remove
            is unchanged. Set by the table, not by hand.
    """

    privacy_unit: str | None = None
    max_partitions: int = 1
    max_rows_per_partition: int = 1
    filtered: bool = False

    def __post_init__(self) -> None:
        for name in ("max_partitions", "max_rows_per_partition"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ParameterTypeError(f"{name} must be a positive integer, got {value!r}")
            if value < 1:
                raise InvalidParameterError(f"{name} must be >= 1, got {name}={value}")
        if self.privacy_unit is None and (self.max_partitions, self.max_rows_per_partition) != (
            1,
            1,
        ):
            raise InvalidParameterError(
                "max_partitions and max_rows_per_partition need a privacy_unit column; without "
                "one each row is a unit and contributes to one cell"
            )
        if not isinstance(self.filtered, bool):
            raise ParameterTypeError(f"filtered must be True or False, got {self.filtered!r}")
        if self.privacy_unit is not None and (
            not isinstance(self.privacy_unit, str) or not self.privacy_unit
        ):
            raise ParameterTypeError(
                f"privacy_unit must be a column name, got {self.privacy_unit!r}"
            )


@dataclass(frozen=True, slots=True)
class Measure:
    """One released aggregate per cell: a count (of rows, or of non-missing ``column`` values)
    or the sum of ``column`` clamped to ``bounds`` minus ``centre``; ``where`` filters rows."""

    kind: Literal["count", "sum"]
    column: str | None = None
    bounds: tuple[float, float] = (1.0, 1.0)
    centre: float = 0.0
    where: tuple[Membership, ...] = ()

    @property
    def counts_every_row(self) -> bool:
        """A plain ``count(*)``: every row of the unit counts (so a present unit counts ≥ 1)."""
        return self.kind == "count" and self.column is None and not self.where

    @property
    def scale(self) -> float:
        """Largest per-row magnitude |value − centre|: the unit in which noise is balanced."""
        if self.kind == "count":
            return 1.0
        low, high = self.bounds
        s = max(abs(low - self.centre), abs(high - self.centre))
        return s if s > 0 else 1.0


@dataclass(frozen=True, slots=True)
class Query:
    """Base of the query specs. ``by`` groups (empty: global); ``domain`` lists public cells."""

    name: str = field(default="", kw_only=True)

    @property
    def kind(self) -> str:
        """Short name of the query type."""
        return type(self).__name__.lower()

    @property
    def by(self) -> tuple[str, ...]:
        """Grouping columns (empty for a global query)."""
        return ()

    @property
    def cell_domain(self) -> tuple[tuple[str, tuple[KeyValue, ...]], ...] | None:
        """Declared public values per grouping column, or None (partition selection)."""
        return None

    @property
    def outside(self) -> OutsideDomain:
        """What happens to rows outside the declared domain."""
        return "error"

    def measures(self) -> tuple[Measure, ...]:
        """The measures released per cell."""
        raise NotImplementedError

    def parts(self) -> tuple[Query, ...]:
        """The linear queries this release is made of: the query itself (a statistic computed
        from several, :class:`~approxdp.releases.derived.DerivedQuery`, lists them)."""
        return (self,)

    def cells(self) -> list[tuple[KeyValue, ...]]:
        """All cells of the declared domain, in row-major order of ``domain``."""
        dom = self.cell_domain
        if dom is None:
            return [()] if not self.by else []
        return list(itertools.product(*(vals for _, vals in dom)))

    def label(self) -> str:
        """The name shown in reports."""
        return self.name or self.kind


@dataclass(frozen=True, slots=True)
class Count(Query):
    """The number of rows (global)."""

    def measures(self) -> tuple[Measure, ...]:
        """One measure: count(*)."""
        return (Measure("count"),)


@dataclass(frozen=True, slots=True)
class ColumnQuery(Query):
    """Base of :class:`Sum` and :class:`Mean`: a numeric ``column`` clamped to ``bounds``,
    globally or per group of ``group_by`` (over a declared ``domain``, or without one through
    DP partition selection). NULL and NaN values contribute nothing; ±inf are clamped."""

    column: str
    bounds: tuple[float, float]
    group_by: tuple[str, ...] = ()
    domain: Mapping[str, Sequence[KeyValue]] | None = None
    outside_domain: OutsideDomain = "error"

    def __post_init__(self) -> None:
        if not isinstance(self.column, str) or not self.column:
            raise ParameterTypeError(f"column must be a column name, got {self.column!r}")
        object.__setattr__(self, "bounds", check_bounds("bounds", self.bounds))
        object.__setattr__(
            self, "group_by", () if not self.group_by else _columns("by", self.group_by)
        )
        if self.domain is not None and not self.group_by:
            raise InvalidParameterError("domain needs by= columns to group on")
        _domain(self.group_by, self.domain)
        _check_outside(self.outside_domain)

    @property
    def by(self) -> tuple[str, ...]:
        return self.group_by

    @property
    def cell_domain(self) -> tuple[tuple[str, tuple[KeyValue, ...]], ...] | None:
        return _domain(self.group_by, self.domain)

    @property
    def outside(self) -> OutsideDomain:
        return self.outside_domain


@dataclass(frozen=True, slots=True)
class Sum(ColumnQuery):
    """Sum of ``column`` clamped to ``bounds`` (NULL and NaN contribute nothing), optionally
    per group of ``by`` over a declared ``domain`` (without one: DP partition selection on a
    noisy row count released alongside)."""

    def measures(self) -> tuple[Measure, ...]:
        """Clamped sum; plus count(*) when cells are selected privately (for the threshold)."""
        total = Measure("sum", self.column, self.bounds)
        return (total,) if self.domain is not None or not self.group_by else (
            total,
            Measure("count"),
        )


@dataclass(frozen=True, slots=True)
class Mean(ColumnQuery):
    """Mean of ``column`` clamped to ``bounds`` over rows where it is not NULL/NaN.

    Released as one Gaussian on the pair (Σ(x − c), n) with c the midpoint of the bounds
    (computed as L/2 + U/2, which cannot overflow), then mean = c + Σ̃/ñ, clamped to the bounds
    (post-processing).
    """

    def measures(self) -> tuple[Measure, ...]:
        """Centred clamped sum and count of non-missing values."""
        low, high = self.bounds
        return (Measure("sum", self.column, self.bounds, low / 2 + high / 2), Measure(
            "count", self.column
        ))


@dataclass(frozen=True, slots=True)
class Histogram(Query):
    """Row counts per combination of ``columns``.

    With ``domain`` every cell of the cross product is released, empty ones included; rows
    whose value lies outside the domain raise :class:`~approxdp.errors.DataError` (an exact,
    non-private check meant for the data owner) or, with ``outside_domain="drop"``, are
    silently left out (private: the analyst learns nothing about them). NULL and NaN are
    values like any other: put ``None`` or ``float("nan")`` in the domain to count them.
    Without ``domain``, cells are chosen by DP partition selection (released only if their
    noisy count clears a threshold).
    """

    columns: tuple[str, ...]
    domain: Mapping[str, Sequence[KeyValue]] | None = None
    outside_domain: OutsideDomain = "error"

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _columns("columns", self.columns))
        _domain(self.columns, self.domain)
        _check_outside(self.outside_domain)

    @property
    def by(self) -> tuple[str, ...]:
        return self.columns

    @property
    def cell_domain(self) -> tuple[tuple[str, tuple[KeyValue, ...]], ...] | None:
        return _domain(self.columns, self.domain)

    @property
    def outside(self) -> OutsideDomain:
        return self.outside_domain

    def measures(self) -> tuple[Measure, ...]:
        """count(*) per cell."""
        return (Measure("count"),)


@dataclass(frozen=True, slots=True)
class LinearQuery:
    """Σ over rows meeting ``where`` of 1 (``column=None``) or of ``column`` clamped to
    ``bounds``. ``where`` maps columns to the values they must take."""

    column: str | None = None
    bounds: tuple[float, float] = (1.0, 1.0)
    where: Mapping[str, KeyValue | Sequence[KeyValue]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.column is not None:
            object.__setattr__(self, "bounds", check_bounds("bounds", self.bounds))
        if not isinstance(self.where, Mapping):
            raise ParameterTypeError(f"where must map columns to values, got {self.where!r}")

    def measure(self) -> Measure:
        """This query as a measure."""
        conds = []
        for col, v in sorted(self.where.items()):
            values: tuple[KeyValue, ...] = (
                tuple(v) if isinstance(v, list | tuple | set) else (v,)  # type: ignore[assignment]
            )
            conds.append(Membership(col, values))
        if self.column is None:
            return Measure("count", None, (1.0, 1.0), 0.0, tuple(conds))
        return Measure("sum", self.column, self.bounds, 0.0, tuple(conds))


@dataclass(frozen=True, slots=True)
class LinearQueries(Query):
    """k linear queries answered together with one Gaussian on the k-vector, calibrated to its
    ℓ2 sensitivity (noise ∝ √k rather than k; Wu's notes, §2.2)."""

    queries: tuple[LinearQuery, ...]

    def __post_init__(self) -> None:
        qs = tuple(self.queries)
        if not qs or not all(isinstance(q, LinearQuery) for q in qs):
            raise ParameterTypeError("queries must be a non-empty list of LinearQuery")
        object.__setattr__(self, "queries", qs)

    def measures(self) -> tuple[Measure, ...]:
        """One measure per query."""
        return tuple(q.measure() for q in self.queries)


def _check_outside(value: str) -> None:
    if value not in ("error", "drop"):
        raise InvalidParameterError(
            f"outside_domain must be 'error' or 'drop', got outside_domain={value!r}"
        )
