"""The loss rounded to the nearest grid point, under P and under Q: the test statistic of the
certified lower bound on δ(ε) (:class:`RoundedPLD`, :func:`discretize_rounded`). It uses the
same grids as the pessimistic discretization of :mod:`approxdp.accounting.pld.grid`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from approxdp.accounting.pld.batched import cdfs_and_errors_many
from approxdp.accounting.pld.edges import _edge_scale, _edges_many
from approxdp.accounting.pld.grid import (
    DiscretePLD,
    FloatArray,
    _grid,
    _grid_of,
)
from approxdp.accounting.pld.loss_cdfs import _U
from approxdp.accounting.pld.privacy_loss import CDFError, LossCDF, LossSource, cdfs_with_errors

__all__ = ["RoundedPLD", "discretize_rounded", "discretize_rounded_many"]


@dataclass(frozen=True, slots=True)
class RoundedPLD:
    """A loss distribution rounded to the nearest grid point, under P *and* under Q.

    Bin k holds the losses in ((k − ½)h, (k + ½)h] (the lowest bin also everything below,
    −∞ included; the "infinite" bin everything above the grid, +∞ included). Any such
    deterministic rounding R of the loss is a test statistic: for a run of steps with rounded
    sum S̃, δ(ε) ≥ P(S̃ > t) − e^ε Q(S̃ > t) for every t (the hockey-stick divergence is a
    supremum over events). P-masses are rounded down and Q-masses up by their evaluation
    error, so the composed P-tail is a lower bound and the Q-tail an upper bound.

    Attributes:
        h: grid step; bin i of ``p``/``r`` is the grid point (offset + i)·h.
        offset: grid index of bin 0.
        p: P-masses of the finite bins.
        r: Q-masses of the finite bins.
        p_inf: P-mass of the infinite bin.
        r_inf: Q-mass of the infinite bin.
    """

    h: float
    offset: int
    p: FloatArray
    r: FloatArray
    p_inf: float
    r_inf: float

    def as_measures(self) -> tuple[DiscretePLD, DiscretePLD]:
        """The P- and the Q-measure, each as a (sub-probability) measure on the grid with its
        infinite bin, in the form :func:`~approxdp.accounting.pld.compose.compose` takes."""
        return (
            DiscretePLD(h=self.h, offset=self.offset, pmf=self.p, infinity_mass=self.p_inf),
            DiscretePLD(h=self.h, offset=self.offset, pmf=self.r, infinity_mass=self.r_inf),
        )


def discretize_rounded(
    source: LossSource, h: float, tail: float, precise: bool = False
) -> RoundedPLD:
    """The loss of ``source`` rounded to the nearest point of the grid i·h (see
    :class:`RoundedPLD`), on the grid :func:`discretize` would use.

    Composed, its P- and Q-tails give a certified *lower* bound on δ(ε) whose error is second
    order in the rounding (a slightly perturbed optimal test loses only to second order), with
    no gap at atoms or at concentrated masses. Each P-mass is lowered and each Q-mass raised
    by a bound on its evaluation error: from CDF differences, the CDF values' own error bounds
    (:func:`~approxdp.accounting.pld.privacy_loss.cdf_errors`) and a few ulps of them
    (~u/(bin mass) relative near the centre: 10^12 composed steps make that ~5 % of the
    P-mass); with ``precise``, sources that can (``bin_bounds``, the subsampled Gaussians)
    bound the masses to nearly full relative accuracy, and the tighter bound of the two is
    kept per bin (in long double: worth it only for very many composed steps).
    """
    i_lo, _, grid = _grid(source, h, tail)
    # the bins' upper edges, and each CDF value's error bound as the mass of its cell (any
    # partition of the outcomes into cells is a test, so the cells' offsets from the exact
    # preimages do not matter here)
    c, ce = cdfs_with_errors(source, grid + 0.5 * h)
    return _rounded_bins(source, h, i_lo, grid, c, ce, precise)


def discretize_rounded_many(
    sources: Sequence[LossSource], h: float, tail: float, precise: bool = False
) -> list[RoundedPLD]:
    """:func:`discretize_rounded` of each source, their CDFs evaluated in one pass: the same
    measures."""
    grids = [_grid_of(lo, hi, h) for lo, hi in _edges_many(sources, _edge_scale(h), tail)]
    cs = cdfs_and_errors_many(sources, [g[2] + 0.5 * h for g in grids])  # the bins' upper edges
    return [_rounded_bins(s, h, i_lo, grid, c, ce, precise)
            for s, (i_lo, _, grid), (c, ce) in zip(sources, grids, cs, strict=True)]


def _rounded_bins(
    source: LossSource, h: float, i_lo: int, grid: FloatArray, c: LossCDF, ce: CDFError,
    precise: bool,
) -> RoundedPLD:
    """The bins of :func:`discretize_rounded`, from the CDFs at their upper edges and their
    error bounds."""
    kap = np.concatenate(([ce.value[0]], 2.0 * np.maximum(ce.value[1:], ce.value[:-1])))
    tau = 2.0 * ce.tiny

    def bins(f: FloatArray, sv: FloatArray) -> tuple[FloatArray, FloatArray]:
        # bin 0 is everything up to its upper edge (−∞ included); the others from whichever
        # CDF is smaller there (full relative precision); and a bound on the evaluation error
        # (the values' own, and a few ulps of them for the subtraction)
        use_f = f[1:] <= sv[:-1]
        mass = np.concatenate(([f[0]], np.where(use_f, f[1:] - f[:-1], sv[:-1] - sv[1:])))
        scale = np.concatenate(([f[0]], np.where(use_f, f[1:], sv[:-1])))
        return np.maximum(mass, 0.0), (4.0 * _U + kap) * scale + tau

    p, p_err = bins(c.fp, c.sp)
    r, r_err = bins(c.fq, c.sq)
    p_low, r_high = p - p_err, r + r_err
    bounds = getattr(source, "bin_bounds", None) if precise else None
    series = bounds(grid + 0.5 * h) if bounds is not None else None
    if series is not None:  # relative-accurate masses of bins 1.. (each bound valid: the
        p2, r2 = series  # better one is kept; fmax/fmin: a NaN never wins)
        p_low[1:] = np.fmax(p_low[1:], p2)
        r_high[1:] = np.fmin(r_high[1:], r2)
    k_inf = float(kap[-1])
    p_inf = max(0.0, float(c.sp[-1]) * (1.0 - 4.0 * _U - k_inf) - tau)
    r_inf = min(1.0, float(c.sq[-1]) * (1.0 + 4.0 * _U + k_inf) + tau)
    return RoundedPLD(
        h=h,
        offset=i_lo,
        p=np.maximum(p_low, 0.0),
        r=np.minimum(r_high, 1.0),
        p_inf=p_inf,
        r_inf=r_inf,
    )
