"""The Gaussian-DP currency of the filter: every μ is certified (at least the true least
dominating μ, checked against mpmath at 50 digits), dominates on dense grids, and is tight
where the derivation says so."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from approxdp.accounting.budget.gdp import gaussian_mu, laplace_mu, pure_dp_mu

mp.mp.dps = 50
EPSILONS = [1e-12, 1e-6, 1e-3, 0.01, 0.1, 0.5, 0.75, 0.999, 1.0, 1.001, 2.0, 5.0, 10.0, 30.0,
            100.0, 700.0]


def _gauss_profile(x: mp.mpf, mu: mp.mpf) -> mp.mpf:
    """δ(x) of G_μ, for x >= 0 (mpmath)."""
    return mp.ncdf(-x / mu + mu / 2) - mp.e**x * mp.ncdf(-x / mu - mu / 2)


def _exact_pure(eps: float) -> mp.mpf:
    with mp.workdps(50 + int(eps / 2)):  # tanh(ε/2) is 1 − 2e^(−ε) + ...: keep its digits
        e = mp.mpf(eps)
        return +(2 * mp.sqrt(2) * mp.erfinv(mp.tanh(e / 2)))


def _exact_laplace(eps: float) -> mp.mpf:
    with mp.workdps(50 + int(eps / 4)):
        e = mp.mpf(eps)
        return +(2 * mp.sqrt(2) * mp.erfinv(-mp.expm1(-e / 2)))


@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_dp_mu_is_rounded_up_and_accurate(eps: float) -> None:
    got = mp.mpf(pure_dp_mu(eps))
    exact = _exact_pure(eps)
    assert got >= exact
    assert (got - exact) / exact < 1e-10


@pytest.mark.parametrize("eps", EPSILONS)
def test_laplace_mu_is_rounded_up_and_accurate(eps: float) -> None:
    got = mp.mpf(laplace_mu(eps))
    exact = _exact_laplace(eps)
    assert got >= exact
    assert (got - exact) / exact < 1e-10
    assert laplace_mu(eps) <= pure_dp_mu(eps)  # the Laplace curve is above the ε-DP curve


def test_huge_epsilons_stay_finite_and_ordered() -> None:
    for eps in (1e3, 1.5e3, 1e4, 1e6, 1e300):
        assert math.isfinite(pure_dp_mu(eps)) and math.isfinite(laplace_mu(eps))
        assert laplace_mu(eps) <= pure_dp_mu(eps)
    assert pure_dp_mu(0.0) == laplace_mu(0.0) == 0.0
    assert pure_dp_mu(math.inf) == math.inf
    # monotone in ε across the branch points of the numerics (1 and the underflow)
    grid = np.concatenate([np.linspace(0.9, 1.1, 41), np.linspace(1300, 1600, 31)])
    for fn in (pure_dp_mu, laplace_mu):
        values = [fn(float(e)) for e in grid]
        assert all(b >= a for a, b in itertools.pairwise(values)), fn.__name__


def test_gaussian_mu_is_delta_over_sigma_rounded_up() -> None:
    assert gaussian_mu(5.0) == math.nextafter(0.2, math.inf)
    assert gaussian_mu(2.0, 3.0) >= 1.5
    assert gaussian_mu(math.inf) == 0.0 == gaussian_mu(1.0, 0.0)


@pytest.mark.parametrize("eps", [0.1, 0.7536, 1.0, 3.0, 10.0])
def test_the_epsilon_dp_curve_lies_above_g_mu_and_touches_it(eps: float) -> None:
    """Dominance in privacy-profile form: δ_{ε-DP}(x) = (1 − e^(x−ε))₊ / ... is at most the
    Gaussian profile at every x ≥ 0; randomized response meets G_μ at its symmetric point."""
    mu = mp.mpf(pure_dp_mu(eps))
    e = mp.mpf(eps)
    # the ε-DP curve's profile: δ(x) = (1 − e^(x − ε)) / (1 + e^ε) · ... for RR:
    # RR(ε) has privacy loss ±ε with P-masses p = e^ε/(1+e^ε), 1 − p; δ(x) = p − e^x (1 − p)
    p = mp.e**e / (1 + mp.e**e)
    for x in np.linspace(0.0, eps, 120):
        xx = mp.mpf(float(x))
        rr = max(mp.mpf(0), p - mp.e**xx * (1 - p))
        assert rr <= _gauss_profile(xx, mu) * (1 + mp.mpf(10) ** -30)
    # tight: the symmetric kink α* = 1/(1+e^ε) is on G_μ, so a slightly smaller μ fails there
    smaller = mu * (1 - mp.mpf(10) ** -6)
    alpha = 1 / (1 + mp.e**e)
    g = mp.ncdf(mp.sqrt(2) * mp.erfinv(1 - 2 * alpha) - smaller)  # G_μ(α*) = Φ(Φ⁻¹(1−α*) − μ)
    assert g > alpha


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.7536, 1.0, 3.0, 10.0, 40.0])
def test_laplace_profile_lies_below_the_gaussian_one_and_touches_at_zero(eps: float) -> None:
    """The Laplace mechanism's profile 1 − e^((x−ε)/2) on [0, ε] is at most G_μ's; at x = 0
    (total variation) they are equal, so a smaller μ fails."""
    mu = mp.mpf(laplace_mu(eps))
    e = mp.mpf(eps)
    xs = np.concatenate([np.linspace(0.0, eps, 150), np.geomspace(1e-9, eps, 50)])
    for x in xs:
        xx = mp.mpf(float(x))
        lap = -mp.expm1((xx - e) / 2)
        assert lap <= _gauss_profile(xx, mu) * (1 + mp.mpf(10) ** -30), float(x)
    smaller = mu * (1 - mp.mpf(10) ** -6)
    assert -mp.expm1(-e / 2) > _gauss_profile(mp.mpf(0), smaller)


def test_laplace_profile_numerically_independent_of_the_closed_form() -> None:
    """The Laplace profile used above, from its densities by quadrature (mpmath)."""
    eps = mp.mpf("0.7536")

    def lap(y: mp.mpf, m: mp.mpf) -> mp.mpf:
        return mp.e ** (-abs(y - m)) / 2

    for x in (mp.mpf(0), mp.mpf("0.3"), mp.mpf("0.7")):
        f = lambda y, x=x: max(mp.mpf(0), lap(y, 0) - mp.e**x * lap(y, eps))  # noqa: E731
        value = mp.quad(f, [-mp.inf, 0, (eps - x) / 2, eps, mp.inf])
        assert abs(value - (-mp.expm1((x - eps) / 2))) < mp.mpf(10) ** -25
