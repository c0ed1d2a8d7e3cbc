"""The lower bound's tests reuse the upper bound's window; where that window ends close above
the answer, the bound on mass aliased down from above its top (harmless to the upper bound:
aliasing only adds mass) swamps the tests' P-tails at the answer, and the lower end fell back
to a coarse pass's, half the truth (σ = 0.6, q = 1e-3, T = 2, δ = 1e-280: 35.26 against the
exact 72.2056). The tests are then composed on a window planned for them. Against the exact
T = 2 δ (:mod:`subsampled_exact`); these fail on the old code."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.pld.accounting import clear_caches
from subsampled_exact import log_delta_two


def _log_exact(eps: float, sigma: float, q: float) -> float:
    return max(log_delta_two(eps, (sigma, q), (sigma, q), "remove"),
               log_delta_two(eps, (sigma, q), (sigma, q), "add"))


@pytest.mark.parametrize(("sigma", "q", "delta"), [
    (0.6, 1e-3, 1e-280),  # was 35.264 (exact 72.2056)
    (0.918, 0.0048, 1e-293),  # was 23.127 (exact 46.3204)
    (0.627, 8.4e-4, 1e-289),  # was 34.063 (exact 69.3244)
])
def test_lower_end_within_a_tenth_of_a_percent_where_the_window_ends_near_the_answer(
    sigma: float, q: float, delta: float
) -> None:
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=2, delta=delta)
    assert got.bracket is not None
    low, up = (float(v) for v in got.bracket)
    assert _log_exact(low, sigma, q) >= math.log(delta) + math.log1p(-1e-10)  # sound
    assert _log_exact(low * 1.001, sigma, q) < math.log(delta)  # within 0.1 % of the truth
    assert up <= low * 1.001
