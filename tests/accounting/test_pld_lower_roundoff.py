"""The certified LOWER ends where FFT round-off dominated the tests' tails (tiny q: the P- and
Q-tails of a test agree to ~1e-3 and differ by δ), against exact T = 2 values
(:mod:`subsampled_exact`): a few steps are composed again in extended precision, the power by
complex multiplication (``small_power``), where the float64 round-off costs the tests more than
1e-5 of the answer; and the tails carry their float sums' own error (subnormal Q-tails far in
the tail). Lower ends at or below the truth everywhere, within 0.1 % where they were not."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import (
    dpsgd_delta,
    dpsgd_epsilon,
    dpsgd_schedule_delta,
)
from approxdp.accounting.pld import lower
from approxdp.accounting.pld.accounting import clear_caches
from subsampled_exact import log_delta_two

#: the reference's own error (relative, in δ)
REF = 1e-10


def _log_exact(eps: float, sigma: float, q: float) -> float:
    """log of the exact δ(ε) of two steps (the larger direction)."""
    return max(log_delta_two(eps, (sigma, q), (sigma, q), "remove"),
               log_delta_two(eps, (sigma, q), (sigma, q), "add"))


def _epsilon(sigma: float, q: float, delta: float, precision: float) -> tuple[float, float]:
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=2, delta=delta,
                        precision=precision)
    assert got.bracket is not None
    return float(got.bracket[0]), float(got.epsilon)


@pytest.mark.parametrize(("sigma", "q", "precision", "room"), [
    (1.0, 1e-5, 1e-3, 1e-3),  # was −5.4e-3 (89522e9 and tightround)
    (1.0, 1e-5, 1e-4, 1e-3),  # was −1.0e-2: a finer grid gave a LOWER lower end
    (1.0, 1e-4, 1e-4, 1e-4),  # was −9.2e-4
])
def test_lower_end_within_room_of_the_exact_epsilon(
    sigma: float, q: float, precision: float, room: float
) -> None:
    """δ = 1e-12, T = 2: the lower end is at or below the true ε (the exact δ there is at
    least δ) and within ``room`` of it (the exact δ at lower·(1 + room) is below δ); the
    bracket is then at most 0.1 % wide."""
    delta = 1e-12
    low, up = _epsilon(sigma, q, delta, precision)
    assert _log_exact(low, sigma, q) >= math.log(delta) + math.log1p(-REF)
    assert _log_exact(low * (1.0 + room), sigma, q) < math.log(delta)
    assert up <= low * 1.001


@pytest.mark.parametrize(("sigma", "q", "delta"), [
    (1.0, 1e-3, 1e-300),  # was 38.9202974 > the truth (exact δ there 9.99966e-301)
    (0.6, 1e-5, 1e-300),  # was 65.4153133 > the truth 65.4151642 (rev, 68e44e5)
    (1.0, 0.1, 1e-300),
    (0.3, 1e-6, 1e-300),
    (0.5, 1e-5, 1e-100),
    (0.3, 1e-5, 1e-12),
    (0.5, 1e-6, 1e-12),
    (1.0, 1e-6, 1e-12),
    (2.0, 1e-6, 1e-12),
    (2.0, 1e-5, 1e-12),
    (0.5, 1e-3, 1e-30),
    (1.0, 0.1, 1e-12),
    (5.0, 1e-4, 1e-5),
])
def test_lower_end_never_above_the_exact_epsilon(sigma: float, q: float, delta: float) -> None:
    """Tiny δ (down to 1e-300: subnormal Q-tails), tiny q, small σ: the exact δ at the
    lower end is at least δ (so the true ε is at least the lower end), at the upper end at
    most δ."""
    low, up = _epsilon(sigma, q, delta, 1e-3)
    assert 0.0 <= low <= up
    if low > 0.0:
        assert _log_exact(low, sigma, q) >= math.log(delta) + math.log1p(-REF), low
    assert _log_exact(up, sigma, q) <= math.log(delta) + math.log1p(REF), up


@pytest.mark.parametrize(("sigma", "q", "eps"), [(1.0, 1e-4, 0.0357), (0.8, 1e-5, 0.031)])
def test_delta_lower_end_against_exact(sigma: float, q: float, eps: float) -> None:
    """δ(ε) asks there: the lower end at or below the exact δ and within 2 % of it (was
    −1.6 % and −13 %; σ = 1, q = 1e-5, ε = 0.0023888: −14 %, now −3.3e-4, 30 s → 8 s)."""
    clear_caches()
    got = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=2, epsilon=eps)
    assert got.bracket is not None
    low, up = float(got.bracket[0]), float(got.delta)
    exact = math.exp(_log_exact(eps, sigma, q))
    assert exact * (1.0 - 2e-2) <= low <= exact * (1.0 + REF)
    assert up >= exact * (1.0 - REF)


def test_no_extended_recomposition_where_round_off_costs_nothing(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """q = 0.01, T = 10: the float64 tests already hold (round-off costs < 1e-5 of ε), so no
    composition is repeated in extended precision (no extended FFT cost) and the lower end
    is the float64 route's, bit for bit; at q = 1e-5, T = 2 the extended one is taken."""
    extended: list[bool] = []
    real = lower.compose

    def spy(*args: object, **kwargs: object) -> object:
        extended.append(bool(kwargs.get("extended")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lower, "compose", spy)
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10, delta=1e-5)
    assert extended and not any(extended)
    monkeypatch.setattr(lower, "SMALL_POWER", 0)  # (the float64 route only)
    clear_caches()
    again = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10, delta=1e-5)
    assert again.bracket == got.bracket
    monkeypatch.setattr(lower, "SMALL_POWER", 64)
    extended.clear()
    clear_caches()
    dpsgd_epsilon(noise_multiplier=1.0, sample_rate=1e-5, steps=2, delta=1e-12)
    assert any(extended)


@pytest.mark.parametrize(("sigma", "q", "eps"), [(1.0, 1e-3, 40.0), (1.0, 1e-3, 38.9),
                                                 (0.6, 1e-5, 66.5)])
def test_delta_lower_end_never_above_the_exact_delta_near_underflow(
    sigma: float, q: float, eps: float
) -> None:
    """δ near and below 1e-300 (the tests' Q-tails subnormal): the lower end at or below the
    exact δ (σ = 1, q = 1e-3, ε = 40 was 3.45e-301 against the exact 5.32e-313)."""
    clear_caches()
    got = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=2, epsilon=eps)
    assert got.bracket is not None
    low = float(got.bracket[0])
    assert low == 0.0 or math.log(low) <= _log_exact(eps, sigma, q) + REF


def test_extended_retry_keeps_the_window_edge_bounds() -> None:
    """Six steps of two phases (σ ≈ 0.59, q ≤ 7.6e-4), δ at ε = 0.515: the extended retry
    of the tests composed the P-measure on the float64 pass's window but bounded its edges
    afresh, putting e^−2.9 below a window that holds the whole support: its tests went
    negative and the lower end was 0 against an upper end of 9.99e-7. With the window's own
    edge bounds (and the float64 tests kept beside the retry's) the bracket is 0.007 % wide."""
    clear_caches()
    got = dpsgd_schedule_delta([(0.584, 1.3e-4, 1), (0.589, 7.6e-4, 5)], epsilon=0.515)
    assert got.bracket is not None
    low, up = got.bracket
    assert 0.0 < low <= up <= low * (1.0 + 1e-3)
