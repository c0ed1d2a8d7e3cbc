"""Private variance and standard deviation of a clamped column, from three noisy sums.

With the column clamped to [L, U], c = (L + U)/2 and h = (U − L)/2, each row with a value
contributes d = x − c ∈ [−h, h], d² ∈ [0, h²] and 1. The release is one Gaussian on the
vector (Σd, Σd², n) — a :class:`~approxdp.releases.specs.LinearQueries` of three global sums
on two derived columns (:meth:`~approxdp.engines.base.Engine.with_centred_powers`) — and
the variance

    var = Σd²/n − (Σd/n)²     (the population variance, ddof = 0)

is post-processing, clamped to [0, h²] (no variance of values in [L, U] exceeds h²:
Popoviciu's inequality).

Sensitivity. Scaled by h, h² and 1, a row's contribution is (u, u², 1) with u = d/h ∈ [−1, 1].
A unit adds at most m rows (``max_rows_per_partition``), so under add/remove each scaled
coordinate moves by at most m and Δ2 = m√3 (the vector rule of Wu's notes, §2.2, which
:func:`~approxdp.releases.sensitivity.query_sensitivity` derives; the bound is attained at
|u| = 1). Under replace-one the count does not move and the two sums move by at most 2m and
m: Δ2 = m√5 (the same rule; exactly, max (u − v)² + (u² − v²)² = 4 at u = −v = 1, so this
is conservative by √5/2). The three sums are noised jointly, so the release costs one exact
:class:`~approxdp.events.GaussianEvent` (Zhao et al. 2019, Lemma 15) and composes with
every other release. Estimating a variance from noisy sums of the first two moments is the
standard approach (compared with others by Du et al. 2020).

Interval: each noisy sum's interval at level 1 − α/3 (the box of the three holds with
probability ≥ 1 − α, a union bound); the variance's extremes over the box are
max(ΣD²_lo, 0)/n_hi − (max|ΣD|/n_lo)² and ΣD²_hi/n_lo − (min|ΣD|/n_hi)², clamped to [0, h²];
if the box reaches n ≤ 0 the interval is the whole [0, h²]. The standard deviation's interval
is the square root of the variance's.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval
from approxdp.engines.base import CentredPowers
from approxdp.errors import InvalidParameterError, ParameterTypeError
from approxdp.releases.derived import TableRelease, release_derived
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import LinearQueries, LinearQuery, check_bounds

__all__ = ["release_variance", "variance_from_sums"]

FloatArray = npt.NDArray[np.float64]


def variance_from_sums(
    sums: FloatArray, stds: FloatArray, lows: FloatArray, highs: FloatArray, half: float,
) -> tuple[float, float, float, float]:
    """(variance, its std by the delta method, interval low, interval high) from the noisy
    (Σd, Σd², n) with their standard deviations and box intervals (see the module docstring).
    Pure post-processing."""
    top = half * half
    a, b, n = (float(v) for v in sums)
    if n <= 0:
        return top / 2.0, top / 2.0, 0.0, top
    value = min(max(b / n - (a / n) ** 2, 0.0), top)
    grads = np.array([-2.0 * a / n**2, 1.0 / n, -b / n**2 + 2.0 * a * a / n**3])
    std = min(float(np.sqrt(np.sum((grads * stds) ** 2))), top / 2.0)
    a_lo, b_lo, n_lo = (float(v) for v in lows)
    a_hi, b_hi, n_hi = (float(v) for v in highs)
    if n_lo <= 0:
        return value, std, 0.0, top
    a_max = max(abs(a_lo), abs(a_hi))
    a_min = 0.0 if a_lo <= 0.0 <= a_hi else min(abs(a_lo), abs(a_hi))
    lo = max(b_lo, 0.0) / n_hi - (a_max / n_lo) ** 2
    hi = b_hi / n_lo - (a_min / n_hi) ** 2
    lo, hi = min(max(lo, 0.0), top), min(max(hi, 0.0), top)
    return value, std, min(lo, value), max(hi, value)


def release_variance(
    ctx: TableRelease[Any],
    *,
    column: str,
    bounds: tuple[float, float],
    epsilon: float,
    delta: float,
    level: float = 0.95,
    kind: Literal["variance", "std"] = "variance",
) -> ReleaseResult:
    """The variance (or standard deviation) of ``column`` clamped to ``bounds`` (one spend).

    Raises:
        DataError: Missing or non-numeric column, no value. Nothing is spent.
        InvalidParameterError: Bounds not finite with low < high (or so wide that h²
            overflows), (ε, δ) or level out of range. Nothing is spent.
    """
    if not isinstance(column, str) or not column:
        raise ParameterTypeError(f"column must be a column name, got {column!r}")
    low, high = check_bounds("bounds", bounds)
    half = high / 2 - low / 2
    if not low < high or not math.isfinite(half * half):
        raise InvalidParameterError(
            f"bounds must satisfy low < high with ((high − low)/2)² finite for a variance, got "
            f"bounds=({low:g}, {high:g})"
        )
    check_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    name = f"{kind}({column})"
    taken = {c.lower() for c in ctx.numeric_schema(column, name)}
    d_name = f"{column.lstrip('_') or 'value'}_centred"
    while d_name.lower() in taken:
        d_name += "_"
    sq_name = d_name + "_squared"
    while sq_name.lower() in taken:
        sq_name += "_"
    powers = CentredPowers(column, low, high, low / 2 + high / 2, d_name, sq_name)
    measures = (LinearQuery(d_name, (-half, half)), LinearQuery(sq_name, (0.0, half * half)),
                LinearQuery())
    _, (sums,) = release_derived(
        ctx, [LinearQueries(measures, name=name)], epsilon=epsilon, delta=delta,
        derive=lambda table: ctx.engine.with_centred_powers(table, powers), name=name,
        column=column, level=1.0 - (1.0 - level) / 3.0,
    )
    values = np.asarray(sums.values, dtype=np.float64)
    value, std, lo, hi = variance_from_sums(
        values, np.asarray(sums.std, dtype=np.float64), np.asarray(sums.ci_low, np.float64),
        np.asarray(sums.ci_high, np.float64), half)
    notes = list(sums.notes)
    if kind == "std":
        value, lo, hi = math.sqrt(value), math.sqrt(lo), math.sqrt(hi)
        std = min(std / (2.0 * value), half / 2.0) if value > 0 else half / 2.0
    notes += [
        f"{kind} of {column!r} clamped to [{low:g}, {high:g}] over non-missing values "
        "(population, ddof = 0) from one Gaussian on (Σd, Σd², n), d = x − midpoint",
        "interval: the box of the three sums' intervals at level 1 − α/3 (conservative)",
    ]
    return ReleaseResult(
        label=name, kind=kind, columns=(), keys=[()], values=np.array([value]),
        std=np.array([std]), ci_low=np.array([lo]), ci_high=np.array([hi]), level=level,
        mechanism=sums.mechanism, method=sums.method, sigma=sums.sigma,
        sensitivity=sums.sensitivity, effective_sensitivity=sums.effective_sensitivity,
        epsilon=sums.epsilon, delta=sums.delta, threshold=None,
        diagnostics=sums.diagnostics, receipts=sums.receipts,
        comparisons=sums.comparisons,
        extra={"sum_centred": values[:1], "sum_squares_centred": values[1:2],
               "count": values[2:]},
        notes=tuple(notes), secure=sums.secure,
    )
