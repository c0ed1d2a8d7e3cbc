"""Privacy bounds of the mechanisms against independent high-precision evaluations.

* the smoothing lemma behind the vector discrete Gaussian and the secure Gaussian release
  (profiles/discrete_gaussian_smoothing.py), checked with mpmath quadrature;
* the vector discrete Gaussian calibration never under-noises: exact hockey-stick divergences
  of integer shift vectors, by exact convolution at 30 digits, stay below the claimed δ;
* the domination certificate: the exact discrete profile stays below the Gaussian profile;
* the exact Laplace / truncated Laplace profiles, continuous and discrete, against numerical
  integrals and brute-force sums.
No randomness: nothing here can fail by chance.
"""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, stats

from approxdp import (
    DiscreteGaussianMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    TruncatedLaplaceMechanism,
)
from approxdp.calibration import calibrate_discrete_gaussian, calibrate_gaussian
from approxdp.profiles.discrete_gaussian import (
    discrete_gaussian_delta,
    discrete_gaussian_vector_log_delta,
    zcdp_log_delta,
)
from approxdp.profiles.discrete_gaussian_smoothing import (
    dominated_by_gaussian,
    smoothing_bound,
    smoothing_log_zeta,
)
from approxdp.profiles.gaussian import gaussian_delta
from approxdp.profiles.laplace import (
    discrete_laplace_delta,
    discrete_truncated_laplace_delta,
    laplace_delta,
    truncated_laplace_delta,
    truncated_laplace_tau,
)

# --- the smoothing lemma ---------------------------------------------------------------------


def test_smoothing_lemma_ratio_is_within_zeta():
    """P = N_Z(0, σ²) vs P̃ = K(N(0, t²)), K(x) = N_Z(x, b²): |ln P/P̃| ≤ ζ₁(b).

    P̃(y) by adaptive quadrature (relative error ~1e-13, far below ζ₁ ≈ 1.3e-5), with Z_b(x)
    from its Poisson series. The true deviation is much smaller than ζ₁ (the weight averages
    the oscillation of Z_b out), so this checks the direction of the lemma, not its tightness.
    """
    s, b = 3.0, 0.8
    t = math.sqrt(s * s - b * b)
    zeta1 = math.exp(smoothing_log_zeta(b))
    k = np.arange(1, 5)

    weights = np.exp(-2 * math.pi**2 * b * b * k * k)

    def z_b(x):
        series = float(np.sum(weights * np.cos(2 * math.pi * k * x)))
        return b * math.sqrt(2 * math.pi) * (1 + 2 * series)

    z_s = float(np.sum(np.exp(-(np.arange(-60, 61) ** 2) / (2 * s * s))))
    for y in [0, 1, 3, 7]:
        def integrand(x, y=y):
            return stats.norm.pdf(x, scale=t) * math.exp(-((y - x) ** 2) / (2 * b * b)) / z_b(x)

        edges = np.arange(y - 12, y + 13)
        p_tilde = sum(
            integrate.quad(integrand, lo, hi, epsabs=0, epsrel=1e-13)[0]
            for lo, hi in itertools.pairwise(edges)
        )
        p = math.exp(-(y * y) / (2 * s * s)) / z_s
        assert abs(math.log(p / p_tilde)) <= zeta1


def test_gaussian_profile_derivatives_used_by_the_lemma():
    """∂δ_G/∂μ = φ(ε/μ − μ/2) and |∂δ_G/∂ε| = R(a)·∂δ_G/∂μ with R the Mills ratio."""
    for eps, mu in [(0.5, 0.3), (1.0, 1.0), (3.0, 2.0)]:
        h = 1e-6
        d_mu = (gaussian_delta(eps, 1.0, mu + h) - gaussian_delta(eps, 1.0, mu - h)) / (2 * h)
        d_eps = (gaussian_delta(eps + h, 1.0, mu) - gaussian_delta(eps - h, 1.0, mu)) / (2 * h)
        x, a = eps / mu - mu / 2, eps / mu + mu / 2
        assert d_mu == pytest.approx(stats.norm.pdf(x), rel=1e-6)
        mills = stats.norm.sf(a) / stats.norm.pdf(a)
        assert -d_eps == pytest.approx(mills * d_mu, rel=1e-6)
        assert mills <= math.sqrt(math.pi / 2)


def test_smoothing_bound_refuses_where_it_does_not_apply():
    assert smoothing_bound(1.0, 1.0, 1, 1.2) is None  # b ≥ σ
    assert smoothing_bound(5.0, 1.0, 1, 0.3) is None  # b too small: θ_b ≥ 1/2 territory
    bound = smoothing_bound(5.0, 1.0, 3, 1.5)
    assert bound is not None and bound.t < 5.0 and bound.mu > 1.0 / bound.t


