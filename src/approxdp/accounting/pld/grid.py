"""The grid of the PLD accountant: one mechanism's privacy-loss distribution, discretized on
the points i·h pessimistically (a dominating pair, for the upper bound) or rounded to the
nearest point under P and under Q (a test statistic, for the lower bound: its bins are in
:mod:`approxdp.accounting.pld.rounded`). The tail edges the grids cover are probed and cached in
:mod:`approxdp.accounting.pld.edges`.

See :mod:`approxdp.accounting.pld.compose` for how they are composed and bounded; Doroshenko, Ghazi,
Kamath, Kumar, Manurangsi 2022 (https://arxiv.org/abs/2207.04380) for connect-the-dots, and
Zhu, Dong, Wang 2022 (https://arxiv.org/abs/2106.08567) for dominating pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.batched import cdfs_and_errors_many
from approxdp.accounting.pld.discrete import DiscretePLD
from approxdp.accounting.pld.edges import _edge_scale, _edges_at, _edges_many
from approxdp.accounting.pld.privacy_loss import LossSource, cdfs_with_errors
from approxdp.accounting.pld.split import _split, split_many
from approxdp.errors import InvalidParameterError

__all__ = [
    "DiscretePLD",
    "GridTooLargeError",
    "discretize",
    "discretize_many",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
_MAX_STEP_POINTS = 1 << 22  # one step's grid


class GridTooLargeError(InvalidParameterError):
    """One step's loss grid would need ``needed`` points at this grid step, more than its
    ``limit``: a coarser step fits (every discretization is certified)."""

    def __init__(self, message: str, needed: int, limit: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.limit = limit



def _grid(source: LossSource, h: float, tail: float) -> tuple[int, int, FloatArray]:
    """(index of the first grid point, number of points, the losses i·h) covering ``source``
    up to ``tail`` of P-mass on each side."""
    return _grid_of(*_edges_many([source], _edge_scale(h), tail, _fine_tail(tail))[0], h)


def _grid_of(e_lo: float, e_hi: float, h: float) -> tuple[int, int, FloatArray]:
    i_lo = math.floor(e_lo / h)
    i_hi = max(math.ceil(e_hi / h), i_lo + 1)
    n = i_hi - i_lo + 1
    if n > _MAX_STEP_POINTS:
        raise GridTooLargeError(
            f"the loss grid needs {n} points at step h={h:.3g} (at most {_MAX_STEP_POINTS}); "
            "use a coarser precision",
            needed=n,
            limit=_MAX_STEP_POINTS,
        )
    return i_lo, n, (i_lo + np.arange(n, dtype=np.float64)) * h


def discretize(source: LossSource, h: float, tail: float, stable: bool = False) -> DiscretePLD:
    """Pessimistic connect-the-dots discretization of ``source`` on the grid i·h.

    Every loss interval (e_{k−1}, e_k] keeps its P-mass p and Q-mass r: the share
    a = (p − e^(e_{k−1}) r)/(1 − e^(−h)) goes to e_k and p − a to e_{k−1} (Doroshenko et al.
    2022, https://arxiv.org/abs/2207.04380, Sec. 3). The split's floating-point error is
    bounded from the magnitudes of the CDF values used and their own error bounds
    (:func:`~approxdp.accounting.pld.privacy_loss.cdf_errors`: for the Gaussians, ~z²u in
    the tails) and added to the upper share; the mass sent to +∞ is rounded up. With
    ``stable``, sources that can write the numerator p − e^(e_{k−1})·r without its
    cancellation (``split_numerators``, the subsampled pairs) give it with its own error
    bound, and the tighter of the two is used.

    Args:
        source: the loss distribution.
        h: grid step > 0.
        tail: P-mass allowed above the grid (sent to +∞) and below it (moved up to the
            lowest grid point).
        stable: also form the split without cancellation where the source can. It costs
            about as much as the discretization itself (the inner CDFs again) and only pays
            where the guard's mean shift, added up over the composed steps, is not negligible
            (≳ 10^8 steps: see :data:`~approxdp.accounting.pld.discretized.STABLE_FROM`); either
            way the result is a valid dominating discretization.
    """
    i_lo, n, edges = _grid(source, h, tail)
    dots = _dots_of(source, h, tail, i_lo, n)
    kept = edges if dots is None else edges[dots]
    c, ce = cdfs_with_errors(source, kept)
    return _split(source, h, i_lo, n, kept, c, ce, stable, dots)


def discretize_many(
    sources: Sequence[LossSource], h: float | Sequence[float], tail: float, stable: bool = False
) -> list[DiscretePLD]:
    """:func:`discretize` of each source (at ``h``, or at its own step from a sequence), their
    CDFs evaluated in one pass (:func:`~approxdp.accounting.pld.batched.cdfs_many`) and split
    in one (:func:`~approxdp.accounting.pld.split.split_many`): the same measures."""
    hs = [float(h)] * len(sources) if isinstance(h, int | float) else [float(x) for x in h]
    edges = _edges_at(sources, hs, tail, _fine_tail(tail))  # (the dots' edges with them)
    grids = [_grid_of(*e, step) for e, step in zip(edges, hs, strict=True)]
    dots = _dots_many(sources, hs, tail, [(g[0], g[1]) for g in grids])
    kept = [g[2] if d is None else g[2][d] for g, d in zip(grids, dots, strict=True)]
    cs = cdfs_and_errors_many(sources, kept)
    return split_many([(s, step, i_lo, n, e, c, ce, d)
                       for s, step, (i_lo, n, _), e, (c, ce), d in zip(sources, hs, grids, kept, cs,
                                                                       dots, strict=True)], stable)



def _fine_tail(tail: float) -> float | None:
    """The tail beyond which a grid's dots are thinned (:func:`_dots_many`); None: never."""
    fine = _FINE_TAIL * tail
    return fine if 0.0 < fine < 1e-3 else None


#: Tails of P-mass below this many times the grid's own tail (each side) are split on
#: coarse dots (:func:`_dots_many`)...
_FINE_TAIL = 4096.0
#: ...every this many grid steps apart
_COARSE_STEPS = 4
#: grids of fewer points are not thinned
_THIN_FROM = 256


def _dots_of(source: LossSource, h: float, tail: float, i_lo: int, n: int) -> IntArray | None:
    """:func:`_dots_many` of one source."""
    return _dots_many([source], [h], tail, [(i_lo, n)])[0]


def _dots_many(
    sources: Sequence[LossSource], hs: Sequence[float], tail: float,
    grids: Sequence[tuple[int, int]],
) -> list[IntArray | None]:
    """The grid points (indices into each source's grid of (first index, points)) that
    connect-the-dots splits its mass between: every point where each tail of the source
    holds more than :data:`_FINE_TAIL` of P-mass, every :data:`_COARSE_STEPS`-th beyond, and
    the grid's ends (None: every point).

    Connect-the-dots dominates for *any* finite set of dots (Doroshenko et al. 2022,
    https://arxiv.org/abs/2207.04380, Sec. 3: each interval between consecutive dots keeps
    its P- and Q-mass on its two ends), so thinning the dots where the loss has almost no
    mass is as certified; it costs tightness only there, through the interval's spread
    (h²·a(p − a)/p grows with the width squared, but on ≤ 4096·tail of the mass), while the
    CDFs, the split and every support built on the measure (the window planner's log-MGFs)
    are evaluated on a fraction of the points: a subsampled Gaussian's loss reaches far above
    its bulk (at σ ≈ 1.3, q ≈ 0.004, h = 2e-4 and a tail of 6e-14, half of its grid lies
    where the upper tail holds < 4096·tail). Coarser dots (8 or 16 steps) measurably moved
    the refinement of tail-dominated settings (σ = 0.5, q = 1e-5, T = 1000: ε +7e-5
    relative); 4 steps left every setting of benchmarks/dpsgd.py within 4e-7."""
    out: list[IntArray | None] = [None] * len(sources)
    fine_tail = _fine_tail(tail)
    idx = [i for i, (_, n) in enumerate(grids) if n >= _THIN_FROM]
    if not idx or fine_tail is None:
        return out
    fine = _edges_at([sources[i] for i in idx], [hs[i] for i in idx], fine_tail)
    m = _COARSE_STEPS
    for i, (lo, hi) in zip(idx, fine, strict=True):
        h, (i_lo, n) = hs[i], grids[i]
        j0 = max(math.floor(lo / h) - i_lo - 1, 0)
        j1 = min(math.ceil(hi / h) - i_lo + 1, n - 1)
        if lo == hi == 0.0 or j1 <= j0:  # (no finite mass above the fine tail)
            j0 = j1 = 0
        below = np.arange(j0 % m, j0, m)
        above = np.arange(j1 + m, n - 1, m)
        if below.size + above.size < 8:
            continue
        out[i] = np.concatenate((
            [0] if j0 % m else [], below, np.arange(j0, j1 + 1), above,
            [n - 1] if j1 < n - 1 else [],
        )).astype(np.intp)  # (sorted, each point once)
    return out
