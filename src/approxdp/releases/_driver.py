"""Noise a query whose aggregates were collected into this process (every domain below
``large_domain_cells`` cells, and every query without a domain).

The query's true values, a (cells, measures) matrix, are divided by each measure's scale into
one vector with the query's ℓ2-sensitivity, noised by the query's prepared mechanism
(:mod:`~approxdp.releases.noise`) — secure lattice noise, or a seeded simulation — scaled back,
thresholded where cells were selected privately (:mod:`~approxdp.releases.selection`), and
returned with their standard deviations and intervals (:mod:`~approxdp.releases._intervals`).
The spend is already recorded when this runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp.engines.shapes import AggregateResult
from approxdp.releases._checks import DROPPED_NOTE
from approxdp.releases._intervals import mean_interval, noise_spread
from approxdp.releases.diagnostics import Diagnostics
from approxdp.releases.noise import SEEDED_NOTE, PreparedNoise
from approxdp.releases.plan import AllocatedPlan, AllocatedQuery
from approxdp.releases.result import ReleaseResult
from approxdp.releases.specs import Mean

__all__ = ["release_collected"]

FloatArray = npt.NDArray[np.float64]

MEAN_NOTE = ("mean = c + Σ̃(x − c)/ñ clamped to the bounds; CI is conservative (Bonferroni box "
             "over the sum's and count's intervals)")


def release_collected(
    aq: AllocatedQuery,
    allocated: AllocatedPlan,
    agg: AggregateResult,
    cells: list[tuple[Any, ...]],
    true: FloatArray,
    noise: PreparedNoise,
    *,
    rng: np.random.Generator | None,
    z: float,
    level: float,
    n_rows: int,
) -> ReleaseResult:
    """Noise ``true`` (the query's ``cells`` × measures, from ``agg``) and build its result.

    ``z`` is the normal quantile of ``level``; ``n_rows`` the rows read (for the result's
    non-private diagnostics).
    """
    q = aq.query
    measures = q.measures()
    scales = np.array([m.scale for m in measures])
    mech = noise.mechanism
    if mech is not None:
        flat = (true / scales).ravel()  # the scaled vector, ℓ2-sensitivity Δ
        released = np.asarray(mech.release(flat, rng=rng), dtype=np.float64)
        noisy = released.reshape(true.shape) * scales
        mechanism = "gaussian"
    else:
        noisy, mechanism = true.copy(), "exact"
    std_unit, ci_unit = noise_spread(noise.sigma, noise.secure, level)
    stds = np.broadcast_to(scales * std_unit, noisy.shape)
    ci_stds = np.broadcast_to(scales * ci_unit, noisy.shape)
    keep = np.ones(len(cells), dtype=bool)
    if aq.threshold is not None:
        j = max(i for i, m in enumerate(measures) if m.kind == "count")
        keep = noisy[:, j] > aq.threshold
    noisy, stds, ci_stds = noisy[keep], stds[keep], ci_stds[keep]
    cells = [c for c, k in zip(cells, keep, strict=True) if k]
    notes = [SEEDED_NOTE] if noise.simulated else []
    extra: dict[str, FloatArray] = {}
    informative = None
    if isinstance(q, Mean):
        values, std, lo, hi = mean_interval(q.bounds, noisy, stds, level, ci_stds)
        informative = (lo > q.bounds[0]) | (hi < q.bounds[1])
        extra = {"sum_centred": noisy[:, 0], "count": noisy[:, 1]}
        notes.append(MEAN_NOTE)
    elif q.kind == "linearqueries":
        values, std = noisy[0], stds[0]
        lo, hi = values - z * ci_stds[0], values + z * ci_stds[0]
    else:
        values, std = noisy[:, 0], stds[:, 0]
        lo, hi = values - z * ci_stds[:, 0], values + z * ci_stds[:, 0]
        if noisy.shape[1] > 1:
            extra = {"count": noisy[:, 1]}
    if q.cell_domain is not None and q.outside == "drop":
        notes.append(DROPPED_NOTE)
    rows = {"read": n_rows, "used": agg.rows_used, "dropped": n_rows - agg.rows_used}
    return ReleaseResult(
        label=q.label(), kind=q.kind, columns=q.by,
        keys=cells if q.kind != "linearqueries" else [(i,) for i in range(values.size)],
        values=np.asarray(values, dtype=float), std=np.asarray(std, dtype=float),
        ci_low=np.asarray(lo, dtype=float), ci_high=np.asarray(hi, dtype=float), level=level,
        mechanism=mechanism, method=allocated.method, sigma=noise.sigma,
        sensitivity=aq.sensitivity, effective_sensitivity=aq.effective_sensitivity,
        epsilon=allocated.epsilon, delta=allocated.delta, threshold=aq.threshold,
        diagnostics=Diagnostics(rows=rows),
        comparisons=noise.comparisons, extra=extra, notes=tuple(notes),
        secure=not noise.simulated, informative=informative,
    )
