"""The engine protocol: a few collection primitives over a table, knowing nothing about privacy.

Releases (``approxdp.releases``) are written once against :class:`Engine`; each engine
(:mod:`~approxdp.engines.duckdb`, :mod:`~approxdp.engines.spark`) implements every primitive
over its own table handle, and one conformance test suite
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

Row transformations (:meth:`Engine.filter_rows`, :meth:`Engine.with_expression`,
:meth:`Engine.join_lookup`) return a new handle over transformed rows; their predicates and
expressions are checked trees of :mod:`approxdp.engines.expressions`, which each engine writes
out in its own dialect, never text a caller wrote.

:meth:`Engine.map_cells` is the one primitive whose output may be too large for the caller's
process: it spreads such an aggregate — computed beforehand by :meth:`Engine.aggregate_cells`
and held where the data lives, so a caller can check and pay for it before anything is mapped
— over every cell of a grid and maps it, batch by batch, where the data lives::

    aggregate                              # (key..., aggregation...), non-empty groups only
    → left-join onto grid                  # (__cell, key..., aggregation... (0 if empty))
    → function per batch                   # (key..., output...)  materialised once
"""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from approxdp.errors import DataError, InvalidParameterError, ParameterTypeError

if TYPE_CHECKING:
    import pyarrow as pa

    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.transforms import JoinHow

__all__ = [
    "LITERAL_TYPES",
    "RESERVED_PREFIX",
    "AggregateRequest",
    "AggregateResult",
    "Aggregation",
    "Binning",
    "CellAggregate",
    "CellBatchMapper",
    "CellMapRequest",
    "CellMapResult",
    "CentredPowers",
    "ColumnKind",
    "Engine",
    "Membership",
    "PerKeyLimit",
    "TableT",
    "aggregate_result",
    "check_column",
    "check_columns",
    "check_condition_column",
    "check_new_columns",
    "check_values",
    "is_glob",
]

#: A value that may appear in a key column (``None`` stands for SQL NULL).
KeyValue = str | int | float | bool | None

#: An engine's own table handle (:class:`~approxdp.engines.duckdb.DuckDBTable`,
#: :class:`~approxdp.engines.spark.SparkTable`): made by its :meth:`Engine.load`, only ever
#: handed back to the same engine.
TableT = TypeVar("TableT")


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
class Binning:
    """Integer bin columns of a numeric ``column`` (for :meth:`Engine.with_bins`).

    Each row's leaf is ``min(floor((min(max(x, low), high) - low) / width), n_bins - 1)`` with
    ``width = (high - low) / n_bins`` (computed once, here, so every engine divides by the same
    float64), and each output ``(name, divisor)`` is the column ``floor(leaf / divisor)``.
    Rows whose value is NULL or NaN are dropped; ±inf are clamped like any other value.

    With ``log_floor`` = f > 0 the leaves are cut on the signed log scale instead: ``x`` is
    first replaced by ``sign(x) · max(log10(max(|x|, f)) − log10(f), 0)`` (|x| ≤ f maps to
    0; ``log10(f)`` computed here once), so ``low``/``high`` are in decades above f.
    """

    column: str
    low: float
    high: float
    n_bins: int
    outputs: tuple[tuple[str, int], ...]
    log_floor: float = 0.0

    def __post_init__(self) -> None:
        _check_name(self.column, "Binning.column")
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high
                and math.isfinite(self.high - self.low)):
            raise InvalidParameterError(
                f"Binning needs finite low < high with a finite width, got low={self.low}, "
                f"high={self.high}"
            )
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, int) or not (
            1 <= self.n_bins <= 2**20
        ):
            raise InvalidParameterError(
                f"Binning.n_bins must be an integer in [1, 2**20], got {self.n_bins!r}"
            )
        outputs = tuple((_check_name(n, "Binning output"), int(d)) for n, d in self.outputs)
        if not outputs or any(d < 1 for _, d in outputs) or len({n for n, _ in outputs}) != len(
            outputs
        ):
            raise InvalidParameterError(
                f"Binning.outputs must be distinct (name, divisor >= 1) pairs, got {outputs}"
            )
        object.__setattr__(self, "outputs", outputs)
        if not (math.isfinite(self.log_floor) and self.log_floor >= 0.0):
            raise InvalidParameterError(
                f"Binning.log_floor must be finite and >= 0, got {self.log_floor!r}"
            )

    @property
    def log10_floor(self) -> float:
        """log10(log_floor), the offset of the signed log scale (0 when linear)."""
        return math.log10(self.log_floor) if self.log_floor > 0 else 0.0

    @property
    def width(self) -> float:
        """The leaves' width, (high − low) / n_bins."""
        return (self.high - self.low) / self.n_bins


