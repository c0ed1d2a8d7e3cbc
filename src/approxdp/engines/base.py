"""The engine protocol: a few collection primitives over a table, knowing nothing about privacy.

Releases (``approxdp.releases``) are written once against :class:`Engine`; each engine
(DuckDB here, Spark later) implements every primitive, and one conformance test suite
(``tests/test_engine_conformance.py``) runs against each. The model is PipelineDP's
``PipelineBackend``, but coarser: SQL engines plan a whole bounded aggregation best as one
query, so the central primitive, :meth:`Engine.aggregate`, takes a declarative
:class:`AggregateRequest` (filter → clamp → per-key sampling → group → count/sum) instead of a
chain of maps. None of these objects mentions ε, δ, noise or sensitivity: clamping bounds,
sampling caps and the hashing key are plain data-processing arguments.

Data shapes, step by step, of an aggregate request::

    rows                                   # (key..., unit, value...)
    → keep rows matching ``keep``          # rows whose group keys are in the allowed sets
    → per-key limit (``sample``)           # ≤ max_groups groups/key, ≤ max_rows rows' worth each
    → clamp values                         # value ↦ min(max(value, low), high)
    → group by ``by``                      # (key..., count/sum per aggregation, __rows)
"""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError

__all__ = [
    "AggregateRequest",
    "AggregateResult",
    "Aggregation",
    "ColumnKind",
    "Engine",
    "Membership",
    "PerKeyLimit",
    "check_columns",
    "check_values",
]

#: A value that may appear in a key column (``None`` stands for SQL NULL).
KeyValue = str | int | float | bool | None


