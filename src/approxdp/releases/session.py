"""The user-facing entry point: a table, an accountant, and one method per kind of release.

>>> import pyarrow as pa
>>> from approxdp.releases import PrivateTable
>>> t = PrivateTable(pa.table({"age": [30, 41, 52, 63]}), budget=(1.0, 1e-6), seed=7)
>>> r = t.count(epsilon=0.5, delta=5e-7)
>>> r.kind, r.mechanism
('count', 'gaussian')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypedDict, Unpack, cast

from approxdp.engines.shapes import KeyValue
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.releases.bounds import PrivateBounds
from approxdp.releases.kinds import KindInputs, ReleaseKind, describe, release_kind
from approxdp.releases.quantiles import Median, Quantiles, QuantileTree
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import (
    ColumnQuery,
    Count,
    Histogram,
    LinearQueries,
    LinearQuery,
    Mean,
    OutsideDomain,
    Query,
    Sum,
)
from approxdp.releases.table_steps import CAST_TYPES, TableSteps
from approxdp.releases.variance import Std, Variance

__all__ = ["BOUNDS_SHARE", "CAST_TYPES", "ColumnOptions", "PrivateTable"]

Domain = Mapping[str, Sequence[KeyValue]]
#: Clamping bounds (low, high), or ``"private"``: estimated first from a share of the budget.
ClampBounds = tuple[float, float] | Literal["private"]


class ColumnOptions(TypedDict, total=False):
    """Keyword options of :meth:`PrivateTable.sum` and :meth:`PrivateTable.mean`."""

    by: Sequence[str]
    domain: Domain | None
    outside_domain: OutsideDomain
    level: float
    bounds_share: float


#: Default share of (ε, δ) that ``bounds="private"`` spends on estimating the bounds.
BOUNDS_SHARE = 0.2


class PrivateTable(TableSteps):
    """A table to release statistics from, with the accountant that pays for them.

    :meth:`filter`, :meth:`with_column` and :meth:`join_public` return new tables over
    transformed rows that share this one's accountant (:mod:`approxdp.releases.transformations`).

    Args:
        data: CSV/Parquet path, pandas or Polars DataFrame, PyArrow table, DuckDB relation, or
            Spark DataFrame (runs on Spark; see ``docs/spark.md``).
        budget: Total (ε, δ) of a new :class:`~approxdp.accounting.PrivacyAccountant`; or pass
            ``accountant`` (shared across tables of the same people).
        accountant: An existing accountant (exclusive with ``budget``).
        neighbouring: ``"add-remove"`` (default) or ``"replace-one"`` (Zhao et al. Remark 1).
        privacy_unit: Column identifying whom to protect; ``None``: each row.
        max_partitions: Cells of a grouped query one unit may touch (k).
        max_rows_per_partition: Rows' worth one unit may add to one cell or global query (m).
        engine: ``"auto"`` (default: Spark for a Spark DataFrame, else DuckDB), ``"duckdb"``,
            ``"spark"`` (a path or in-memory table read with the active SparkSession, else a
            new local one) or an :class:`~approxdp.engines.Engine`.
        seed: Seed for reproducible noise and bounding (tests, demos). ``None`` (default):
            noise from the mechanisms' secure source and a secret random bounding key.
        method: Gaussian calibration (default ``"optimal"``: least σ that is (ε, δ)-DP).
        large_domain_cells: Declared domains with at least this many cells are noised where
            the data lives and stay there (result ``.table``; :mod:`approxdp.releases.dense`).
        output_dir: Where such releases are written as Parquet (on a cluster: storage every
            executor can write, e.g. ``s3://...``); ``None``: the engine keeps them (Spark:
            checkpointed on the executors; DuckDB: a temporary file).
        casts: Columns to convert before anything else, ``{"amount": "double"}``: every value
            that is not a number (``"n/a"``, ``""``, ``"oops"``) becomes a missing value, which
            sums and means skip. How many did, with examples, is in :attr:`cast_report` and in
            the ``diagnostics`` of every release (exact, not private — for the data holder).
            ``"double"`` is the only conversion.
        cast_errors: What a cast does with values that are not numbers: ``"drop"`` (the
            default) turns them into missing values, as above; ``"error"`` refuses the table
            (:class:`~approxdp.errors.DataError`, before anything is spent) when any value of
            a cast column is not a number — the message names the column, not how many.
        allow_seeded_ledger: With ``seed`` and an accountant whose ledger is a file
            (:attr:`PrivacyAccountant.persistent <approxdp.accounting.PrivacyAccountant.
            persistent>`), record the seeded releases' spends anyway, each marked "seeded, not
            private" in the ledger. Without it such a table is refused
            (:class:`~approxdp.errors.SeededLedgerError`): a seeded release is a reproducible
            simulation, and its spend would look like a real one.

        basic_share: With ``budget``: the share of it kept for events no Gaussian dominates
            — in a table, the (0, δ) of partition selection (a grouped release without a
            declared domain), which a privacy filter can admit after the first release only
            from such a share (guide: Adaptive analysts and privacy filters). ``"auto"``
            (default): (0, δ/5) of the budget (:data:`~approxdp.accounting.budget.accountant.
            AUTO_SHARE_DELTA`), fixed at the first release if that release fits with it
            (else none: a first release of the whole budget is not refused for it); it costs
            the Gaussian releases about 1 % of their noise. ``(ε, δ)``: that share, fixed
            now; None: none (the whole budget for Gaussian releases; partition selection only
            in the first release). With ``accountant``, its own share applies.
        rdp_share: With ``budget``: an (ε_R, δ_R) of it kept for a Rényi filter at orders
            fixed now (``rdp_orders``; :class:`~approxdp.accounting.PrivacyAccountant`'s
            ``rdp_share``). A table's own releases are Gaussian, which the Gaussian-DP room
            charges exactly, so the share pays off where the same accountant
            (:attr:`accountant`) also pays for many subsampled Gaussians spent one at a time
            (DP-SGD steps), at ε of about 2 or more; for a training run whose σ, q and T are
            fixed before it starts, committing it (``accountant.commit``) is tighter. None
            (default): no share.
        rdp_orders: With ``rdp_share``: its Rényi orders α > 1 (default
            :data:`~approxdp.accounting.budget.filter_rdp.DEFAULT_SHARE_ORDERS`).
        sub_budgets: With ``budget``: ``{"name": (ε_i, δ_i)}`` budgets of their own inside it,
            fixed now; :meth:`sub_budget` gives this table paying from one of them.

    Raises:
        SeededLedgerError: ``seed`` with a persistent ledger, without ``allow_seeded_ledger``.
        ParameterTypeError: ``basic_share``, ``rdp_share``, ``rdp_orders`` or ``sub_budgets``
            with ``accountant`` (its own settings apply: pass them to the accountant).
        InvalidParameterError: a bad ``rdp_share``, ``rdp_orders`` or ``sub_budgets`` (the
            message names it, its value and the allowed range).
    """
    # -- one query at a time ---------------------------------------------------------------
    def _one(self, query: Query, epsilon: float, delta: float, level: float) -> ReleaseResult:
        return self.release([query], epsilon=epsilon, delta=delta, level=level)[0]

    def count(self, *, epsilon: float, delta: float, level: float = 0.95) -> ReleaseResult:
        """Number of rows."""
        return self._one(Count(), epsilon, delta, level)

    def sum(self, column: str, bounds: tuple[float, float] | Literal["private"] | None = None,
            *, epsilon: float, delta: float, **options: Unpack[ColumnOptions]) -> ReleaseResult:
        """Sum of ``column`` clamped to ``bounds`` (NULL/NaN contribute nothing); ``None``:
        the bounds :meth:`with_column` declared for it.

        ``bounds="private"``: first estimate them with :meth:`estimate_bounds` from
        ``bounds_share`` of (ε, δ) (default 0.2), then release the sum with the rest — two
        spends (see :meth:`mean`).

        ``options``: ``by``, ``domain``, ``outside_domain`` (see :class:`Sum`), ``level`` and
        ``bounds_share``.
        """
        return self._column(Sum, column, bounds, epsilon, delta, options)

    def mean(self, column: str, bounds: tuple[float, float] | Literal["private"] | None = None,
             *, epsilon: float, delta: float, **options: Unpack[ColumnOptions]) -> ReleaseResult:
        """Mean of ``column`` clamped to ``bounds`` over non-missing values (``None``: the
        bounds :meth:`with_column` declared for it).

        ``bounds="private"``: the bounds are first estimated privately
        (:meth:`estimate_bounds`, the 1 % and 99 % quantiles) from ``bounds_share`` of
        (ε, δ) (default 0.2: ε·0.2 and δ·0.2), then the mean is released with the rest
        (ε·0.8, δ·0.8). That is two spends in the ledger, not one composed plan: the second
        release's bounds depend on the first one's noisy output, so the two cannot be
        calibrated jointly; by basic composition they add up to exactly (ε, δ). Every check
        of both (column, options, shares, budget arithmetic) runs before the first spend; the
        result's notes say how the budget was split and which bounds were used.

        ``options``: ``by``, ``domain``, ``outside_domain`` (see :class:`Mean`), ``level`` and
        ``bounds_share``.
        """
        return self._column(Mean, column, bounds, epsilon, delta, options)

    def _column(
        self, kind: type[ColumnQuery], column: str,
        bounds: tuple[float, float] | Literal["private"] | None, epsilon: float, delta: float,
        options: ColumnOptions,
    ) -> ReleaseResult:
        what = kind.__name__.lower()
        bounds = self._bounds_for(column, bounds, what)
        unknown = sorted(set(options) - set(ColumnOptions.__annotations__))
        if unknown:
            raise ParameterTypeError(
                f"{what}() got unknown option(s) {unknown}; allowed: "
                f"{sorted(ColumnOptions.__annotations__)}"
            )
        private = isinstance(bounds, str)
        if private and bounds != "private":
            raise InvalidParameterError(
                f"bounds must be (low, high) or 'private', got bounds={bounds!r}"
            )
        if "bounds_share" in options and not private:
            raise ParameterTypeError(
                f"{what}(): bounds_share applies only with bounds='private', got "
                f"bounds={bounds!r}"
            )

        def query(b: tuple[float, float]) -> ColumnQuery:
            return kind(column, b, tuple(options.get("by", ())), options.get("domain"),
                        options.get("outside_domain", "error"), name=f"{what}({column})")

        level = options.get("level", 0.95)
        if not isinstance(bounds, str):
            return self._one(query(bounds), epsilon, delta, level)
        return self.release_private_bounds(query, column, epsilon=epsilon, delta=delta,
                                           level=level,
                                           bounds_share=options.get("bounds_share",
                                                                    BOUNDS_SHARE))

    def release_private_bounds(
        self, query: Callable[[tuple[float, float]], Query], column: str, *, epsilon: float,
        delta: float, level: float = 0.95, bounds_share: float = BOUNDS_SHARE,
    ) -> ReleaseResult:
        """Estimate the bounds of ``column`` from ``bounds_share`` of (ε, δ), then release
        ``query(bounds)`` with the rest: two spends (``bounds="private"`` of :meth:`mean`,
        :meth:`sum`, :meth:`quantiles`, :meth:`median`, :meth:`variance` and :meth:`std`).

        The second release's bounds depend on the first one's noisy output, so the two cannot
        be calibrated jointly; by basic composition they add up to exactly (ε, δ). Every
        check of both (column, query, shares, budget arithmetic) runs before the first spend;
        the result's notes say how the budget was split and which bounds were used.
        """
        from approxdp.releases.private_bounds import release_with_private_bounds

        return release_with_private_bounds(self, query, column, epsilon=epsilon, delta=delta,
                                           level=level, bounds_share=bounds_share)

    def estimate_bounds(
        self, column: str, *, epsilon: float, delta: float, tail: float = 0.01,
        floor: float = 1e-6, ceiling: float = 1e12,
    ) -> ReleaseResult:
        """Private clamping bounds for ``column``, so they are never read from the data.

        Spends (ε, δ) once on a noisy hierarchical histogram over the data-independent signed
        log range ±[``floor``, ``ceiling``] (:mod:`approxdp.releases.bounds`) and releases
        its ``tail`` and 1 − ``tail`` quantiles (default 1 % and 99 %), rounded outwards:
        ``result.values`` is ``[low, high]`` (keys ``("low",)``, ``("high",)``), ready for
        :meth:`mean`, :meth:`sum`, :meth:`quantiles` or :meth:`variance`.
        """
        return self._one(PrivateBounds(column, tail=tail, floor=floor, ceiling=ceiling,
                                name=f"bounds({column})"), epsilon, delta, 0.95)

    def histogram(
        self, columns: str | Sequence[str], *, epsilon: float, delta: float,
        domain: Domain | None = None, outside_domain: OutsideDomain = "error",
        level: float = 0.95,
    ) -> ReleaseResult:
        """Counts per combination of ``columns`` (declared domain, or partition selection)."""
        cols = (columns,) if isinstance(columns, str) else tuple(columns)
        q = Histogram(cols, domain, outside_domain, name=f"histogram({', '.join(cols)})")
        return self._one(q, epsilon, delta, level)

    def linear_queries(
        self, queries: Sequence[LinearQuery], *, epsilon: float, delta: float,
        level: float = 0.95,
    ) -> ReleaseResult:
        """k linear queries with one Gaussian calibrated to their joint ℓ2 sensitivity."""
        return self._one(LinearQueries(tuple(queries), name="linear queries"), epsilon, delta,
                         level)

    def quantiles(
        self, column: str, qs: Sequence[float], bounds: ClampBounds | None = None, *,
        epsilon: float, delta: float, level: float = 0.95, bins: int = 1024,
        branching: int = 32, bounds_share: float | None = None,
    ) -> ReleaseResult:
        """Quantiles ``qs`` of ``column`` clamped to ``bounds`` (one value per q, in order).

        A noisy hierarchical histogram of ``bins`` leaves and branching ``branching``
        (:class:`~approxdp.releases.quantiles.Quantiles`): one jointly calibrated Gaussian
        plan, one spend, every quantile read from the same tree. Units are bounded as for a
        histogram: each adds ≤ ``max_rows_per_partition`` rows to ≤ ``max_partitions`` nodes
        of each level. ``bounds="private"``: estimated first, as for :meth:`mean`.
        """
        QuantileTree(bins, branching)  # a bad shape is refused before private bounds spend
        return self._statistic(
            "quantiles",
            lambda b: Quantiles(column, cast(tuple[float, ...], qs), b, bins, branching,
                                name=f"quantiles({column})"),
            column, bounds, epsilon, delta, level, bounds_share)

    def median(
        self, column: str, bounds: ClampBounds | None = None, *, epsilon: float, delta: float,
        level: float = 0.95, bins: int = 1024, branching: int = 32,
        bounds_share: float | None = None,
    ) -> ReleaseResult:
        """The median of ``column`` clamped to ``bounds`` (:meth:`quantiles` at q = 0.5,
        :class:`~approxdp.releases.quantiles.Median`)."""
        QuantileTree(bins, branching)  # a bad shape is refused before private bounds spend
        return self._statistic(
            "median",
            lambda b: Median(column, (0.5,), b, bins, branching, name=f"median({column})"),
            column, bounds, epsilon, delta, level, bounds_share)

    def variance(
        self, column: str, bounds: ClampBounds | None = None, *, epsilon: float, delta: float,
        level: float = 0.95, bounds_share: float | None = None,
    ) -> ReleaseResult:
        """Population variance of ``column`` clamped to ``bounds`` over non-missing values:
        one Gaussian on (Σd, Σd², n) (:class:`~approxdp.releases.variance.Variance`), one
        spend (two with ``bounds="private"``, as for :meth:`mean`)."""
        return self._statistic("variance",
                               lambda b: Variance(column, b, name=f"variance({column})"),
                               column, bounds, epsilon, delta, level, bounds_share)

    def std(
        self, column: str, bounds: ClampBounds | None = None, *, epsilon: float, delta: float,
        level: float = 0.95, bounds_share: float | None = None,
    ) -> ReleaseResult:
        """Standard deviation of ``column`` clamped to ``bounds`` (√ of :meth:`variance`)."""
        return self._statistic("std", lambda b: Std(column, b, name=f"std({column})"),
                               column, bounds, epsilon, delta, level, bounds_share)

    def _statistic(
        self, what: str, query: Callable[[tuple[float, float]], Query], column: str,
        given: ClampBounds | None, epsilon: float, delta: float, level: float,
        bounds_share: float | None,
    ) -> ReleaseResult:
        """``query(bounds)`` released, or with ``bounds="private"`` estimated first (no
        bounds: those :meth:`with_column` declared for ``column``)."""
        bounds = self._bounds_for(column, given, what)
        if isinstance(bounds, str):
            if bounds != "private":
                raise InvalidParameterError(
                    f"bounds must be (low, high) or 'private', got bounds={bounds!r}"
                )
            return self.release_private_bounds(
                query, column, epsilon=epsilon, delta=delta, level=level,
                bounds_share=BOUNDS_SHARE if bounds_share is None else bounds_share)
        if bounds_share is not None:
            raise ParameterTypeError(
                f"bounds_share applies only with bounds='private', got bounds={bounds!r}"
            )
        return self._one(query(bounds), epsilon, delta, level)

    def release_kind(
        self, kind: str | ReleaseKind, inputs: KindInputs, *, epsilon: float, delta: float,
        level: float = 0.95, bounds_share: float | None = None,
    ) -> ReleaseResult:
        """One release of a kind of :data:`~approxdp.releases.kinds.RELEASE_KINDS` (by name)
        from the inputs a front end collected: what ``approxdp release`` and the browser
        wizard call. ``inputs.bounds == "private"``: the bounds are estimated first from
        ``bounds_share`` of (ε, δ) (default 0.2), as for :meth:`mean`.

        Raises:
            InvalidParameterError: an unknown kind, or inputs that do not fit it.
        """
        entry = release_kind(kind) if isinstance(kind, str) else kind
        if entry.bounds and inputs.bounds is None and len(inputs.columns) == 1:
            declared = self._declared.get(inputs.columns[0])  # with_column(..., bounds=)
            inputs = dataclasses.replace(inputs, bounds=declared)
        problem = entry.problem(inputs)
        if problem is not None:
            raise InvalidParameterError(describe(problem))
        if entry.tree:
            inputs.tree()  # checks bins/branching before private bounds spend anything
        if inputs.bounds is None:  # a kind without clamping bounds
            if bounds_share is not None:
                raise ParameterTypeError(f"{entry.name} takes no bounds_share (it has no "
                                         "bounds to estimate)")
            return self._one(entry.build(inputs), epsilon, delta, level)
        return self._statistic(entry.name,
                               lambda b: entry.build(dataclasses.replace(inputs, bounds=b)),
                               inputs.columns[0], inputs.bounds, epsilon, delta, level,
                               bounds_share)