@dataclass(frozen=True, slots=True)
class CentredPowers:
    """The centred clamped value of a numeric ``column`` and its square (for
    :meth:`Engine.with_centred_powers`): ``d = min(max(x, low), high) - centre`` as column
    ``value_name`` and ``d * d`` (a product, the same float64 on every engine) as
    ``square_name``. Rows whose value is NULL or NaN are dropped; ±inf are clamped."""

    column: str
    low: float
    high: float
    centre: float
    value_name: str
    square_name: str

    def __post_init__(self) -> None:
        for name in (self.column, self.value_name, self.square_name):
            _check_name(name, "CentredPowers column")
        if self.value_name == self.square_name:
            raise InvalidParameterError("CentredPowers needs two distinct output names")
        if not all(math.isfinite(v) for v in (self.low, self.high, self.centre)) or not (
            self.low <= self.high
        ):
            raise InvalidParameterError(
                f"CentredPowers needs finite low <= high and centre, got low={self.low}, "
                f"high={self.high}, centre={self.centre}"
            )


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

    @property
    def n_groups(self) -> int:
        """Number of groups in the result."""
        return int(self.group_rows.shape[0])


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


@runtime_checkable
class Engine(Protocol[TableT]):
    """Collection primitives every engine implements, over its own table handle ``TableT``.

    :meth:`load` makes the handle; every other primitive takes one made by the same engine
    (``Engine[DuckDBTable]``, ``Engine[SparkTable]``).
    """

    name: str

    def load(self, source: object) -> TableT:
        """Wrap ``source`` (a path or an in-memory table of a kind the engine accepts)."""
        ...

    def accepts(self, source: object) -> bool:
        """Whether :meth:`load` can take ``source``."""
        ...

    def schema(self, table: TableT) -> Mapping[str, ColumnKind]:
        """Column names, in order, with their kinds."""
        ...

    def count_rows(self, table: TableT) -> int:
        """Number of rows."""
        ...

    def count_outside(
        self, table: TableT, condition: Membership, limit: int = 3
    ) -> tuple[int, tuple[KeyValue, ...]]:
        """Rows NOT meeting ``condition``, and up to ``limit`` distinct offending values."""
        ...

    def count_unconvertible(
        self, table: TableT, column: str, limit: int = 3
    ) -> tuple[int, tuple[str, ...]]:
        """Rows whose ``column`` holds a value (not NULL) that does not convert to a number,
        and up to ``limit`` distinct such values as text (0 and () for a numeric column)."""
        ...

    def cast_to_double(self, table: TableT, column: str) -> TableT:
        """``table`` with ``column`` converted to float64, every value that does not convert
        (see :meth:`count_unconvertible`) becoming NULL; the other columns unchanged."""
        ...

    def with_bins(self, table: TableT, binning: Binning) -> TableT:
        """``table`` without the rows whose ``binning.column`` is NULL or NaN, with the int64
        columns ``binning.outputs`` added (see :class:`Binning`); the other columns unchanged."""
        ...

    def with_centred_powers(self, table: TableT, powers: CentredPowers) -> TableT:
        """``table`` without the rows whose ``powers.column`` is NULL or NaN, with the float64
        columns of ``powers`` added (see :class:`CentredPowers`); the others unchanged."""
        ...

    def column_types(self, table: TableT) -> Mapping[str, ValueType]:
        """Column names, in order, with their type in the row-expression language
        (:data:`~approxdp.engines.expressions.ValueType`: integer, float, string, boolean or
        other)."""
        ...

    def filter_rows(self, table: TableT, predicate: RowExpression) -> TableT:
        """``table`` without the rows where ``predicate`` is not true (false or NULL); the
        columns unchanged. ``predicate`` comes from
        :func:`~approxdp.engines.expressions.parse_expression` with ``role="predicate"``."""
        ...

    def with_expression(self, table: TableT, name: str, expression: RowExpression) -> TableT:
        """``table`` with the new column ``name`` = ``expression`` on each row (a name no
        column has, compared case-insensitively); the rows and other columns unchanged."""
        ...

    def join_lookup(
        self, table: TableT, lookup: TableT, on: Sequence[tuple[str, str]], how: JoinHow,
    ) -> TableT:
        """``table`` joined with the (small) ``lookup`` on ``on`` = ((table column, lookup
        column), ...) — equal, non-NULL keys match — with the lookup's other columns added:
        ``"inner"`` drops rows with no match, ``"left"`` keeps them with NULLs. A row matching
        k lookup rows appears k times (callers check :meth:`duplicate_keys` first).
        Checks: :func:`~approxdp.engines.transforms.check_join`."""
        ...

    def duplicate_keys(
        self, table: TableT, columns: Sequence[str], limit: int = 3
    ) -> tuple[int, tuple[tuple[KeyValue, ...], ...]]:
        """How many distinct non-NULL values of ``columns`` occur on more than one row, and up
        to ``limit`` of them (sorted)."""
        ...

    def aggregate(self, table: TableT, request: AggregateRequest) -> AggregateResult:
        """Run ``request`` on ``table`` (see the module docstring for the steps)."""
        ...

    def aggregate_cells(self, table: TableT, request: AggregateRequest) -> CellAggregate:
        """Run ``request`` and keep its result where the data lives, for :meth:`map_cells`
        (an aggregate with a group per non-empty cell; too many to collect, perhaps)."""
        ...

    def map_cells(
        self, table: TableT, request: CellMapRequest, aggregate: CellAggregate | None = None,
    ) -> CellMapResult:
        """Left-join ``aggregate`` (the result of :meth:`aggregate_cells` for
        ``request.aggregate``; computed here when None) onto the grid, map batches where the
        data lives; materialise. The aggregate is closed afterwards."""
        ...


