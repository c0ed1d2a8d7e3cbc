"""The closed-form routes (full batch q = 1: T Gaussians compose to one; a single step: the
one-step subsampled profile) against 50-digit mpmath. The ε bracket's lower end used to be the
rounded-UP ε itself, ~1e-12 relative (in δ) above the truth on every ask; it is now stepped
down until the profile surely exceeds δ there. The δ bracket near and below the subnormal
range was rounded to nearest by exp: an upper end 1.0869e-322 below the exact 1.09775e-322,
and 0 where the exact δ is positive. These tests fail on the old code."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta, dpsgd_epsilon
from approxdp.accounting.dpsgd.training import TrainingAccountant
from subsampled_exact import log_delta_two


def _gauss(eps: mp.mpf, mu: mp.mpf) -> mp.mpf:
    """δ(ε) of the Gaussian mechanism with μ = Δ/σ (Balle, Wang 2018, Thm 8)."""
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def _exact(eps: float, sigma: float, q: float, steps: int) -> mp.mpf:
    """δ(ε) at 50 digits: T full-batch steps (one Gaussian, μ = √T/σ) or one subsampled step
    (the larger of remove, q·δ_G(log(1 + (e^ε − 1)/q)), and add, c·δ_G(log(q e^ε / c)),
    c = 1 − (1 − q)e^ε)."""
    mp.mp.dps = 50
    e, mu, qq = mp.mpf(eps), mp.sqrt(steps) / mp.mpf(sigma), mp.mpf(q)
    if q == 1.0:
        return _gauss(e, mu)
    remove = qq * _gauss(mp.log(1 + mp.expm1(e) / qq), mu)
    c = 1 - (1 - qq) * mp.exp(e)
    add = c * _gauss(mp.log(qq * mp.exp(e) / c), mu) if c > 0 else mp.mpf(0)
    return max(remove, add)


@pytest.mark.parametrize(("sigma", "q", "steps", "delta"), [
    (1.0, 1.0, 2, 1e-6), (0.4, 1.0, 10, 1e-300), (10.0, 1.0, 3, 1e-3), (2.0, 1.0, 1, 1e-12),
    (5.0, 1.0, 10, 1e-150), (0.7, 1.0, 2, 1e-320),
    (3.0, 0.3, 1, 1e-6), (1.0, 0.01, 1, 1e-100), (0.5, 1e-4, 1, 1e-300),
])
def test_epsilon_bracket_holds_the_exact_epsilon(
    sigma: float, q: float, steps: int, delta: float
) -> None:
    """The exact δ at the lower end is ≥ δ and at the upper end ≤ δ; width ≤ 1e-10."""
    got = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta)
    assert got.bracket is not None
    low, up = (float(v) for v in got.bracket)
    assert up == float(got.epsilon) and 0.0 < low < up <= low * (1.0 + 1e-10)
    assert _exact(low, sigma, q, steps) >= delta
    assert _exact(up, sigma, q, steps) <= delta


@pytest.mark.parametrize(("sigma", "q", "steps", "eps"), [
    (3.0, 1.0, 2, 18.1526),  # was 1.0869e-322 (exact 1.09775e-322)
    (3.0, 1.0, 2, 18.2053),  # was 0 (exact 1.50e-324)
    (1.0, 0.5, 1, 38.2),  # was 0 (exact 1.09e-324)
    (1.0, 0.5, 1, 38.0449),  # lower end was 4.2e-322 (exact 4.18e-322)
    (0.5, 1.0, 3, 150.0),  # was 0 (exact 4.3e-379)
    (1.0, 1.0, 1, 37.0),
])
def test_delta_bracket_holds_the_exact_delta_where_it_is_subnormal(
    sigma: float, q: float, steps: int, eps: float
) -> None:
    got = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=steps, epsilon=eps)
    assert got.bracket is not None
    low, up = (float(v) for v in got.bracket)
    exact = _exact(eps, sigma, q, steps)
    assert mp.mpf(low) <= exact <= mp.mpf(up)
    assert up == float(got.delta) and up <= max(exact * (1 + 1e-11), 2.3e-308)


def test_training_accountant_answers_after_a_subnormal_delta() -> None:
    """One step whose exact δ at ε underflows (its upper end the least normal float), then a
    second step asked at the same ε: the running route sizes its windows by the first answer
    (a subnormal one, 1e-323, made it take log 0: ValueError)."""
    acc = TrainingAccountant()
    acc.step(noise_multiplier=3.467, sample_rate=0.024, steps=1)
    first = acc.delta(38.77)
    assert 0.0 < float(first.delta) <= 2.3e-308
    acc.step(noise_multiplier=3.047, sample_rate=0.089, steps=1)
    second = acc.delta(38.77)
    exact = max(log_delta_two(38.77, (3.467, 0.024), (3.047, 0.089), "remove"),
                log_delta_two(38.77, (3.467, 0.024), (3.047, 0.089), "add"))
    assert float(second.delta) > 0.0 and math.log(float(second.delta)) >= exact
