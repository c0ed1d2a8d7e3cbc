"""The lower ends far in the tail: a test's Q-tail is about e^(−t) times its P-tail, so at
δ = 1e-300 it underflows past ε ≈ 18 and at any δ past ε ≈ 709. The linear bounds sank into
their subnormal floor there and the tests certified nothing beyond ε ≈ 710 (σ = 0.4, q = 0.5,
T = 2, δ = 1e-300: lower end 127.17 against the exact 135.48; T = 10,000, δ = 1e-12: 710.7
against an upper end of 12,786). The Q-tails are now also bounded in log space
(:meth:`ComposedPLD.log_upper_tails`). Exact references: :mod:`subsampled_exact`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta, dpsgd_epsilon
from approxdp.accounting.pld import composed
from approxdp.accounting.pld.accounting import clear_caches
from subsampled_exact import log_delta_two

#: the reference's own error (relative, in δ)
REF = 1e-10


def _log_exact(eps: float, sigma: float, q: float) -> float:
    return max(log_delta_two(eps, (sigma, q), (sigma, q), way) for way in ("remove", "add"))


def test_epsilon_at_delta_1e300_is_bracketed_tightly() -> None:
    """σ = 0.4, q = 0.5, T = 2, δ = 1e-300: the lower end at or below the truth and the
    bracket within 0.1 % (was 6.5 % wide: lower end 127.17)."""
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=0.4, sample_rate=0.5, steps=2, delta=1e-300)
    assert got.bracket is not None
    low, up = got.bracket
    assert _log_exact(low, 0.4, 0.5) >= math.log(1e-300) + math.log1p(-REF)
    assert _log_exact(up, 0.4, 0.5) <= math.log(1e-300) + math.log1p(REF)
    assert up <= low * 1.001


@pytest.mark.parametrize("eps", [130.0, 135.0])
def test_delta_lower_end_far_in_the_tail(eps: float) -> None:
    """δ(ε) of order 1e-276 and 1e-298: the lower end at or below the exact δ and within 1 %
    of it (it was 0: every test's Q-tail had underflowed)."""
    clear_caches()
    got = dpsgd_delta(noise_multiplier=0.4, sample_rate=0.5, steps=2, epsilon=eps)
    assert got.bracket is not None
    low = float(got.bracket[0])
    exact = _log_exact(eps, 0.4, 0.5)
    assert low > 0.0 and math.log(low) <= exact + REF
    assert math.log(low) >= exact + math.log(0.99)


@pytest.mark.parametrize(("sigma", "q", "steps", "delta"), [
    (0.4, 0.5, 10_000, 1e-12),  # was (710.67, 12786.45)
    (0.4, 0.5, 500, 1e-5),  # was (727.17, 777.93)
])
def test_large_epsilon_bracket_within_precision(
    sigma: float, q: float, steps: int, delta: float
) -> None:
    """ε in the hundreds and thousands (mean-dominated, many steps): the bracket within
    0.1 % (its lower end was stuck near 710-730 however large ε was)."""
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta)
    assert got.bracket is not None
    low, up = got.bracket
    assert 700.0 < low <= up <= low * 1.001


def test_delta_tests_never_cap_e_to_the_epsilon() -> None:
    """ε = 705 > 700: a test with P-mass 0.5 and Q-mass e^−702 certifies nothing
    (0.5 − e^3 < 0); e^ε capped at e^700 made it certify δ ≥ 0.365."""
    a = np.array([0.5])
    b = np.array([math.exp(-702.0)])
    assert composed.test_delta(a, b, 705.0) == 0.0
    assert composed.test_delta(a, b, 705.0, np.log(b)) == 0.0
    # and where the Q-mass is not a normal float, its log decides: e^(ε + log b) exactly
    tiny = np.array([0.0])  # (a bound that underflowed)
    assert composed.test_delta(a, tiny, 750.0, np.array([-760.0])) == pytest.approx(
        0.5 - math.exp(-10.0), rel=1e-9)
    assert composed.test_epsilon(a, tiny, 1e-3, np.array([-760.0])) == pytest.approx(
        760.0 + math.log(0.5 - 1e-3), rel=1e-11)


@pytest.mark.parametrize(("sigma", "q", "eps"), [(0.05, 0.5, 760.0), (0.04, 0.3, 1000.0)])
def test_delta_bracket_beyond_e_to_the_709(sigma: float, q: float, eps: float) -> None:
    """δ asks at ε past 709 (e^ε is not a float; T = 2, σ ≤ 0.05): the exact δ inside the
    bracket, whose lower end is within 1 % of it (σ = 0.04, q = 0.3, ε = 1000 had a lower end
    of 0; the exact reference itself overflowed there until its window edge was taken in log
    form)."""
    clear_caches()
    got = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=2, epsilon=eps)
    assert got.bracket is not None
    low, up = got.bracket
    exact = _log_exact(eps, sigma, q)
    assert low > 0.0 and math.log(low) <= exact + REF
    assert math.log(low) >= exact + math.log(0.99)
    assert math.log(up) >= exact - REF


@pytest.mark.parametrize("eps", [650.0, 700.0])
def test_q_window_bounded_against_e_to_the_minus_epsilon(eps: float) -> None:
    """σ = 0.05, q = 0.5, T = 2, δ asks at ε = 650 and 700: the Q-composition's bound on its
    mass above the window (e^−330 at ε = 650) swamped every test's Q-tail (~e^−693) and the
    lower end was 0; the Q-window is searched again from the P-window's exponents wherever
    that bound is above the tail target times e^−ε. The exact δ inside, the lower end within
    1 % of it."""
    clear_caches()
    got = dpsgd_delta(noise_multiplier=0.05, sample_rate=0.5, steps=2, epsilon=eps)
    assert got.bracket is not None
    low, up = got.bracket
    exact = _log_exact(eps, 0.05, 0.5)
    assert low > 0.0 and exact + math.log(0.99) <= math.log(low) <= exact + REF
    assert math.log(up) >= exact - REF
