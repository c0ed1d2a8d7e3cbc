"""Distribution tests of the exact samplers and the mechanisms' noise (Canonne et al. 2020,
https://arxiv.org/abs/2004.00010, Algorithms 1-3).

Every statistical check uses a fixed seed where the path can be seeded, and a rejection
threshold at tail probability P_FAIL = 5e-8 (two-sided z = 5.45 for the moment checks). The
file makes 20 statistical checks, so it fails by chance with probability below
20 × 5e-8 = 1e-6 (the exhaustive check of ``bernoulli_ratio`` is deterministic). Paths that
read the OS CSPRNG cannot be seeded by design; their checks use the same thresholds.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from approxdp import DiscreteGaussianMechanism, LaplaceMechanism, TruncatedLaplaceMechanism
from approxdp.mechanisms.bernoulli import bernoulli_exp_fraction, bernoulli_exp_integer
from approxdp.mechanisms.exact_sampling import DiscreteGaussianSampler, DiscreteLaplaceSampler
from approxdp.mechanisms.randomness import GeneratorBits, SecureBits, uniform_below
from approxdp.profiles.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_pmf,
)

P_FAIL = 5e-8
Z_TWO_SIDED = 5.45  # P[|N(0,1)| > 5.45] ≈ 5e-8


def _exact_pmf(ys, sigma2):
    """P[Y = y] ∝ exp(−y²/(2σ²)) at 40 digits, σ² an exact fraction."""
    mp.mp.dps = 40
    s2 = mp.mpf(sigma2.numerator) / sigma2.denominator
    half = int(40 * mp.sqrt(s2)) + 40
    z = mp.fsum(mp.e ** (-(mp.mpf(k) ** 2) / (2 * s2)) for k in range(-half, half + 1))
    return np.array([float(mp.e ** (-(mp.mpf(int(y)) ** 2) / (2 * s2)) / z) for y in ys])


def _chi_square_ok(sample, support, probs):
    """Cells with expected count below 5 (and everything outside ``support``) are pooled into
    one cell; True when the chi-square p-value is above P_FAIL."""
    counts = np.array([np.sum(sample == y) for y in support], dtype=np.float64)
    expected = probs * sample.size
    big = expected >= 5
    obs = np.append(counts[big], sample.size - counts[big].sum())
    exp = np.append(expected[big], sample.size - expected[big].sum())
    if exp[-1] < 5:  # nothing worth a cell outside: fold the remainder into the largest cell
        obs, exp = obs[:-1], exp[:-1]
        obs[np.argmax(exp)] += sample.size - obs.sum()
        exp[np.argmax(exp)] += sample.size - exp.sum()
    stat = float(np.sum((obs - exp) ** 2 / exp))
    return stats.chi2.sf(stat, obs.size - 1) > P_FAIL


@pytest.mark.parametrize("sigma", [0.7, 3.0, 25.0])
def test_discrete_gaussian_sampler_chi_square(sigma):
    sampler = DiscreteGaussianSampler.at_least(sigma)
    sample = sampler.sample(GeneratorBits(np.random.default_rng(100 + int(sigma))), 200_000)
    support = np.arange(-int(6 * sampler.sigma) - 1, int(6 * sampler.sigma) + 2)
    assert _chi_square_ok(sample, support, _exact_pmf(support, sampler.sigma_squared))


def test_discrete_gaussian_python_integer_path_is_exact():
    # Force every candidate with |Y| > 2 through the unbounded-integer path.
    sampler = DiscreteGaussianSampler.at_least(2.0, y_fast=2)
    sample = sampler.sample(GeneratorBits(np.random.default_rng(7)), 30_000)
    support = np.arange(-12, 13)
    assert _chi_square_ok(sample, support, _exact_pmf(support, sampler.sigma_squared))


def test_discrete_gaussian_secure_source_moments():
    sampler = DiscreteGaussianSampler.at_least(10.0)
    x = sampler.sample(SecureBits(), 400_000).astype(np.float64)
    z = Z_TWO_SIDED
    assert abs(x.mean()) < z * 10.0 / math.sqrt(x.size)
    var_se = math.sqrt(2.0) * 100.0 / math.sqrt(x.size)
    assert abs(x.var() - float(sampler.sigma_squared)) < z * var_se


def test_sampler_rounds_sigma_up_only():
    for sigma in [0.3, 1.0, 1.5, 3.7404, 1e3 + 0.1, 5e4]:
        s = DiscreteGaussianSampler.at_least(sigma)
        assert s.sigma_squared >= sigma**2 or float(s.sigma_squared) >= sigma**2
        assert s.sigma <= sigma * (1 + 2**-18)


def test_discrete_laplace_sampler_chi_square():
    sampler = DiscreteLaplaceSampler(s=3, t=7)  # P ∝ exp(−3|y|/7)
    sample = sampler.sample(GeneratorBits(np.random.default_rng(8)), 200_000)
    support = np.arange(-30, 31)
    w = math.exp(-3 / 7)
    probs = (1 - w) / (1 + w) * w ** np.abs(support)
    assert _chi_square_ok(sample, support, probs)


def test_bernoulli_exp_rates():
    bits = GeneratorBits(np.random.default_rng(9))
    n = 400_000
    for r, d in [(1, 3), (3, 3), (0, 5)]:
        hits = bernoulli_exp_fraction(bits, np.full(n, r, dtype=np.int64), d).mean()
        p = math.exp(-r / d)
        assert abs(hits - p) <= Z_TWO_SIDED * math.sqrt(p * (1 - p) / n) + 1e-12
    hits = bernoulli_exp_integer(bits, np.full(n, 2, dtype=np.int64)).mean()
    p = math.exp(-2)
    assert abs(hits - p) <= Z_TWO_SIDED * math.sqrt(p * (1 - p) / n)


def test_uniform_below_is_in_range_and_uniform():
    x = uniform_below(GeneratorBits(np.random.default_rng(10)), 7, 70_000)
    counts = np.bincount(x, minlength=7)
    assert x.min() >= 0 and x.max() < 7
    assert stats.chisquare(counts).pvalue > P_FAIL


def test_discrete_gaussian_pmf_matches_exact_values():
    ys = np.arange(-8, 9)
    for sigma in [0.5, 1.0, 3.7]:
        from fractions import Fraction

        exact = _exact_pmf(ys, Fraction(sigma) ** 2)
        np.testing.assert_allclose(discrete_gaussian_pmf(ys, sigma), exact, rtol=1e-13)


@pytest.mark.parametrize(
    ("eps", "sigma", "sens"), [(1.0, 4.0, 1), (0.5, 3.3, 2), (2.0, 10.0, 1), (5.0, 1.5, 1)]
)
def test_discrete_gaussian_profile_matches_mpmath(eps, sigma, sens):
    mp.mp.dps = 50
    s = mp.mpf(sigma)
    half = int(60 * sigma) + 60
    w = [mp.e ** (-(mp.mpf(k) ** 2) / (2 * s * s)) for k in range(-half, half + 1)]
    z = mp.fsum(w)

    def tail(x):  # P[Y > x]
        start = int(mp.floor(x)) + 1
        return mp.fsum(w[start + half :]) / z

    exact = tail(eps * s * s / sens - mp.mpf(sens) / 2) - mp.e**eps * tail(
        eps * s * s / sens + mp.mpf(sens) / 2
    )
    assert discrete_gaussian_delta(eps, sigma, sens) == pytest.approx(float(exact), rel=1e-11)


def test_discrete_gaussian_profile_worst_shift_is_sensitivity():
    # Canonne et al. 2020 Thm 7 covers all shifts ≤ Δ: check smaller shifts never give a larger δ.
    for eps in [0.1, 1.0, 3.0]:
        deltas = [discrete_gaussian_delta(eps, 2.5, k) for k in range(1, 6)]
        assert all(a <= b for a, b in itertools.pairwise(deltas))


def test_discrete_gaussian_mechanism_calibration_is_least_and_private():
    m = DiscreteGaussianMechanism(1.0, 1e-5, 1)
    assert m.privacy_profile(1.0) <= 1e-5
    assert discrete_gaussian_delta(1.0, m.sigma * (1 - 1e-6), 1) > 1e-5


def test_laplace_fast_path_ks():
    mech = LaplaceMechanism(0.5, 2.0)
    x = mech.release(np.zeros(100_000), rng=np.random.default_rng(3))
    assert stats.kstest(np.asarray(x), stats.laplace(scale=4.0).cdf).pvalue > P_FAIL


def test_laplace_secure_path_ks():
    mech = LaplaceMechanism(0.5, 2.0)
    noise = mech.secure_noise(1)
    draws = noise.lattice.to_reals(noise.sampler.sample(SecureBits(), 100_000))
    # Lattice granularity 2^-11 is far below the KS resolution at this n.
    assert stats.kstest(draws, stats.laplace(scale=4.0).cdf).pvalue > P_FAIL


def test_truncated_laplace_never_exceeds_tau_and_fits_its_law():
    mech = TruncatedLaplaceMechanism(1.0, 0.01, 1.0)
    secure = mech.release(np.zeros(1)) + 0.0
    assert abs(float(secure[0])) <= mech.tau
    # Scalar secure releases, batched through the same sampler the release uses.
    noise = mech.secure_noise(1)
    draws = noise.lattice.to_reals(noise.sampler.sample(SecureBits(), 100_000, bound=noise.bound))
    assert np.max(np.abs(draws)) <= mech.tau
    fast = np.asarray(mech.release(np.zeros(100_000), rng=np.random.default_rng(4)))
    assert np.max(np.abs(fast)) <= mech.tau_for(100_000)
    secure_vec = mech.release(np.zeros(1000))
    assert np.max(np.abs(secure_vec)) <= mech.tau_for(1000)
    lam, tau = mech.scale, mech.theorem_tau()
    one = np.array([float(mech.release(0.0, rng=np.random.default_rng(s))) for s in range(2000)])
    assert np.max(np.abs(one)) <= tau
    mass = -math.expm1(-tau / lam)

    def cdf(y):
        y = np.clip(y, -tau, tau)
        return np.where(
            y < 0,
            0.5 * (np.exp(y / lam) - math.exp(-tau / lam)) / mass,
            0.5 + 0.5 * (-np.expm1(-y / lam)) / mass,
        )

    assert stats.kstest(draws, cdf).pvalue > P_FAIL
    assert stats.kstest(one, cdf).pvalue > P_FAIL


def test_gaussian_fast_path_ks():
    from approxdp import GaussianMechanism

    mech = GaussianMechanism(1.0, 1e-5, 2.0)
    x = np.asarray(mech.release(np.zeros(100_000), rng=np.random.default_rng(5)))
    assert stats.kstest(x, stats.norm(scale=mech.sigma).cdf).pvalue > P_FAIL


def test_gaussian_secure_lattice_noise_ks():
    from approxdp import GaussianMechanism

    noise = GaussianMechanism(1.0, 1e-5, 2.0).secure_noise(1)
    draws = noise.lattice.to_reals(noise.sampler.sample(SecureBits(), 100_000))
    # σ is 2^12 lattice units or more: the lattice is far below the KS resolution at this n.
    assert stats.kstest(draws, stats.norm(scale=noise.sigma).cdf).pvalue > P_FAIL


def test_small_batches_use_the_same_exact_laws():
    """Requests of at most SMALL_BATCH values take the one-at-a-time Python-integer path."""
    from approxdp.mechanisms.exact_sampling import SMALL_BATCH

    bits = GeneratorBits(np.random.default_rng(18))
    gauss = DiscreteGaussianSampler.at_least(2.5)
    sample = np.concatenate([gauss.sample(bits, SMALL_BATCH) for _ in range(4000)])
    support = np.arange(-20, 21)
    assert _chi_square_ok(sample, support, _exact_pmf(support, gauss.sigma_squared))
    lap = DiscreteLaplaceSampler(s=3, t=7)
    sample = np.concatenate([lap.sample(bits, SMALL_BATCH, bound=5) for _ in range(4000)])
    support = np.arange(-5, 6)
    w = math.exp(-3 / 7)
    probs = w ** np.abs(support)
    assert np.max(np.abs(sample)) <= 5
    assert _chi_square_ok(sample, support, probs / probs.sum())


class _ScriptedBits:
    """A fake source that returns the given words in order (for exhaustive checks)."""

    secure = False

    def __init__(self, words):
        self.queue = list(words)

    def words(self, n, bits):
        dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
        out = np.array(self.queue[:n], dtype=dtype)
        del self.queue[:n]
        return out


@pytest.mark.parametrize(
    ("d", "rs"), [(5, [0, 1, 4, 5]), ((1 << 17) + 3, [0, 1, 5, 1 << 16, (1 << 17) + 2])]
)
def test_bernoulli_ratio_decides_every_word_exactly(d, rs):
    """Each value W of the b-bit word, fed as top bits then low bits: the lazy decision equals
    [W < r] when W < d, and redraws when W ≥ d (the scripted redraw W = 0 then answers r > 0).
    Every W whose top bits are within 2 of those of r or d, plus every 97th other W."""
    from approxdp.mechanisms.randomness import bernoulli_ratio

    b = (d - 1).bit_length()
    h = min(b, 16)
    shift = b - h
    for r in rs:
        near = {(x >> shift) + k for x in (r, d) for k in range(-2, 3)}
        words = {w for hi in near for w in range(hi << shift, (hi + 1) << shift)}
        words |= set(range(0, 1 << b, 97))
        for w in sorted(x for x in words if 0 <= x < 1 << b):
            w_hi, w_lo = w >> shift, w & ((1 << shift) - 1)
            script = [w_hi << (16 - h)]
            if shift and (w_hi == r >> shift or w_hi == d >> shift):
                script.append(w_lo)  # the low bits are drawn only on a tie
            script += [0, 0]  # the redraw, if any: W = 0 (top bits, low bits if tied)
            got = bool(bernoulli_ratio(_ScriptedBits(script), np.array([r]), d)[0])
            assert got == (w < r if w < d else r > 0), (d, r, w)
