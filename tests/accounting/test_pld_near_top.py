"""δ(ε) for ε around the top of a direction's support (the add direction of Poisson
subsampling: its loss is at most Σ −log(1 − q)). A schedule's windows are planned on merged
supports whose largest entries sit below the true top; a tilt target between the two sent the
tilt off towards infinity, and untilting the FFT's round-off by e^(K(λ) − λε) then certified
only δ ≤ 1: the 5-phase history below answered δ = 1.0, bracket (0, 1), at ε = 0.995, 1.0 and
1.0025 times the top (true ≈ 0.1, the remove direction's) on 2877e1a."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld.accounting import clear_caches, pld_delta
from approxdp.accounting.pld.delta import _delta_direction
from approxdp.accounting.pld.grid import discretize_many
from approxdp.accounting.pld.plan import _plan
from approxdp.accounting.pld.window import composed_moments, plan_window, support_of

FIVE = [(0.5, 0.05, 10), (0.55, 0.1, 10), (0.6, 0.05, 10), (0.5, 0.1, 10), (0.55, 0.05, 10)]
RATIOS = [float(r) for r in np.linspace(0.99, 1.01, 9)]


def _items(phases: list[tuple[float, float, int]]) -> list:
    acc = TrainingAccountant()
    for sigma, q, count in phases:
        acc.step(noise_multiplier=sigma, sample_rate=q, steps=count)
    return acc.events()


def _top(phases: list[tuple[float, float, int]]) -> float:
    return sum(c * -math.log1p(-q) for _, q, c in phases)


@pytest.mark.parametrize("ratio", RATIOS)
def test_delta_around_the_add_directions_top_is_bracketed(ratio: float) -> None:
    clear_caches()
    got = pld_delta(_items(FIVE), _top(FIVE) * ratio)
    low, up = got.bracket
    # the remove direction's δ (0.0974-0.1014 over this band); the add one's is < 1e-20
    assert 0.097 < low <= up == got.delta < 0.102
    assert up <= low * 1.002


@pytest.mark.parametrize("phases", [FIVE, [(0.8, 0.3, 5)], [(0.7, 0.3, 4), (1.2, 0.1, 6)]])
def test_add_direction_near_its_top_is_tiny(phases: list[tuple[float, float, int]]) -> None:
    plan = _plan(_items(phases))
    for ratio in RATIOS[::2]:
        clear_caches()
        d = _delta_direction(plan.add, _top(phases) * ratio, 1e-3, None)[0]
        assert 0.0 <= d <= 1e-15, ratio  # (1.0 on 2877e1a for the 5-phase history)


def test_planned_tilt_keeps_the_chernoff_factor_at_epsilon_below_one() -> None:
    """The window's tilt λ, on the exact supports: e^(K(λ) − λε) ≤ 1 for ε at or above the
    target (else every round-off unit is multiplied past δ ≤ 1 by untilting). On 2877e1a:
    λ = 9432 at h = 0.004 for the 5-phase add direction, K(λ) − λε = +1202."""
    clear_caches()
    parts = _plan(_items(FIVE)).add
    h = 0.004
    plds = discretize_many([s for s, _ in parts], h, 1e-300)
    exact = [(support_of(p), c) for p, (_, c) in zip(plds, parts, strict=True)]
    lo = sum(c * p.offset for p, (_, c) in zip(plds, parts, strict=True))
    hi = sum(c * (p.offset + p.pmf.size - 1) for p, (_, c) in zip(plds, parts, strict=True))
    for ratio in RATIOS:
        eps = _top(FIVE) * ratio
        win = plan_window(exact, h=h, tilt_at=eps, log_tail=math.log(1e-300), support=(lo, hi),
                          below=None, delta_scale=1e-296)
        mo = composed_moments(exact, win.lam)
        assert 0.0 < win.lam < 1e3
        assert mo.k - win.lam * eps <= 0.0, ratio
