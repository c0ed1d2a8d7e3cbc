"""What the engine primitives take and return, none of it about privacy: key values and
column kinds, the requests of :meth:`Engine.aggregate <approxdp.engines.base.Engine.aggregate>`
and :meth:`Engine.map_cells <approxdp.engines.base.Engine.map_cells>` and their results.

Data shapes, step by step, of an aggregate request::

    rows                                   # (key..., unit, value...)
    → keep rows matching ``keep``          # rows whose group keys are in the allowed sets
    → per-key limit (``sample``)           # ≤ max_groups groups/key, ≤ max_rows rows' worth each
    → clamp values                         # value ↦ min(max(value, low), high)
    → group by ``by``                      # (key..., count/sum per aggregation, __rows)

and of a cell-map request::

    aggregate                              # (key..., aggregation...), non-empty groups only
    → left-join onto grid                  # (__cell, key..., aggregation... (0 if empty))
    → function per batch                   # (key..., output...)  materialised once
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from approxdp.errors import InvalidParameterError, ParameterTypeError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "AggregateRequest",
    "AggregateResult",
    "Aggregation",
    "CellAggregate",
    "CellBatchMapper",
    "CellMapRequest",
    "CellMapResult",
    "ColumnKind",
    "KeyValue",
    "Membership",
    "PerKeyLimit",
    "aggregate_result",
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

    Groups: each key keeps the ``max_groups`` groups with the smallest ``rank(seed, group, key)``
    (``seed`` a 63-bit integer; the rank is the engine-independent keyed hash of
    :mod:`approxdp.engines.keyed_hash`), so which groups survive depends only on the key's own
    groups and the seed, not on row order, input format or engine. Rows: if a key has
    n > ``max_rows`` rows in a kept group, its counts there become ``max_rows`` and its sums
    are scaled by ``max_rows / n`` — exactly what keeping ``max_rows`` of its rows at random
    gives in expectation, and never more than ``max_rows`` rows' worth of any aggregate.
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

    keys: Mapping[str, npt.NDArray[np.object_]]
    values: Mapping[str, npt.NDArray[np.float64]]
    rows_used: int
    group_rows: npt.NDArray[np.int64] = field(repr=False)



@dataclass(frozen=True)
class CellMapRequest:
    """Aggregate, spread the result over every cell of a grid, and map it in batches.

    The grid is the cross product of ``grid``'s value lists (one per ``aggregate.by`` column,
    same order); cell ``i`` is the row-major position ``Σ_c pos_c · Π_{c' > c} |values_c'|``.
    ``function`` receives each batch as a ``pyarrow.RecordBatch`` with column ``__cell``
    (int64) and one float64 column per aggregation (0.0 for cells no row reached), and returns
    a ``pyarrow.RecordBatch`` of the same length with exactly the float64 columns ``outputs``.
    It must be picklable (engines may run it in other processes or on other machines) and
    vectorised. The aggregates themselves never appear in the result: only the grid's key
    columns and ``outputs``. The engine applies ``function`` exactly once per cell and
    materialises the result (at ``path`` as Parquet if given), so reading it later never runs
    ``function`` again.
    """

    aggregate: AggregateRequest
    grid: tuple[tuple[str, tuple[KeyValue, ...]], ...]
    function: Callable[[pa.RecordBatch], pa.RecordBatch]
    outputs: tuple[str, ...]
    path: str | None = None

    def __post_init__(self) -> None:
        grid = tuple((str(c), tuple(v)) for c, v in self.grid)
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if tuple(c for c, _ in grid) != self.aggregate.by or not grid:
            raise InvalidParameterError(
                "CellMapRequest.grid must list values for exactly the aggregate's by columns "
                f"{list(self.aggregate.by)}, in order; got {[c for c, _ in grid]}"
            )
        if any(not values for _, values in grid):
            raise InvalidParameterError("CellMapRequest.grid needs at least one value per column")
        if not callable(self.function):
            raise ParameterTypeError("CellMapRequest.function must be callable")
        clash = set(self.outputs) & set(self.aggregate.by)
        if not self.outputs or clash or len(set(self.outputs)) != len(self.outputs):
            raise InvalidParameterError(
                "CellMapRequest.outputs must be distinct names, not grid columns; got "
                f"{list(self.outputs)}"
            )

    @property
    def n_cells(self) -> int:
        """Number of cells of the grid."""
        return math.prod(len(values) for _, values in self.grid)


@dataclass
class CellAggregate:
    """The aggregate of a large grid, computed by :meth:`Engine.aggregate_cells` and held by
    the engine (an Arrow table in this process for DuckDB, a persisted DataFrame on Spark's
    executors) until :meth:`Engine.map_cells` spreads it over the grid or :meth:`close` lets
    it go.

    ``handle`` is the engine's own; ``request`` the aggregation it ran; ``rows_used`` counts
    the rows that reached it.
    """

    handle: object
    request: AggregateRequest
    rows_used: int
    on_close: Callable[[], None] | None = field(default=None, repr=False)

    def close(self) -> None:
        """Let the engine free what it holds (idempotent)."""
        if self.on_close is not None:
            done, self.on_close = self.on_close, None
            done()


@dataclass(frozen=True)
class CellMapResult:
    """The materialised output of :meth:`Engine.map_cells`.

    ``table`` is the engine's own handle on it (a Spark DataFrame, a DuckDB relation) with the
    grid's key columns and the request's outputs, one row per cell, in no particular order;
    ``path`` is where it was written (None if the engine holds it); ``rows_used`` counts the
    rows that reached the aggregation.
    """

    table: object
    path: str | None
    n_cells: int
    rows_used: int

    def to_arrow(self) -> pa.Table:
        """Collect the whole result into this process as a ``pyarrow.Table`` (it may be big)."""
        for method in ("toArrow", "to_arrow_table", "fetch_arrow_table", "arrow"):
            fetch = getattr(self.table, method, None)
            if fetch is not None:
                return fetch()
        raise ParameterTypeError(  # pragma: no cover - every engine's handle has one
            f"cannot fetch a {type(self.table).__name__} as Arrow"
        )


def aggregate_result(table: pa.Table, request: AggregateRequest) -> AggregateResult:
    """The :class:`AggregateResult` of an Arrow table with the columns ``by...``, one per
    aggregation and ``__rows``, in the order the engine returned them (sorted, NULL last)."""
    keys = {c: np.asarray(table.column(c).to_pylist(), dtype=object) for c in request.by}
    values = {
        a.name: np.asarray(table.column(a.name).to_numpy(zero_copy_only=False), dtype=float)
        for a in request.aggregations
    }
    group_rows = np.asarray(table.column("__rows").to_numpy(zero_copy_only=False),
                            dtype=np.int64)
    return AggregateResult(keys, values, int(group_rows.sum()), group_rows)


@dataclass(frozen=True)
class CellBatchMapper:
    """What an engine runs per batch of joined cells (picklable, small: no grid values).

    Input batches have the grid's key columns, ``__cell`` and the aggregations; the output has
    the key columns and ``function``'s float64 outputs, and never the aggregations.
    """

    function: Callable[[pa.RecordBatch], pa.RecordBatch]
    keys: tuple[str, ...]
    names: tuple[str, ...]
    outputs: tuple[str, ...]

    @classmethod
    def of(cls, request: CellMapRequest) -> CellBatchMapper:
        """The mapper of ``request``."""
        names = tuple(a.name for a in request.aggregate.aggregations)
        return cls(request.function, request.aggregate.by, names, request.outputs)

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Map one ``pyarrow.RecordBatch``."""
        import pyarrow as pa

        inputs = pa.RecordBatch.from_arrays(
            [batch.column("__cell"), *(batch.column(a) for a in self.names)],
            names=["__cell", *self.names],
        )
        out = self.function(inputs)
        if out.num_rows != batch.num_rows or list(out.schema.names) != list(self.outputs):
            raise InvalidParameterError(
                f"the cell function returned columns {list(out.schema.names)} with "
                f"{out.num_rows} rows; expected {list(self.outputs)} with {batch.num_rows} rows"
            )
        cols = [batch.column(k) for k in self.keys]
        cols += [out.column(o).cast(pa.float64()) for o in self.outputs]
        return pa.RecordBatch.from_arrays(cols, names=[*self.keys, *self.outputs])

    def map_batches(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Map an iterator of batches (the shape Spark's ``mapInArrow`` calls)."""
        for batch in batches:
            yield self(batch)