# --- the vector discrete Gaussian ------------------------------------------------------------


def _exact_vector_delta_mp(eps, sigma, shift):
    """Hockey-stick divergence of N_Z(0, σ²)^d vs the same shifted by the integer vector m, by
    exact convolution of the distribution of m·Y at 30 digits (Y ~ N_Z(0, σ²)^d)."""
    mp.mp.dps = 30
    s2 = mp.mpf(sigma) ** 2
    half = int(30 * sigma) + 10
    ys = range(-half, half + 1)
    w = [mp.e ** (-(mp.mpf(y) ** 2) / (2 * s2)) for y in ys]
    z = mp.fsum(w)
    dist = {0: mp.mpf(1)}
    for m in shift:
        new: dict[int, mp.mpf] = {}
        for total, p in dist.items():
            for y, q in zip(ys, w, strict=True):
                key = total + m * y
                new[key] = new.get(key, mp.mpf(0)) + p * q / z
        dist = new
    norm2 = sum(m * m for m in shift)
    total = mp.mpf(0)
    for sdot, p in dist.items():
        loss = (norm2 + 2 * mp.mpf(sdot)) / (2 * s2)  # output y vs y − m (mirrored side)
        if loss > eps:
            total += p * (1 - mp.e ** (eps - loss))
    return float(total)


def _exact_vector_delta(eps, sigma, shift):
    """The same by float64 convolution of the (positive) pmfs and an exactly rounded sum of
    positive terms (math.fsum): relative error ~1e-13, no cancellation anywhere."""
    half = int(40 * sigma) + 10
    y = np.arange(-half, half + 1)
    pmf = np.exp(-(y * y) / (2 * sigma**2))
    pmf /= math.fsum(pmf)
    dist, lo = np.ones(1), 0  # distribution of m·Y on lo, lo + 1, ...
    for m in (m for m in shift if m != 0):  # m_j = 0 contributes nothing to m·Y
        step = np.zeros((pmf.size - 1) * abs(m) + 1)
        step[:: abs(m)] = pmf
        dist, lo = np.convolve(dist, step), lo - half * abs(m)
    sdot = lo + np.arange(dist.size)
    loss = (sum(m * m for m in shift) + 2.0 * sdot) / (2 * sigma**2)
    keep = loss > eps
    return math.fsum(dist[keep] * -np.expm1(eps - loss[keep]))


VECTOR_CASES = [
    # (ε, δ, Δ₂, d, integer shift vectors with ‖m‖₂ ≤ Δ₂)
    (1.0, 1e-3, math.sqrt(2), 2, [(1, 1), (1, 0)]),
    (0.5, 1e-4, 2.0, 4, [(1, 1, 1, 1), (2, 0, 0, 0), (1, 1, 1, 0)]),
    (2.0, 1e-6, math.sqrt(3), 3, [(1, 1, 1)]),
    (4.0, 1e-2, math.sqrt(2), 2, [(1, 1)]),  # small σ: the zCDP bound is the better one
]


@pytest.mark.parametrize(("eps", "delta", "sens", "dim", "shifts"), VECTOR_CASES)
def test_vector_discrete_gaussian_never_under_noises(eps, delta, sens, dim, shifts):
    sigma = calibrate_discrete_gaussian(eps, delta, sens, dimension=dim)
    exact = [_exact_vector_delta(eps, sigma, m) for m in shifts]
    if dim == 2:  # cross-check the float convolution against 30-digit arithmetic
        assert exact[0] == pytest.approx(_exact_vector_delta_mp(eps, sigma, shifts[0]), rel=1e-10)
    assert max(exact) <= delta
    # ... and is not far from tight: the worst tested shift uses a good part of δ.
    assert max(exact) >= 0.2 * delta
    # The mechanism's sampler rounds σ up and re-verifies.
    mech = DiscreteGaussianMechanism(eps, delta, sens)
    assert mech.sampler(dim).sigma >= sigma


def test_vector_calibration_is_close_to_continuous_and_beats_zcdp():
    eps, delta, sens, dim = 0.5, 1e-6, 10.0, 100
    sigma = calibrate_discrete_gaussian(eps, delta, sens, dimension=dim)
    continuous = calibrate_gaussian(eps, delta, sens)
    assert continuous <= sigma <= continuous * 1.002
    assert zcdp_log_delta(eps, sens**2 / (2 * sigma**2)) > math.log(delta)  # zCDP alone fails


def test_scalar_profile_is_used_in_one_dimension():
    sigma = 4.0
    for eps in [0.3, 1.0, 2.0]:
        vec = discrete_gaussian_vector_log_delta(eps, sigma, 2.7, 1)
        assert vec == pytest.approx(math.log(discrete_gaussian_delta(eps, sigma, 2)), rel=1e-12)