#: Column names the engines use for their own columns start with this; data columns may not.
RESERVED_PREFIX = "__"


def check_columns(schema: Mapping[str, ColumnKind], request: AggregateRequest) -> None:
    """Raise :class:`DataError` naming any column the request uses that the table lacks, whose
    name is reserved (:data:`RESERVED_PREFIX`, or a group column named like one of the
    request's aggregations: an engine would bind the wrong column or return two of one name),
    or whose values or kind do not fit the request."""
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
    for column, role in used:
        if column.startswith(RESERVED_PREFIX):
            raise DataError(
                f"column {column!r} ({role}): names beginning with {RESERVED_PREFIX!r} are "
                "reserved for the engines' own columns; rename it (e.g. in a view)"
            )
    names = {a.name.lower() for a in request.aggregations}
    for column in request.by:
        if column.lower() in names:
            raise DataError(
                f"group column {column!r} has the name of one of the request's aggregations "
                f"{sorted(names)}; rename it"
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


def check_column(schema: Mapping[str, ColumnKind], column: str) -> ColumnKind:
    """The kind of ``column``, or :class:`DataError` naming the table's columns (and the
    closest name) when it has none such (the same check on every engine)."""
    if column not in schema:
        close = difflib.get_close_matches(column, list(schema), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise DataError(f"column {column!r} not found; the table has columns {list(schema)}"
                        f"{hint}")
    return schema[column]


def check_condition_column(schema: Mapping[str, ColumnKind], condition: Membership) -> None:
    """Raise :class:`DataError` if ``condition`` names a column the table lacks or lists values
    that cannot be compared with it (``count_outside``'s checks, the same on every engine)."""
    check_column(schema, condition.column)
    check_values(schema, condition, "domain")


def check_new_columns(schema: Mapping[str, ColumnKind], column: str, new: Sequence[str]) -> None:
    """Raise :class:`DataError` if ``column`` (read by a derived-column primitive such as
    :meth:`Engine.with_bins`) is missing or one of the ``new`` columns already exists."""
    check_column(schema, column)
    clash = [n for n in new if n in schema]
    if clash:
        raise DataError(f"derived column {clash[0]!r} already exists in the table")


def is_glob(path: str) -> bool:
    """Whether a path is a pattern (``data/*/*.parquet``) that the engines expand."""
    return any(ch in path for ch in "*?[")


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


_VALUE_TYPES: dict[ColumnKind, tuple[type, ...]] = {
    ColumnKind.NUMERIC: (int, float, np.integer, np.floating),
    ColumnKind.STRING: (str,),
    ColumnKind.BOOLEAN: (bool, np.bool_),
}


#: The types of the values every engine can write as a literal: what a key column's value must
#: be to equal a value of a condition or a declared domain (a date or a list never does).
LITERAL_TYPES = (str, int, float, bool, np.integer, np.floating, np.bool_)


def check_values(schema: Mapping[str, ColumnKind], cond: Membership, role: str) -> None:
    """Raise :class:`DataError` if a value of ``cond`` cannot be compared with its column
    (a string for a numeric column, a number for a string column...; ``None`` always fits),
    :class:`ParameterTypeError` if it is no literal at all (a date, a list...)."""
    kind = schema[cond.column]
    for v in cond.values:  # what every engine can write as a literal (dates and such cannot)
        if v is not None and not isinstance(v, LITERAL_TYPES):
            raise ParameterTypeError(
                f"{role} values must be str, int, float, bool or None, got "
                f"{type(v).__name__} {v!r} for column {cond.column!r}"
            )
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
