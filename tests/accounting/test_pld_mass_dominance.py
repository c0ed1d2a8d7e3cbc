"""The pessimistic discretization dominates the exact one at EVERY grid point, the bulk and
the lowest point included (so its total mass is at least 1).

The upper-tail check of ``test_pld_cdf_errors`` covers where δ(ε) lives for one step; over
10^7 composed steps the bulk matters too: an interval whose computed mass falls short of
its cell's exact mass by a few ulps loses that mass from every step, O(T·u) in all. The
dominance needed by the composition (mass only moved up or added) is: for every grid point
e_i, the discretized P-mass at or above e_i is at least the exact connect-the-dots one.
Exact = 40-digit mpmath on the closed-form CDFs at the float grid edges.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from approxdp.accounting.pld.grid import _dots_of, _grid, discretize
from approxdp.accounting.pld.privacy_loss import (
    DiscreteGaussianLoss,
    EpsilonDeltaLoss,
    GaussianLoss,
    LaplaceLoss,
    LossSource,
    SubsampledLoss,
)
from pld_exact import exact_tails

CASES = [
    (GaussianLoss(1.0), 0.05, 1e-30),
    (GaussianLoss(0.3), 0.01, 1e-30),
    (GaussianLoss(2.5), 0.1, 1e-40),
    (SubsampledLoss(GaussianLoss(1.0), 0.01, "remove"), 0.002, 1e-30),
    (SubsampledLoss(GaussianLoss(1.0), 0.01, "add"), 0.002, 1e-30),
    (SubsampledLoss(GaussianLoss(0.5), 0.2, "remove"), 0.01, 1e-30),
    (SubsampledLoss(GaussianLoss(2.0), 0.05, "add"), 0.01, 1e-30),
    (LaplaceLoss(1.0), 0.01, 1e-30),
    (LaplaceLoss(12.0), 0.05, 1e-30),  # exponents ~12: more than a flat 8u
    (DiscreteGaussianLoss(2.0, 1), 0.01, 1e-30),
    (DiscreteGaussianLoss(0.7, 2), 0.05, 1e-30),
    (EpsilonDeltaLoss(1.0, 1e-6), 0.1, 1e-30),
    (EpsilonDeltaLoss(40.0, 1e-9), 0.5, 1e-30),  # P-mass 4e-18 at −ε: (1 − δ) − hi is 0
]


@pytest.mark.parametrize(("src", "h", "tail"), CASES)
def test_discretized_mass_at_or_above_every_grid_point_dominates(
    src: LossSource, h: float, tail: float
) -> None:
    mp.mp.dps = 40
    d = discretize(src, h, tail)
    edges = d.losses
    # the dots connect-the-dots split between (every grid point, or fewer in the far tails):
    # the exact measure on them has, at or above a grid point, what it has at the next dot
    i_lo, n, _ = _grid(src, h, tail)
    dots = _dots_of(src, h, tail, i_lo, n)
    dots_list = list(range(n)) if dots is None else dots.tolist()
    tails = {k: exact_tails(src, float(edges[k])) for k in dots_list}
    above = mp.mpf(d.infinity_mass)
    nxt = len(dots_list) - 1
    for i in range(edges.size - 1, -1, -1):
        above += mp.mpf(float(d.pmf[i]))
        while nxt > 0 and dots_list[nxt - 1] >= i:
            nxt -= 1
        k = dots_list[nxt]
        if nxt == 0:
            exact = mp.mpf(1)  # everything below the grid is moved up to its lowest point
        else:
            j = dots_list[nxt - 1]
            p = tails[j][0] - tails[k][0]
            r = tails[j][1] - tails[k][1]
            denom = 1 - mp.exp(-mp.mpf(h) * (k - j))
            a = (p - mp.exp(mp.mpf(float(edges[j]))) * r) / denom
            exact = tails[k][0] + min(max(a, mp.mpf(0)), p)
        assert above >= exact, (i, float(edges[i]), float(above - exact))
    # and the added mass is ulps, not a loosening: the total is 1 within a few 1e-13
    assert math.fsum(d.pmf.tolist()) + d.infinity_mass - 1.0 < 1e-12


def test_epsilon_delta_pair_keeps_the_small_atom_at_large_epsilon() -> None:
    """P-mass (1 − δ)/(1 + e^ε) at −ε: written as (1 − δ) − (mass at +ε) it cancels to 0."""
    mp.mp.dps = 40
    for eps in (1.0, 20.0, 40.0, 300.0):
        c = EpsilonDeltaLoss(eps, 1e-9).cdfs(np.array([0.0]))
        exact = (1 - mp.mpf(1e-9)) / (1 + mp.exp(mp.mpf(eps)))
        assert abs(mp.mpf(float(c.fp[0])) / exact - 1) < 8 * 2.0**-53
        assert abs(mp.mpf(float(c.sq[0])) / exact - 1) < 8 * 2.0**-53


@pytest.mark.parametrize("e0", [0.5, 8.0, 30.0, 200.0])
def test_laplace_cdf_error_bounds_the_values(e0: float) -> None:
    """Each of the four values within κ of the exact one (relative), κ from cdf_error."""
    mp.mp.dps = 40
    src = LaplaceLoss(e0)
    edges = np.linspace(-e0, e0, 401)[:-1]
    c, ce = src.cdfs(edges), src.cdf_error(edges)
    for k in range(0, edges.size, 7):
        exact = exact_tails(src, float(edges[k]))
        x = mp.mpf(float(edges[k]))
        fp_exact = mp.exp((x - mp.mpf(e0)) / 2) / 2
        for got, want in ((c.fp[k], fp_exact), (c.sp[k], exact[0]), (c.sq[k], exact[1]),
                          (c.fq[k], 1 - exact[1])):
            assert abs(mp.mpf(float(got)) - want) <= mp.mpf(float(ce.value[k])) * want
