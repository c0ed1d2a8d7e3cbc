"""The engine protocol: a few collection primitives over a table, knowing nothing about privacy.

Releases (``approxdp.releases``) are written once against :class:`Engine`; each engine
(:mod:`~approxdp.engines.duckdb`, :mod:`~approxdp.engines.spark`) implements every primitive
over its own table handle, and one conformance test suite
(``tests/engines/test_conformance.py``) runs against each. The model is PipelineDP's
``PipelineBackend``, but coarser: SQL engines plan a whole bounded aggregation best as one
query, so the central primitive, :meth:`Engine.aggregate`, takes a declarative
:class:`AggregateRequest` (filter → clamp → per-key sampling → group → count/sum) instead of a
chain of maps. None of these objects mentions ε, δ, noise or sensitivity: clamping bounds,
sampling caps and the hashing key are plain data-processing arguments.

The requests and results are in :mod:`approxdp.engines.shapes` (with the data's shape after
each step), the checks every engine runs alike in :mod:`approxdp.engines.checks`, derived
columns in :mod:`approxdp.engines.derivation`. Row transformations (:meth:`Engine.filter_rows`,
:meth:`Engine.with_expression`, :meth:`Engine.join_lookup`) return a new handle over
transformed rows; their predicates and expressions are checked trees of
:mod:`approxdp.engines.expressions`, which each engine writes out in its own dialect, never
text a caller wrote. :meth:`Engine.map_cells` is the one primitive whose output may be too
large for the caller's process: it spreads an aggregate over every cell of a grid and maps it,
batch by batch, where the data lives (an aggregate computed beforehand by
:meth:`Engine.aggregate_cells` and held there, so a caller can check and pay for it before
anything is mapped). An engine turns every error of its library into
approxdp's (:func:`engine_error`), so nothing above it imports DuckDB or Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from approxdp.engines.shapes import (
    AggregateRequest,
    AggregateResult,
    CellAggregate,
    CellMapRequest,
    CellMapResult,
    ColumnKind,
    KeyValue,
    Membership,
)
from approxdp.errors import DataCheckError

if TYPE_CHECKING:
    from approxdp.engines.derivation import Derivation
    from approxdp.engines.expressions import RowExpression, ValueType
    from approxdp.engines.transforms import JoinHow

__all__ = ["RESERVED_PREFIX", "Engine", "TableT", "engine_error", "is_glob"]

#: An engine's own table handle (:class:`~approxdp.engines.duckdb.DuckDBTable`,
#: :class:`~approxdp.engines.spark.SparkTable`): made by its :meth:`Engine.load`, only ever
#: handed back to the same engine.
TableT = TypeVar("TableT")


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

    def derive(self, table: TableT, derivation: Derivation) -> TableT:
        """``table`` without the rows whose ``derivation.column`` is NULL or NaN, with the
        columns of ``derivation`` added (see :class:`~approxdp.engines.derivation.Derivation`);
        the other columns unchanged."""
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


def engine_error(what: str, exc: BaseException) -> DataCheckError:
    """The :class:`~approxdp.errors.DataCheckError` an engine raises for its library's error
    ``exc`` about ``what`` (the first line of the library's message: every engine error is
    translated where it happens, and no front end imports an engine library). The library's
    message may quote the data (a line, a value), so it is labelled exact; its advice says
    what to check without it."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return DataCheckError(
        f"cannot read {what}: {first}",
        advice=f"cannot read {what}: check its format, encoding and values",
    )


def is_glob(path: str) -> bool:
    """Whether a path is a pattern (``data/*/*.parquet``) that the engines expand."""
    return any(ch in path for ch in "*?[")
