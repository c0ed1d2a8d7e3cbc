"""Private variance and standard deviation of a clamped column, from three noisy sums.

With the column clamped to [L, U], c = (L + U)/2 and h = (U − L)/2, each row with a value
contributes d = x − c ∈ [−h, h], d² ∈ [0, h²] and 1. The release is one Gaussian on the
vector (Σd, Σd², n) — a :class:`~approxdp.releases.specs.LinearQueries` of three global sums
on two derived columns (:meth:`~approxdp.engines.base.Engine.derive`) — and
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
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.engines import derivation as ex
from approxdp.engines.derivation import Derivation
from approxdp.errors import InvalidParameterError
from approxdp.releases.derived import DerivedQuery, fresh_names
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import LinearQueries, LinearQuery, Query, check_bounds

__all__ = ["Std", "Variance", "variance_from_sums"]

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


@dataclass(frozen=True, slots=True)
class Variance(DerivedQuery):
    """Population variance (ddof = 0) of ``column`` clamped to ``bounds`` over non-missing
    values: one Gaussian on (Σd, Σd², n) with d = x − midpoint (module docstring)."""

    bounds: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        super(Variance, self).__post_init__()
        low, high = check_bounds("bounds", self.bounds)
        half = high / 2 - low / 2
        if not low < high or not math.isfinite(half * half):
            raise InvalidParameterError(
                f"bounds must satisfy low < high with ((high − low)/2)² finite for a variance, "
                f"got bounds=({low:g}, {high:g})"
            )
        object.__setattr__(self, "bounds", (low, high))

    @property
    def half(self) -> float:
        """h = (U − L)/2, the largest |d|."""
        low, high = self.bounds
        return high / 2 - low / 2

    def derivation(self, taken: Collection[str] = ()) -> Derivation:
        """d = clamp(x) − midpoint and d·d."""
        low, high = self.bounds
        d_name = fresh_names([*taken, self.column], [f"{self.column.lstrip('_') or 'value'}"
                                                      "_centred"])[0]
        sq_name = fresh_names([*taken, self.column, d_name], [d_name + "_squared"])[0]
        d = ex.subtract(ex.clamp(ex.value(), low, high), ex.number(low / 2 + high / 2))
        return Derivation(self.column, ((d_name, d), (sq_name, ex.multiply(d, d))))

    def parts(self, derivation: Derivation | None = None) -> tuple[Query, ...]:
        """Three global sums, one Gaussian: Σd over [−h, h], Σd² over [0, h²], and n."""
        d_name, sq_name = (derivation or self.derivation()).names
        half = self.half
        measures = (LinearQuery(d_name, (-half, half)), LinearQuery(sq_name, (0.0, half * half)),
                    LinearQuery())
        return (LinearQueries(measures, name=self.label()),)

    def part_level(self, level: float) -> float:
        """Each of the three sums at 1 − α/3 (a union bound over the box)."""
        return 1.0 - (1.0 - level) / 3.0

    def finish(self, parts: Sequence[ReleaseResult], level: float) -> ReleaseResult:
        """The variance (or standard deviation) from the three noisy sums."""
        (sums,) = parts
        low, high = self.bounds
        half = self.half
        values = np.asarray(sums.values, dtype=np.float64)
        value, std, lo, hi = variance_from_sums(
            values, np.asarray(sums.std, dtype=np.float64), np.asarray(sums.ci_low, np.float64),
            np.asarray(sums.ci_high, np.float64), half)
        notes = list(sums.notes)
        if self.kind == "std":
            value, lo, hi = math.sqrt(value), math.sqrt(lo), math.sqrt(hi)
            std = min(std / (2.0 * value), half / 2.0) if value > 0 else half / 2.0
        notes += [
            f"{self.kind} of {self.column!r} clamped to [{low:g}, {high:g}] over non-missing "
            "values (population, ddof = 0) from one Gaussian on (Σd, Σd², n), d = x − midpoint",
            "interval: the box of the three sums' intervals at level 1 − α/3 (conservative)",
        ]
        return ReleaseResult(
            label=self.label(), kind=self.kind, columns=(), keys=[()], values=np.array([value]),
            std=np.array([std]), ci_low=np.array([lo]), ci_high=np.array([hi]), level=level,
            mechanism=sums.mechanism, method=sums.method, sigma=sums.sigma,
            sensitivity=sums.sensitivity, effective_sensitivity=sums.effective_sensitivity,
            epsilon=sums.epsilon, delta=sums.delta, threshold=None,
            diagnostics=sums.diagnostics, receipts=sums.receipts, comparisons=sums.comparisons,
            extra={"sum_centred": values[:1], "sum_squares_centred": values[1:2],
                   "count": values[2:]},
            notes=tuple(notes), secure=sums.secure,
        )


@dataclass(frozen=True, slots=True)
class Std(Variance):
    """Standard deviation of ``column`` clamped to ``bounds``: √ of :class:`Variance`."""