class ColumnKind(enum.Enum):
    """The coarse type of a column, as far as the primitives care."""

    NUMERIC = "numeric"
    STRING = "string"
    BOOLEAN = "boolean"
    OTHER = "other"


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterTypeError(f"{what} must be a non-empty column name, got {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class Membership:
    """The row condition ``column IN values`` (``None`` in ``values`` matches NULL)."""

    column: str
    values: tuple[KeyValue, ...]

    def __post_init__(self) -> None:
        _check_name(self.column, "Membership.column")
        object.__setattr__(self, "values", tuple(self.values))


@dataclass(frozen=True, slots=True)
class Aggregation:
    """One output column of a grouped aggregation.

    ``function="count"`` counts rows (``column=None``) or rows whose ``column`` is neither NULL
    nor NaN. ``function="sum"`` sums ``min(max(column, low), high) - shift`` over rows whose
    value is neither NULL nor NaN (±inf are clamped like any other value). ``where`` keeps only
    rows meeting every membership condition.
    """

    name: str
    function: Literal["count", "sum"]
    column: str | None = None
    low: float = -math.inf
    high: float = math.inf
    shift: float = 0.0
    where: tuple[Membership, ...] = ()

    def __post_init__(self) -> None:
        _check_name(self.name, "Aggregation.name")
        if self.function not in ("count", "sum"):
            raise InvalidParameterError(
                f"Aggregation.function must be 'count' or 'sum', got {self.function!r}"
            )
        if self.function == "sum" and self.column is None:
            raise InvalidParameterError("Aggregation.column is required for function='sum'")
        if self.column is not None:
            _check_name(self.column, "Aggregation.column")
        if not (self.low <= self.high):
            raise InvalidParameterError(
                f"Aggregation needs low <= high, got low={self.low}, high={self.high}"
            )
        object.__setattr__(self, "where", tuple(self.where))


@dataclass(frozen=True, slots=True)
class PerKeyLimit:
    """Limit what each ``key`` value contributes: ≤ ``max_groups`` groups, ≤ ``max_rows`` rows each.

    Groups: each key keeps the ``max_groups`` groups with the smallest ``hash(seed, key, group)``
    (``seed`` a 63-bit integer), so which groups survive depends only on the key's own groups
    and the seed, not on row order, input format or engine. Rows: if a key has n > ``max_rows``
    rows in a kept group, its counts there become ``max_rows`` and its sums are scaled by
    ``max_rows / n`` — exactly what keeping ``max_rows`` of its rows at random gives in
    expectation, and never more than ``max_rows`` rows' worth of any aggregate.
    """

    key: str
    max_groups: int
    max_rows: int
    seed: int

    def __post_init__(self) -> None:
        _check_name(self.key, "PerKeyLimit.key")
        for name in ("max_groups", "max_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ParameterTypeError(f"{name} must be an integer, got {value!r}")
            if value < 1:
                raise InvalidParameterError(f"{name} must be >= 1, got {name}={value}")
            object.__setattr__(self, name, int(value))
        if not isinstance(self.seed, int | np.integer) or not 0 <= self.seed < 2**63:
            raise InvalidParameterError(f"seed must be an integer in [0, 2**63), got {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))


@dataclass(frozen=True, slots=True)
class AggregateRequest:
    """Group ``by`` these columns (none: one global group) and compute ``aggregations``."""

    by: tuple[str, ...]
    aggregations: tuple[Aggregation, ...]
    keep: tuple[Membership, ...] = ()
    sample: PerKeyLimit | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "by", tuple(_check_name(c, "by") for c in self.by))
        object.__setattr__(self, "aggregations", tuple(self.aggregations))
        object.__setattr__(self, "keep", tuple(self.keep))
        if not self.aggregations:
            raise InvalidParameterError("AggregateRequest needs at least one aggregation")
        names = [a.name for a in self.aggregations]
        if len(set(names)) != len(names) or any(n.startswith("__") for n in names):
            raise InvalidParameterError(
                f"aggregation names must be distinct and not start with '__', got {names}"
            )


@dataclass(frozen=True)
class AggregateResult:
    """The (small) output of :meth:`Engine.aggregate`.

    ``keys[c]`` and ``values[a]`` are aligned arrays with one entry per non-empty group (one
    entry for a global aggregation, even on an empty table), ordered by the group keys.
    ``rows_used`` is the number of rows that reached the grouping (after ``keep`` and sampling).
    """

    keys: Mapping[str, npt.NDArray[Any]]
    values: Mapping[str, npt.NDArray[np.float64]]
    rows_used: int
    group_rows: npt.NDArray[np.int64] = field(repr=False)

    @property
    def n_groups(self) -> int:
        """Number of groups in the result."""
        return int(self.group_rows.shape[0])


@runtime_checkable
class Engine(Protocol):
    """Collection primitives every engine implements. ``T`` is the engine's table handle."""

    name: str

    def load(self, source: Any) -> Any:
        """Wrap ``source`` (a path or an in-memory table of a kind the engine accepts)."""
        ...

    def accepts(self, source: Any) -> bool:
        """Whether :meth:`load` can take ``source``."""
        ...

    def schema(self, table: Any) -> Mapping[str, ColumnKind]:
        """Column names, in order, with their kinds."""
        ...

    def count_rows(self, table: Any) -> int:
        """Number of rows."""
        ...

    def count_outside(
        self, table: Any, condition: Membership, limit: int = 3
    ) -> tuple[int, tuple[KeyValue, ...]]:
        """Rows NOT meeting ``condition``, and up to ``limit`` distinct offending values."""
        ...

    def aggregate(self, table: Any, request: AggregateRequest) -> AggregateResult:
        """Run ``request`` on ``table`` (see the module docstring for the steps)."""
        ...


def check_columns(schema: Mapping[str, ColumnKind], request: AggregateRequest) -> None:
    """Raise :class:`DataError` naming any column the request uses that the table lacks."""
    used: list[tuple[str, str]] = [(c, "by") for c in request.by]
    used += [(m.column, "keep") for m in request.keep]
    if request.sample is not None:
        used.append((request.sample.key, "privacy_unit"))
    for agg in request.aggregations:
        if agg.column is not None:
            used.append((agg.column, f"aggregation {agg.name!r}"))
        used += [(m.column, f"aggregation {agg.name!r} where") for m in agg.where]
    for column, role in used:
        if column not in schema:
            close = difflib.get_close_matches(column, list(schema), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise DataError(
                f"column {column!r} ({role}) not found; the table has columns "
                f"{list(schema)}{hint}"
            )
    for cond in request.keep:
        check_values(schema, cond, "domain")
    for agg in request.aggregations:
        for cond in agg.where:
            check_values(schema, cond, f"aggregation {agg.name!r} where")
    for agg in request.aggregations:
        if agg.column is not None and schema[agg.column] is not ColumnKind.NUMERIC:
            raise DataError(
                f"column {agg.column!r} must be numeric for aggregation {agg.name!r}, but it is "
                f"{schema[agg.column].value}"
            )


_VALUE_TYPES: dict[ColumnKind, tuple[type, ...]] = {
    ColumnKind.NUMERIC: (int, float, np.integer, np.floating),
    ColumnKind.STRING: (str,),
    ColumnKind.BOOLEAN: (bool, np.bool_),
}


def check_values(schema: Mapping[str, ColumnKind], cond: Membership, role: str) -> None:
    """Raise :class:`DataError` if a value of ``cond`` cannot be compared with its column
    (a string for a numeric column, a number for a string column...; ``None`` always fits)."""
    kind = schema[cond.column]
    types = _VALUE_TYPES.get(kind)
    if types is None:
        return
    for v in cond.values:
        bad_bool = kind is ColumnKind.NUMERIC and isinstance(v, bool | np.bool_)
        if v is not None and (bad_bool or not isinstance(v, types)):
            raise DataError(
                f"{role} value {v!r} ({type(v).__name__}) does not fit column "
                f"{cond.column!r}, which is {kind.value}"
            )
