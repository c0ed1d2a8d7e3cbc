"""The grid's error bounds against 40-digit mpmath at the *exact* preimages of the float grid
edges: SciPy's ``ndtr`` errs by ~z²u in the Gaussian tails (~100u at z ≈ 7), the preimages
are rounded on their way to it, and the discretization must dominate the exact loss
distribution anyway (the old flat 16u·(CDF scale) allowance did not: it fails the first
test below)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import special

from approxdp.accounting.pld.grid import discretize
from approxdp.accounting.pld.loss_cdfs import _ndtr_error
from approxdp.accounting.pld.privacy_loss import (
    GaussianLoss,
    LossSource,
    SubsampledLoss,
    cdf_errors,
    sliver_guard,
)
from approxdp.accounting.pld.rounded import discretize_rounded
from pld_exact import exact_tails

_U = 2.0**-53

#: (source, grid step, tail): plain Gaussians (μ = Δ/σ) and subsampled ones, both directions,
#: with tails reaching z ≈ 16–25 where ``ndtr``'s error is hundreds of ulps.
CASES = [
    (GaussianLoss(1.0), 0.05, 1e-60),
    (GaussianLoss(2.5), 0.1, 1e-100),
    (SubsampledLoss(GaussianLoss(1.0), 0.01, "remove"), 0.02, 1e-60),
    (SubsampledLoss(GaussianLoss(1.0), 0.01, "add"), 0.01, 1e-60),
    (SubsampledLoss(GaussianLoss(0.5), 0.2, "remove"), 0.01, 1e-80),
]


@pytest.mark.parametrize(("src", "h", "tail"), CASES)
def test_discretization_dominates_the_exact_distribution_in_the_upper_tail(
    src: LossSource, h: float, tail: float
) -> None:
    """Connect-the-dots on the exact CDFs at the exact grid edges (40 digits) against
    :func:`discretize`'s output: in the upper tail (where δ(ε) lives) the discretized P-mass
    at or above every grid point must be at least the exact discretization's — mass moved
    up, never down."""
    mp.mp.dps = 40
    d = discretize(src, h, tail)
    edges = d.losses
    memo: dict[int, tuple[mp.mpf, mp.mpf]] = {}

    def tail_at(i: int) -> tuple[mp.mpf, mp.mpf]:  # the upper part only is ever asked
        if i not in memo:
            memo[i] = exact_tails(src, float(edges[i]))
        return memo[i]

    h_mp = mp.mpf(h)
    denom = 1 - mp.exp(-h_mp)
    # exact connect-the-dots: interval i = (e_i, e_(i+1)] sends a_i to e_(i+1), p_i − a_i to e_i
    computed_above = mp.mpf(d.infinity_mass)
    worst = mp.inf
    for i in range(edges.size - 1, 0, -1):
        computed_above += mp.mpf(float(d.pmf[i]))
        p = tail_at(i - 1)[0] - tail_at(i)[0]
        r = tail_at(i - 1)[1] - tail_at(i)[1]
        a = (p - mp.exp(mp.mpf(float(edges[i - 1]))) * r) / denom
        exact = tail_at(i)[0] + a  # everything above e_i, plus the share sent up to it
        if exact > mp.mpf("1e-3"):
            break
        assert computed_above >= exact, (i, float(edges[i]), float(computed_above / exact - 1))
        worst = min(worst, computed_above / exact - 1)
    assert worst < mp.mpf("1e-6")  # and it is not loose (the guard is ulps, not percent)


@pytest.mark.parametrize(("src", "h", "tail"), CASES)
def test_rounded_masses_bracket_the_exact_bin_masses(
    src: LossSource, h: float, tail: float
) -> None:
    """:func:`discretize_rounded`'s P-masses are lower bounds and its Q-masses upper bounds of
    the masses of its cells (40 digits, at the float preimages it evaluated: any partition
    is a test), in both tails — z up to ~25, where 16 ulps of the CDF values do not cover
    ``ndtr``'s error."""
    mp.mp.dps = 40
    rd = discretize_rounded(src, h, tail)
    upper = np.asarray((rd.offset + np.arange(rd.p.size)) * h + 0.5 * h, dtype=np.float64)
    if isinstance(src, SubsampledLoss):
        assert isinstance(src.inner, GaussianLoss)
        sign = 1.0 if src.direction == "remove" else -1.0
        with np.errstate(invalid="ignore", over="ignore"):
            x = src._inner_edges(sign * upper) / src.inner.mu + 0.5 * src.inner.mu
        mu, q = mp.mpf(src.inner.mu), mp.mpf(src.q)
    else:
        assert isinstance(src, GaussianLoss)
        x = upper / src.mu + 0.5 * src.mu
        mu, q, sign = mp.mpf(src.mu), mp.mpf(1), 1.0

    def cells(k: int) -> tuple[mp.mpf, mp.mpf, mp.mpf, mp.mpf]:
        """P(L ≤ e), P(L > e), Q(L ≤ e), Q(L > e) at e = upper[k] on the evaluated x (z = x − μ
        as rounded in float), each tail computed directly."""
        xf = float(x[k])
        if not np.isfinite(xf):
            low = mp.mpf(0) if (xf < 0) == (sign > 0) else mp.mpf(1)
            return low, 1 - low, low, 1 - low
        za = mp.mpf(float(np.float64(xf) - src_mu))
        xm = mp.mpf(xf)
        if sign > 0:
            return (q * mp.ncdf(za) + (1 - q) * mp.ncdf(xm),
                    q * mp.ncdf(-za) + (1 - q) * mp.ncdf(-xm), mp.ncdf(xm), mp.ncdf(-xm))
        return (mp.ncdf(-xm), mp.ncdf(xm), q * mp.ncdf(-za) + (1 - q) * mp.ncdf(-xm),
                q * mp.ncdf(za) + (1 - q) * mp.ncdf(xm))

    def mass(lo: mp.mpf, hi: mp.mpf, s_lo: mp.mpf, s_hi: mp.mpf) -> mp.mpf:
        return hi - lo if hi <= s_lo else s_lo - s_hi

    src_mu = float(mu)
    below = [cells(k) for k in range(upper.size)]
    checked = 0
    for k in range(1, upper.size):
        b0, b1 = below[k - 1], below[k]
        p, r = mass(b0[0], b1[0], b0[1], b1[1]), mass(b0[2], b1[2], b0[3], b1[3])
        if p < mp.mpf("1e-280") and r < mp.mpf("1e-280"):
            continue  # subnormal territory: checked through tiny, not relative
        assert mp.mpf(float(rd.p[k])) <= p, (k, float(upper[k]))
        assert mp.mpf(float(rd.r[k])) >= r, (k, float(upper[k]))
        checked += 1
    assert checked > upper.size // 2


