"""Sensitivities of a query, derived from the clamping bounds, contribution caps and the
neighbouring relation (Zhao et al. 2019, Remark 1, https://arxiv.org/abs/1911.12060; vector
queries: Wu's notes, §2.2) — never from the data.

A query releases, per cell, a vector of measures y_j; measure j is divided by its scale s_j
(1 for counts, max |bound − centre| for sums) so that all coordinates are noised alike. One
unit contributes to at most k cells (k = max_partitions; 1 for a global query) and, in each,
an amount of measure j in a range [a_j, b_j] fixed by m = max_rows_per_partition and the
bounds:

- count(*):                 [1, m] globally (a present unit has a row), [0, m] per cell and
                            globally after a filter (a unit's rows may all be filtered out);
- count of values/filtered: [0, m];
- clamped sum of x − c:     [min(0, m(L − c)), max(0, m(U − c))].

With M_j = max(|a_j|, |b_j|)/s_j and W_j the scaled width of the range:

- add/remove:  Δ2 = √(k Σ_j M_j²),   Δ1 = k Σ_j M_j  (the unit's whole contribution);
- replace-one, global: Δ2 = √(Σ_j W_j²), Δ1 = Σ_j W_j (one contribution swapped for another);
- replace-one, grouped: up to 2k cells change, so
  Δ2 = min(√(2k Σ_j W_j²), 2√(k Σ_j M_j²))  (the second from ‖b − a‖² ≤ 2‖a‖² + 2‖b‖²),
  Δ1 = 2k Σ_j M_j.

For k counts with m = 1 this is Wu's notes, §2.2's Δ1 = k, Δ2 = √k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from approxdp.releases.specs import ContributionBounds, Measure, Neighbouring, Query

__all__ = ["Sensitivity", "contribution_range", "query_sensitivity"]


@dataclass(frozen=True, slots=True)
class Sensitivity:
    """ℓ2/ℓ1/ℓ∞ sensitivity of a query's scaled vector, with a human-readable derivation."""

    l2: float
    l1: float
    linf: float
    derivation: str


def contribution_range(
    measure: Measure, m: int, grouped: bool, filtered: bool = False
) -> tuple[float, float]:
    """Range [a, b] of one unit's (unscaled) contribution of ``measure`` to one cell
    (``filtered``: rows may have been dropped before bounding, so a unit may have none)."""
    if measure.kind == "count":
        low = 1.0 if (measure.counts_every_row and not grouped and not filtered) else 0.0
        return low, float(m)
    lo, hi = measure.bounds
    c = measure.centre
    return min(0.0, m * (lo - c)), max(0.0, m * (hi - c))


def _scaled_range(
    measure: Measure, m: int, grouped: bool, filtered: bool
) -> tuple[float, float]:
    """:func:`contribution_range` divided by the measure's scale, dividing first: a unit's
    range m(L − c) can overflow for bounds near ±1.8e308, its scaled range is within [−m, m]."""
    if measure.kind == "count":
        return contribution_range(measure, m, grouped, filtered)
    lo, hi = measure.bounds
    c, s = measure.centre, measure.scale
    return min(0.0, m * ((lo - c) / s)), max(0.0, m * ((hi - c) / s))


def query_sensitivity(
    query: Query, neighbouring: Neighbouring, bounds: ContributionBounds
) -> Sensitivity:
    """The sensitivity of ``query``'s scaled per-cell vectors (see the module docstring)."""
    grouped = bool(query.by)
    k = bounds.max_partitions if grouped else 1
    m = bounds.max_rows_per_partition
    mags, widths, parts = [], [], []
    for meas in query.measures():
        a, b = contribution_range(meas, m, grouped, bounds.filtered)
        s = meas.scale
        a_s, b_s = _scaled_range(meas, m, grouped, bounds.filtered)  # without overflow
        mags.append(max(abs(a_s), abs(b_s)))
        widths.append(b_s - a_s)
        what = meas.kind if meas.column is None else f"{meas.kind}({meas.column})"
        parts.append(f"{what} ∈ [{a:g}, {b:g}] / {s:g}")
    unit = "row" if bounds.privacy_unit is None else f"unit ({bounds.privacy_unit!r})"
    caps = f"k={k} cell(s), m={m} row(s) per cell"
    if bounds.filtered:
        caps += " (rows filtered before bounding: a unit may have none)"
    if neighbouring == "add-remove":
        l2 = math.sqrt(k * sum(x * x for x in mags))
        l1 = k * sum(mags)
        linf = max(mags)
        rule = "add/remove one " + unit + f": Δ2 = √(k Σ M²) = {l2:.6g}"
    elif not grouped:
        l2 = math.sqrt(sum(w * w for w in widths))
        l1 = sum(widths)
        linf = max(widths)
        rule = "replace one " + unit + f": Δ2 = √(Σ W²) = {l2:.6g}"
    else:
        l2 = min(
            math.sqrt(2 * k * sum(w * w for w in widths)),
            2 * math.sqrt(k * sum(x * x for x in mags)),
        )
        l1 = 2 * k * sum(mags)
        linf = max(widths)
        rule = "replace one " + unit + f": Δ2 = min(√(2k Σ W²), 2√(k Σ M²)) = {l2:.6g}"
    derivation = f"{caps}; per-cell contribution {'; '.join(parts)}; {rule}"
    return Sensitivity(l2, l1, linf, derivation)
