"""Private releases on tabular data: count, sum, mean, histogram, batches of linear queries,
quantiles and the median, variance and standard deviation, and private bounds.

The entry point is :class:`PrivateTable`: a table (CSV/Parquet path, pandas or Polars
DataFrame, PyArrow table or DuckDB relation) with the accountant that pays for its releases::

    from approxdp import Histogram, Mean, PrivateTable

    t = PrivateTable("people.parquet", budget=(1.0, 1e-6), privacy_unit="person_id",
                     max_partitions=2, max_rows_per_partition=5)
    mean_age = t.mean("age", (0, 100), epsilon=0.2, delta=2e-7)
    by_region, mean_by_sex = t.release(
        [Histogram(("region",)), Mean("income", (0, 1e6), ("sex",), {"sex": ["F", "M"]})],
        epsilon=0.5, delta=5e-7)
    print(mean_age.explain())

The kinds of release, with what each takes and how it is computed, are the registry
:data:`RELEASE_KINDS` (:mod:`~approxdp.releases.kinds`), which every front end reads.

The flow, plan → allocate → execute: query specs (:mod:`~approxdp.releases.specs`; the
statistics computed from derived columns, :class:`Quantiles`, :class:`Median`,
:class:`Variance`, :class:`Std` and :class:`PrivateBounds`, are specs too) form an
immutable :class:`ReleasePlan`; :func:`allocate` splits a budget across it (all Gaussian parts
calibrated jointly, Zhao et al. Lemma 15; partition-selection thresholds from
:mod:`~approxdp.releases.selection`);
:func:`execute` runs it on an engine (:mod:`approxdp.engines`): clamping, contribution bounding
and aggregation run inside the engine, every data check runs before the accountant is charged,
and only then is noise added to the small aggregates. Each query returns a
:class:`ReleaseResult` (values, σ, intervals, sensitivity and its derivation, cost,
``.explain()``).

Missing values: a NULL or NaN in the column of a :class:`Sum` or :class:`Mean` contributes
nothing (a mean is over the rows where the value is present; ±inf are clamped to the
bounds); in a grouping column, NULL and NaN are values like any other (a cell of their own,
which a declared domain must list to release it). A failed release — missing or misspelled
column, non-numeric data, bad bounds or domain, empty table, budget too small — raises a
typed error from :mod:`approxdp.errors` and spends nothing. No released number is NaN: a
mean whose noisy count is ≤ 0 is the midpoint of its bounds, reported with σ = (U − L)/2.

This package imports no engine: ``duckdb`` is loaded when a :class:`PrivateTable` is built.
"""

from __future__ import annotations

from approxdp.releases.bounds import PrivateBounds
from approxdp.releases.derived import DerivedQuery
from approxdp.releases.execute import execute
from approxdp.releases.kinds import RELEASE_KINDS, KindInputs, ReleaseKind
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery, ReleasePlan, allocate
from approxdp.releases.quantiles import Median, Quantiles
from approxdp.releases.result import (
    COMPARED_METHODS,
    MethodComparison,
    ReleaseResult,
    compare_methods,
)
from approxdp.releases.sensitivity import Sensitivity, query_sensitivity
from approxdp.releases.session import ColumnOptions, PrivateTable
from approxdp.releases.specs import (
    ColumnQuery,
    ContributionBounds,
    Count,
    Histogram,
    LinearQueries,
    LinearQuery,
    Mean,
    Measure,
    Query,
    Sum,
)
from approxdp.releases.variance import Std, Variance

__all__ = [
    "COMPARED_METHODS",
    "RELEASE_KINDS",
    "AllocatedPlan",
    "AllocatedQuery",
    "ColumnOptions",
    "ColumnQuery",
    "ContributionBounds",
    "Count",
    "DerivedQuery",
    "Histogram",
    "KindInputs",
    "LinearQueries",
    "LinearQuery",
    "Mean",
    "Measure",
    "Median",
    "MethodComparison",
    "PrivateBounds",
    "PrivateTable",
    "Quantiles",
    "Query",
    "ReleaseKind",
    "ReleasePlan",
    "ReleaseResult",
    "Sensitivity",
    "Std",
    "Sum",
    "Variance",
    "allocate",
    "compare_methods",
    "execute",
    "query_sensitivity",
]