def test_ndtr_error_bound_holds_on_a_dense_sample() -> None:
    """The bound on SciPy's ``ndtr`` (:func:`_ndtr_error`) against 40-digit mpmath, both
    tails, z ∈ [−37, 8] (the value is subnormal below)."""
    mp.mp.dps = 40
    z = np.concatenate((np.linspace(-37.0, 8.0, 1500), np.linspace(-2.0, -1.0, 300)))
    for zi, low, high in zip(z, special.ndtr(z), special.ndtr(-z), strict=True):
        lo, hi = mp.ncdf(mp.mpf(float(zi))), mp.ncdf(-mp.mpf(float(zi)))
        bound = float(_ndtr_error(np.array([zi]))[0])
        assert abs(mp.mpf(float(low)) - lo) <= bound * lo
        assert abs(mp.mpf(float(high)) - hi) <= bound * hi


def test_cdf_errors_cover_an_edge_at_the_end_of_the_support() -> None:
    """Edges within an ulp of log(1 − q), the lowest loss of the remove direction: the
    preimage's argument is not known to be positive there, so those edges get their own
    bounds and the mass their sliver may span (for σ = 0.1 not small) — never NaN; the
    edges far from the end share one small bound."""
    q = 0.01
    src = SubsampledLoss(GaussianLoss(10.0), q, "remove")
    end = np.log1p(-q)
    edges = np.array([end, np.nextafter(end, 0.0), np.nextafter(np.nextafter(end, 0.0), 0.0),
                      end / 2, 0.0, 1.0])
    ce = cdf_errors(src, edges)
    assert np.all(np.isfinite(ce.value)) and np.all(ce.value >= 0.0)
    assert ce.near is not None and ce.near_mass is not None and ce.near_moved is not None
    assert set(ce.near.tolist()) >= {0, 1, 2} and 3 not in set(ce.near.tolist())
    assert not np.any(np.isnan(ce.near_mass)) and float(ce.near_mass.max()) > 1e-300
    assert not np.any(np.isnan(ce.near_moved))
    assert 0.0 < ce.moved < 1e-9 and 0.0 < ce.shift < 1e-10
    guard, lost = sliver_guard(ce, np.minimum(src.cdfs(edges).fp, src.cdfs(edges).sp), 1e-3)
    assert math.isfinite(lost) and lost >= float(ce.near_mass[:3].min())
    assert np.all(np.isfinite(guard))
