"""SciPy's ``ndtr`` flushes Φ(z) to 0 for z < −37.68, where the value is still up to 5.9e-311:
far more than the absolute allowance of a CDF value (``_TINY``, 16 ulp(0)). A rounded loss
whose grid ends there put ~0 Q-mass in its infinite bin, and a test that counted that bin in
certified a lower ε ABOVE the truth (σ = 2, q = 0.05, T = 2, δ = 1e-300: lower 20.264146947,
exact 20.2641463). The flushed values are now taken from ``log_ndtr``; these tests fail on the
old code."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.accounting.pld.loss_cdfs import _TINY, _ndtr_error, _normal_tails
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from approxdp.accounting.pld.rounded import discretize_rounded, discretize_rounded_many
from subsampled_exact import log_delta_two


def test_normal_tails_hold_their_error_bound_where_ndtr_underflows() -> None:
    """Both tails against 40-digit mpmath, z ∈ [−38.8, −37]: within ``_ndtr_error`` of the
    value plus ``_TINY`` (old: 0 at z = −37.7, where Φ(z) = 2.48e-311)."""
    mp.mp.dps = 40
    z = np.concatenate((np.linspace(-38.8, -37.0, 600), [-37.7, -37.68, -37.6777]))
    low, high = _normal_tails(z)
    _, low_neg = _normal_tails(-z)  # Φ(−(−z)): the upper tail evaluated the other way
    bound = _ndtr_error(z)
    for zi, lo, hi, ln, b in zip(z, low, high, low_neg, bound, strict=True):
        exact = mp.ncdf(mp.mpf(float(zi)))
        for value in (lo, ln):
            assert abs(mp.mpf(float(value)) - exact) <= b * exact + _TINY, (zi, value)
        assert abs(mp.mpf(float(hi)) - (1 - exact)) <= b + _TINY


@pytest.mark.parametrize("many", [False, True])
def test_rounded_infinite_bin_bounds_the_exact_masses_far_in_the_tail(many: bool) -> None:
    """The rounded loss of σ = 2, q = 0.05 (remove) on a grid ending where the Q-tail is
    ~4e-312 (subnormal): its infinite bin's P-mass is a lower and its Q-mass an upper bound
    of the exact masses above the last bin (old: Q-mass 1.6e-322 against 3.6e-312). Both the
    one-source and the batched evaluation."""
    mp.mp.dps = 40
    sigma, q, h, tail = 2.0, 0.05, 0.0004105939527606028, 2.0**-1011
    src = SubsampledLoss(GaussianLoss(1.0 / sigma), q, "remove")
    rd = discretize_rounded_many([src], h, tail)[0] if many else discretize_rounded(src, h, tail)
    edge = (rd.offset + rd.p.size - 1 + 0.5) * h  # the infinite bin: losses above it
    s, qq = mp.mpf(sigma), mp.mpf(q)
    x = s * s * mp.log((mp.exp(mp.mpf(edge)) - (1 - qq)) / qq) + mp.mpf(0.5)
    q_mass = mp.ncdf(-x / s)
    p_mass = (1 - qq) * q_mass + qq * mp.ncdf(-(x - 1) / s)
    assert q_mass > mp.mpf("1e-313")  # the case: a subnormal Q-tail, flushed by ndtr
    assert mp.mpf(rd.r_inf) >= q_mass
    assert mp.mpf(rd.p_inf) <= p_mass


def test_lower_end_at_or_below_the_exact_epsilon_at_delta_1e_300() -> None:
    """The review's case: the exact δ (two steps, both directions) at the lower end is at
    least δ; old: the lower end 20.264146947, exact δ there 0.99997e-300."""
    sigma, q, delta = 2.0, 0.05, 1e-300
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=2, delta=delta)
    assert got.bracket is not None
    low, up = (float(v) for v in got.bracket)
    assert 0.0 < low <= up
    exact = max(log_delta_two(low, (sigma, q), (sigma, q), "remove"),
                log_delta_two(low, (sigma, q), (sigma, q), "add"))
    assert exact >= math.log(delta) + math.log1p(-1e-10), low
    assert up <= low * 1.001
