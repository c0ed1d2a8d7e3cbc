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
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from approxdp.accounting.pld.batched import cdfs_and_errors_many
from approxdp.accounting.pld.edges import _edge_scale, _edges_at, _edges_many
from approxdp.accounting.pld.privacy_loss import (
    CDFError,
    LossCDF,
    LossSource,
    cdfs_with_errors,
    loss_interval,
    sliver_guard,
)
from approxdp.errors import InvalidParameterError

__all__ = [
    "DiscretePLD",
    "GridTooLargeError",
    "discretize",
    "discretize_many",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
# Sums of products are written (x * y).sum(), never np.dot: short vectors through a threaded
# BLAS cost milliseconds of thread wake-ups on a busy machine (measured: 3.4 ms vs 0.05 ms).

_U = float(np.finfo(np.float64).eps) / 2  # unit round-off
_MAX_STEP_POINTS = 1 << 22  # one step's grid


class GridTooLargeError(InvalidParameterError):
    """One step's loss grid would need ``needed`` points at this grid step, more than its
    ``limit``: a coarser step fits (every discretization is certified)."""

    def __init__(self, message: str, needed: int, limit: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.limit = limit


@dataclass(frozen=True, slots=True)
class DiscretePLD:
    """A pessimistic discretization of one privacy-loss distribution.

    Attributes:
        h: grid step; the loss of ``pmf[i]`` is ``(offset + i) * h``.
        offset: grid index of ``pmf[0]``.
        pmf: P-masses at finite losses (sum 1 − infinity_mass, up to round-off).
        infinity_mass: P-mass at loss +∞ (pure δ, and the truncated upper tail).
        spread: for connect-the-dots, the variance that the split adds in each interval
            (e_k, e_(k+1)], h²·a(p − a)/p for an interval of P-mass p of which a goes up: what
            the discretization costs in ε; None otherwise.
        tilt: the masses are stored tilted by e^(tilt·loss) (see :meth:`log_masses`).
        log_norm: with ``tilt``, the log of the normalizer.
        guard: for connect-the-dots, the mean shift of the loss from moving mass up to cover
            the split's floating-point error.
    """

    h: float
    offset: int
    pmf: FloatArray
    infinity_mass: float
    spread: FloatArray | None = None
    tilt: float = 0.0
    log_norm: float = 0.0
    guard: float = 0.0

    def log_masses(self) -> FloatArray:
        """log of the true masses: ``pmf`` is stored tilted when ``tilt`` ≠ 0 (a composed
        block), the true mass being pmf · e^(log_norm − tilt·loss)."""
        with np.errstate(divide="ignore"):
            out = np.log(np.maximum(self.pmf, 0.0))
        if self.tilt != 0.0 or self.log_norm != 0.0:
            out = out + (self.log_norm - self.tilt * self.losses)
        return np.asarray(out)

    @property
    def losses(self) -> FloatArray:
        """The loss of each entry of ``pmf``."""
        return np.asarray((self.offset + np.arange(self.pmf.size)) * self.h, dtype=np.float64)

    def delta(self, epsilon: float) -> float:
        """δ(ε) of this (single-step) distribution: an upper bound on the true one."""
        l = self.losses
        keep = l > epsilon
        core = float(np.sum(self.pmf[keep] * -np.expm1(epsilon - l[keep])))
        return min(1.0, core + self.infinity_mass)

    def mean_var(self) -> tuple[float, float]:
        """Mean and variance of the finite part of the loss under P (normalized)."""
        w = np.maximum(self.pmf, 0.0)
        total = float(w.sum())
        if total <= 0.0:
            return 0.0, 0.0
        l = self.losses
        mean = float((w * l).sum() / total)
        var = float((w * (l - mean) ** 2).sum() / total)
        return mean, var


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
    CDFs evaluated in one pass (:func:`~approxdp.accounting.pld.batched.cdfs_many`): the same
    measures."""
    hs = [float(h)] * len(sources) if isinstance(h, int | float) else [float(x) for x in h]
    edges = _edges_at(sources, hs, tail, _fine_tail(tail))  # (the dots' edges with them)
    grids = [_grid_of(*e, step) for e, step in zip(edges, hs, strict=True)]
    dots = _dots_many(sources, hs, tail, [(g[0], g[1]) for g in grids])
    kept = [g[2] if d is None else g[2][d] for g, d in zip(grids, dots, strict=True)]
    cs = cdfs_and_errors_many(sources, kept)
    return [_split(s, step, i_lo, n, e, c, ce, stable, d)
            for s, step, (i_lo, n, _), e, (c, ce), d in zip(sources, hs, grids, kept, cs, dots,
                                                            strict=True)]



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


def _split(
    source: LossSource, h: float, i_lo: int, n: int, edges: FloatArray, c: LossCDF,
    ce: CDFError, stable: bool, dots: IntArray | None = None,
) -> DiscretePLD:
    """The connect-the-dots split of :func:`discretize`, from the CDFs at the grid's edges and
    their error bounds; with ``dots``, ``edges`` (and the CDFs) are those of the grid points
    ``dots`` only (:func:`_dots_many`), each interval split by its own width (the sliver
    guard kept at the grid step: a narrower interval's, larger)."""
    p, p_scale = loss_interval(c.fp, c.sp)
    r, r_scale = loss_interval(c.fq, c.sq)
    left = edges[:-1]
    with np.errstate(over="ignore"):
        grow = np.exp(left)  # e^(e_{k-1}); r·grow stays below p where it matters
    width: FloatArray | float = h
    denom: FloatArray | float = -math.expm1(-h)
    if dots is not None:
        width = np.diff(dots) * h
        denom = -np.expm1(-width)
    # the CDF values' error bounds as masses of their cells (privacy_loss.CDFError): an
    # interval's mass errs by ≤ 2·max κ·scale + 2·max τ (the arithmetic here a few ulps
    # more); and the cells are off the exact preimages of the edges by slivers whose
    # share across each edge (≤ mass·expm1(shift)/(1 − e^(−h))) is moved up over it
    kap = 2.0 * np.maximum(ce.value[1:], ce.value[:-1])
    with np.errstate(invalid="ignore", over="ignore"):
        a = (p - grow * r) / denom
        err = ((8.0 * _U + kap) * (p_scale + grow * r_scale) + 2.0 * ce.tiny * (1.0 + grow))
        err /= denom
        a = np.where(np.isfinite(a), a, p)
        err = np.where(np.isfinite(err), err, np.inf)
        split = getattr(source, "split_numerators", None) if stable else None
        written = split(edges) if split is not None else None
        if written is not None:  # the same numerator, written without its cancellation
            num, num_err = written
            a2, err2 = num / denom, num_err / denom
            # each (a, err) bounds the true share from above: the tighter one is used
            better = a2 + err2 < a + err
            a, err = np.where(better, a2, a), np.where(better, err2, err)
        across, lost = sliver_guard(ce, np.minimum(c.fp, c.sp), h)
        err = err + across
        exact = np.clip(a, 0.0, p)
        a = np.clip(a + err, 0.0, p)
    lift = _dominance_lift(c, ce)  # see there: the CDF values' own errors, not accumulated
    unbounded = not bool(np.isfinite(lift).all())  # no bound known: nothing is certified
    pmf = np.zeros(edges.size)
    pmf[1:] += a
    pmf[:-1] += p - a
    pmf[0] += c.fp[0]  # everything at or below the lowest grid point
    lift_top = _place_up(pmf, np.where(np.isfinite(lift), lift, 0.0))
    # the sums above round each entry by ≤ u·(its terms), < 2u of it: scaling by 1 + 8u
    # (itself rounded by ≤ u) leaves every entry at least the exact sum of its shares
    pmf *= 1.0 + 8.0 * _U
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.where(p > 0.0, (width * width) * a * (p - a) / p, 0.0)
    # the mean shift the guard adds (mass moved up a step): negligible for one step, but it
    # adds up over 10^9 steps of a tiny loss
    guard = float(((a - exact) * width).sum())
    if dots is not None:  # back on the grid (a coarse interval's spread at its first step)
        full = np.zeros(n)
        full[dots] = pmf
        pmf = full
        full = np.zeros(n - 1)
        full[dots[:-1]] = spread
        spread = full
    # the mass above the grid, rounded up (and the slivers that may reach above the last
    # grid point or past a step, sent to +∞ with it)
    top = float(c.sp[-1]) * (1.0 + 4.0 * _U + float(ce.value[-1])) + ce.tiny
    inf_mass = 1.0 if unbounded else min(1.0, top + lost + 2.0 * lift_top)
    return DiscretePLD(
        h=h, offset=i_lo, pmf=pmf, infinity_mass=inf_mass, spread=spread, guard=guard
    )


def _place_up(pmf: FloatArray, lift: FloatArray) -> float:
    """Add ``lift`` to ``pmf`` in place, each entry at its own point where that holds mass and
    otherwise at the next point above that does (moving added mass up keeps the dominance, and
    the support — which the window planning and the tilts read — stays what it was); what
    has no such point above goes to +∞: returned."""
    n = pmf.size
    held = pmf > 0.0
    if bool(held.all()):  # every point holds mass: each lift at its own point
        pmf += lift
        return 0.0
    idx = np.where(held, np.arange(n), n)
    nxt = np.minimum.accumulate(idx[::-1])[::-1]  # the first point ≥ i holding mass
    inside = nxt < n
    np.add.at(pmf, nxt[inside], lift[inside])
    return float(lift[~inside].sum())


def _dominance_lift(c: LossCDF, ce: CDFError) -> FloatArray:
    """Mass added at each grid point so that the discretization dominates the exact one at
    every point, the bulk included, whatever the CDF values' own errors.

    The P-mass at or above grid point e_i is the top mass, the interval masses above e_i and
    interval i's upper share; the interval masses are differences of the *same* computed
    values, so their sum telescopes: to s̃_i − s̃_last over the intervals taken from the
    survival function, and over a run of intervals taken from the CDF (``loss_interval``
    takes the smaller tail: one run at the bottom) to f̃_b − f̃_i = s̃_i − s̃_b + η_b − η_i,
    where η = f̃ + s̃ − 1 is the pair's own error at an edge (|η| ≤ κ(f̃ + s̃) + 2τ + 2u).
    So the P-mass at or above e_i falls short of the exact one by at most
    d_i = κ_i·t_i + τ + (the |η| bounds at the ends of the runs above e_i) + 2u·s̃_i, with
    t_i the tail the telescoped sum ends on (f̃_i inside a run, else s̃_i): a few ulps,
    **not** accumulated over the intervals (the upper shares' own errors are in the split's
    guard). Adding G(i) − G(i+1) at e_i with G(i) = max_(k ≥ i) d_k makes the added mass at
    or above every e_i at least d_i; in all G(0) ≈ a few u, placed where the bound needs it
    (mostly the bulk) rather than at +∞: over 10^12 composed steps, T·G(0) of added mass is
    ~1e-3 *relative* to δ, where the same mass at +∞ would be ~1e-3 *absolute*.
    Dominance (mass at or above every point at least the exact one's) is what composition
    preserves (convolution of dominating measures; Doroshenko et al. 2022,
    https://arxiv.org/abs/2207.04380, Sec. 3, for connect-the-dots itself)."""
    f, s = c.fp, c.sp
    kap = np.asarray(ce.value, dtype=np.float64)
    tau = float(ce.tiny)
    n = f.size
    eta = kap * (f + s) + 2.0 * tau + 2.0 * _U
    use_f = f[1:] <= s[:-1]  # as loss_interval: interval k (edges k−1, k) from the CDF
    # runs of CDF-taken intervals: [a, b] in edge indices (intervals a+1 .. b)
    flips = np.flatnonzero(np.diff(np.concatenate(([False], use_f, [False])).astype(np.int8)))
    # each run: edge a = its first interval's lower edge, b = its last interval's upper edge
    run_a, run_b = flips[0::2], flips[1::2]
    d = kap * s + tau
    if run_a.size:
        w = eta[run_a] + eta[run_b]  # a whole run above e_i: |η_b| + |η_a|
        # Σ over runs with a ≥ i: a reverse cumulative sum over the runs' lower edges
        above = np.zeros(n + 1)
        np.add.at(above, run_a, w)
        above = np.cumsum(above[::-1])[::-1]
        d = d + above[:n]
        for a, b in zip(run_a.tolist(), run_b.tolist(), strict=True):
            # inside a run (a ≤ i < b): the telescoped sum ends on f̃_i and η_b, plus the
            # runs above b
            d[a:b] = kap[a:b] * f[a:b] + tau + eta[b] + above[b + 1]
    d = d + 2.0 * _U * np.minimum(s, 1.0)
    d[0] += kap[0] * f[0] + tau  # the lowest point also holds the mass below the grid
    g = np.maximum.accumulate(d[::-1])[::-1]
    lift = g.copy()
    lift[:-1] -= g[1:]
    return lift
