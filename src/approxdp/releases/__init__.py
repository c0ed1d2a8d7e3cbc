"""Private releases on tabular data: count, sum, mean, histogram and batches of linear queries.

The flow (STYLE point 9): build query specs (:mod:`~approxdp.releases.specs`) into an immutable
release plan, allocate a budget across it (all Gaussian parts calibrated jointly, paper
Lemma 15), then execute it on an engine (:mod:`approxdp.engines`): aggregation, clamping and
contribution bounding run inside the engine, the accountant is charged, and only then is noise
added to the small aggregates.

This first milestone exports the specs and sensitivities; the plan/execute/session modules
join the exports once the mechanisms and accountant they use are on main.
"""

from __future__ import annotations

from approxdp.releases.sensitivity import Sensitivity, query_sensitivity
from approxdp.releases.specs import (
    ContributionBounds,
    Count,
    Histogram,
    LinearQueries,
    LinearQuery,
    Mean,
    Query,
    Sum,
)

__all__ = [
    "ContributionBounds",
    "Count",
    "Histogram",
    "LinearQueries",
    "LinearQuery",
    "Mean",
    "Query",
    "Sensitivity",
    "Sum",
    "query_sensitivity",
]
