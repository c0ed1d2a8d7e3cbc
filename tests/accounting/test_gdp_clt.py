"""The GDP central-limit approximation: its formula, its duality, its label, and a concrete case
where it under-reports ε (which is why it is an approximation and never a default)."""

from __future__ import annotations

import math

import dp_accounting
import mpmath as mp
import pytest
from dp_accounting.pld import pld_privacy_accountant as pld
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from approxdp.accounting import (
    Guarantee,
    gdp_clt_delta,
    gdp_clt_epsilon,
    gdp_clt_mu,
    gdp_to_delta,
    gdp_to_epsilon,
    rdp_dpsgd_epsilon,
)
from approxdp.errors import ApproxDPError, InvalidParameterError, ParameterTypeError

Q, SIGMA, STEPS, DELTA = 256 / 60000, 1.1, 14063, 1e-5


def _true_epsilon(sigma: float, q: float, steps: int, delta: float, grid: float) -> float:
    """dp_accounting's PLD (pessimistic: an upper bound on the true ε, tight to ~grid)."""
    acc = pld.PLDAccountant(value_discretization_interval=grid)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return float(acc.get_epsilon(delta))


def test_mu_is_the_published_formula() -> None:
    for sigma, q, steps in [(1.1, Q, STEPS), (0.5, 0.3, 7), (8.0, 1e-4, 10**6)]:
        want = q * math.sqrt(steps * math.expm1(sigma**-2))
        assert gdp_clt_mu(sigma, q, steps) == pytest.approx(want, rel=1e-14)
    assert gdp_clt_mu(math.inf, 0.5, 10) == 0.0
    assert gdp_clt_mu(0.01, 0.5, 10) == math.inf  # e^{10^4} overflows: no guarantee
    assert gdp_clt_epsilon(0.01, 0.5, 10, DELTA).epsilon == math.inf


def test_duality_matches_mpmath() -> None:
    """δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2) (Dong-Roth-Su Cor. 2.13) at 50 digits, and
    the ε returned is on the private side of it."""
    for mu, eps in [(0.5, 0.3), (1.0, 4.0), (3.0, 12.0), (0.05, 0.001)]:
        with mp.workdps(50):
            m, e = mp.mpf(mu), mp.mpf(eps)
            ref = mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2)
            assert gdp_to_delta(mu, eps) == pytest.approx(float(ref), rel=1e-12)
        delta = float(ref)
        back = gdp_to_epsilon(mu, delta)
        assert back == pytest.approx(eps, rel=1e-9)
        assert gdp_to_delta(mu, back) <= delta


def test_agrees_with_the_tf_privacy_style_root_finder() -> None:
    """The peers' recipe (brentq on the duality with scipy's norm.cdf) as a cross-check."""
    mu = gdp_clt_mu(SIGMA, Q, STEPS)

    def f(eps: float) -> float:
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
            -eps / mu - mu / 2) - DELTA

    theirs = optimize.brentq(f, 0.0, 50.0, xtol=1e-14)
    assert gdp_clt_epsilon(SIGMA, Q, STEPS, DELTA).epsilon == pytest.approx(theirs, rel=1e-9)


def test_is_labelled_an_approximation() -> None:
    g = gdp_clt_epsilon(SIGMA, Q, STEPS, DELTA)
    assert isinstance(g, Guarantee) and g.kind == "approximation" and g.delta == DELTA
    assert "approximation" in g.rule and "1911.11607" in g.rule
    d = gdp_clt_delta(SIGMA, Q, STEPS, g.epsilon)
    assert d.kind == "approximation" and d.delta == pytest.approx(DELTA, rel=1e-9)


def test_under_reports_on_the_dpsgd_example() -> None:
    """q = 256/60000, σ = 1.1, T = 14,063, δ = 1e-5: CLT 2.32 < true 2.38 < RDP 2.60."""
    clt = gdp_clt_epsilon(SIGMA, Q, STEPS, DELTA).epsilon
    true_eps = _true_epsilon(SIGMA, Q, STEPS, DELTA, 1e-4)
    rdp = rdp_dpsgd_epsilon(SIGMA, Q, STEPS, DELTA).epsilon
    assert clt == pytest.approx(2.3244, abs=1e-4)
    assert true_eps == pytest.approx(2.38, abs=0.01)
    assert clt < true_eps - 0.04 < rdp


def test_under_reports_badly_at_one_step() -> None:
    """One step, q = 0.01, σ = 1, δ = 1e-5: CLT 0.037 against a true 0.199 (5x below)."""
    clt = gdp_clt_epsilon(1.0, 0.01, 1, DELTA).epsilon
    true_eps = _true_epsilon(1.0, 0.01, 1, DELTA, 1e-4)
    assert clt == pytest.approx(0.0368, abs=1e-4)
    assert true_eps == pytest.approx(0.199, abs=0.002)
    assert clt < true_eps / 5 < rdp_dpsgd_epsilon(1.0, 0.01, 1, DELTA).epsilon


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: gdp_clt_mu(0.0, Q, STEPS), InvalidParameterError, "noise_multiplier"),
        (lambda: gdp_clt_mu(math.nan, Q, STEPS), InvalidParameterError, "noise_multiplier=nan"),
        (lambda: gdp_clt_mu(SIGMA, 0.0, STEPS), InvalidParameterError, "sample_rate"),
        (lambda: gdp_clt_mu(SIGMA, 1.01, STEPS), InvalidParameterError, "sample_rate"),
        (lambda: gdp_clt_mu(SIGMA, Q, 0), InvalidParameterError, "steps"),
        (lambda: gdp_clt_mu(SIGMA, Q, 1.5), InvalidParameterError, "steps"),
        (lambda: gdp_clt_epsilon(SIGMA, Q, STEPS, 0.0), InvalidParameterError, "delta"),
        (lambda: gdp_clt_epsilon(SIGMA, Q, STEPS, 1.0), InvalidParameterError, "delta"),
        (lambda: gdp_clt_epsilon("x", Q, STEPS, DELTA), ParameterTypeError, "noise_multiplier"),
        (lambda: gdp_clt_delta(SIGMA, Q, STEPS, -1.0), InvalidParameterError, "epsilon"),
        (lambda: gdp_to_epsilon(-1.0, DELTA), InvalidParameterError, "mu"),
        (lambda: gdp_to_epsilon(math.nan, DELTA), InvalidParameterError, "mu"),
        (lambda: gdp_to_delta(1.0, math.nan), InvalidParameterError, "epsilon"),
    ],
)
def test_bad_input_is_a_typed_one_line_error(call, error: type, words: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert issubclass(error, ApproxDPError) and words in str(info.value)
    assert "\n" not in str(info.value)


def test_edges() -> None:
    assert gdp_to_epsilon(0.0, DELTA) == 0.0
    assert gdp_to_delta(0.0, 0.0) == 0.0
    assert gdp_to_epsilon(math.inf, DELTA) == math.inf
    assert gdp_to_delta(math.inf, 3.0) == 1.0
    assert math.isfinite(gdp_clt_epsilon(SIGMA, Q, 10**9, DELTA).epsilon)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.5, 10.0), st.floats(0.5, 10.0), st.floats(1e-4, 1.0), st.integers(1, 10**5))
def test_monotone_in_noise_and_steps(s1: float, s2: float, q: float, steps: int) -> None:
    lo, hi = sorted((s1, s2))
    def eps(sigma: float, t: int) -> float:
        return float(gdp_clt_epsilon(sigma, q, t, DELTA).epsilon)

    assert eps(hi, steps) <= eps(lo, steps) <= eps(lo, steps + 1)