# --- the domination certificate --------------------------------------------------------------


def test_domination_certificate_and_exact_profiles():
    s, m = 30.0, 3
    mu_above = m / s * (1 + 1e-3)
    assert dominated_by_gaussian(s, m, 1, mu_above) is not None
    assert dominated_by_gaussian(s, m, 1, m / s * (1 - 1e-3)) is None
    for eps in np.linspace(0.0, 1.5, 16):
        assert discrete_gaussian_delta(eps, s, m) <= gaussian_delta(eps, 1.0, mu_above)


def test_secure_gaussian_release_is_dominated_by_its_event():
    mech = GaussianMechanism(1.0, 1e-5, 1.0)
    noise = mech.secure_noise(1)
    assert noise.certificate.mu < mech.sensitivity / mech.sigma
    s_l, m_l = noise.sampler.sigma, int(noise.sensitivity)
    for eps in [0.0, 0.2, 0.6, 1.0, 1.5, 2.5]:
        exact = discrete_gaussian_delta(eps, s_l, m_l)
        assert exact <= gaussian_delta(eps, mech.sigma, mech.sensitivity)
    assert discrete_gaussian_delta(1.0, s_l, m_l) <= 1e-5


# --- Laplace and truncated Laplace profiles --------------------------------------------------


def _hockey_stick(p, q, eps):
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5, 0.99, 1.0, 1.7])
def test_truncated_laplace_profile_matches_numeric_integral(eps):
    lam, d, delta = 1.0, 1.0, 1e-2
    tau = truncated_laplace_tau(1.0, delta, d)
    norm = 2 * lam * -math.expm1(-tau / lam)

    def dens(y, c):
        return math.exp(-abs(y - c) / lam) / norm if abs(y - c) <= tau else 0.0

    def integrand(y):
        return max(dens(y, 0.0) - math.exp(eps) * dens(y, d), 0.0)

    pts = [-tau, d - tau, 0.0, d, tau]
    num = integrate.quad(integrand, -tau, tau, points=pts[1:-1], limit=400, epsabs=1e-14)[0]
    assert truncated_laplace_delta(eps, lam, tau, d) == pytest.approx(num, rel=1e-8)
    if eps >= 1.0:
        assert truncated_laplace_delta(eps, lam, tau, d) == pytest.approx(delta, rel=1e-12)
    else:
        assert truncated_laplace_delta(eps, lam, tau, d) > delta
    # A smaller shift is never worse (MLR argument of the module docstring).
    assert truncated_laplace_delta(eps, lam, tau, 0.5) <= truncated_laplace_delta(eps, lam, tau, d)


def _two_sided_geometric(rate, support):
    w = np.exp(-rate * np.abs(support))
    return w / w.sum()


@pytest.mark.parametrize(("rate", "shift"), [(0.3, 1), (0.3, 4), (0.05, 7), (1.0, 3)])
def test_discrete_laplace_profiles_match_brute_force(rate, shift):
    support = np.arange(-2000, 2001)
    p = _two_sided_geometric(rate, support)
    q = np.roll(p, shift)
    bound = 12
    pt = np.where(np.abs(support) <= bound, p, 0.0)
    pt /= pt.sum()
    qt = np.roll(pt, shift)
    # ε on a grid, including the breakpoints r(m − 2k) where a term enters the sum.
    grid = sorted({*np.linspace(0, rate * shift * 1.2, 13), *(rate * (shift - 2 * k)
                                                             for k in range(shift))})
    for eps in [e for e in grid if e >= 0]:
        assert discrete_laplace_delta(eps, rate, shift) == pytest.approx(
            _hockey_stick(p, q, eps), rel=1e-9, abs=1e-15
        )
        assert discrete_truncated_laplace_delta(eps, rate, shift, bound) == pytest.approx(
            _hockey_stick(pt, qt, eps), rel=1e-9, abs=1e-15
        )


def test_mechanism_profiles_cover_every_path():
    lap = LaplaceMechanism(1.0, 1.0)
    noise = lap.secure_noise(1)
    for eps in [0.0, 0.3, 0.9]:
        assert lap.privacy_profile(eps) >= laplace_delta(eps, 1.0, 1.0)
        assert lap.privacy_profile(eps) >= discrete_laplace_delta(
            eps, float(noise.sampler.rate), noise.sensitivity
        )
    assert lap.privacy_profile(1.0) == 0.0
    tl = TruncatedLaplaceMechanism(1.0, 1e-3)
    profile = tl.privacy_profile(np.array([0.0, 0.5, 1.0, 3.0]))
    assert not np.any(np.isnan(profile))
    assert np.all(np.diff(profile) <= 0)
    assert profile[2] <= 1e-3 < profile[1]
    assert profile[3] <= 1e-3
