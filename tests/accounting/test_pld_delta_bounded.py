"""δ(ε) where one direction's losses stay below ε (the add direction of Poisson subsampling at
ε ≥ Σ −log(1 − q)): that direction's δ is the mass at +∞ only — not the 1.0 that a window
tilted past the top certified (its tilt is now solved below the planning supports' top, see
test_pld_near_top.py)."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld.accounting import clear_caches, pld_delta
from approxdp.accounting.pld.plan import _plan

PHASES = [(0.5 + 0.05 * (i % 3), 0.05 * (1 + i % 2), 10) for i in range(5)]
#: the add direction's largest loss: Σ −log(1 − q) over the steps
TOP = sum(c * -math.log1p(-q) for _, q, c in PHASES)


def _items() -> list:
    acc = TrainingAccountant()
    for sigma, q, count in PHASES:
        acc.step(noise_multiplier=sigma, sample_rate=q, steps=count)
    return acc.events()


@pytest.mark.parametrize("epsilon", [3.66, 4.0, 12.0])
def test_delta_above_the_add_directions_top_is_bracketed(epsilon: float) -> None:
    clear_caches()
    got = pld_delta(_items(), epsilon)
    low, up = got.bracket
    assert epsilon > TOP
    assert 0.0 < low <= up == got.delta < 0.2  # (it was 1.0, bracket (0, 1), at 4.0)
    assert up <= low * 1.01


def test_direction_whose_losses_stay_below_epsilon_has_only_its_infinite_mass() -> None:
    from approxdp.accounting.pld.delta import _delta_direction

    clear_caches()
    plan = _plan(_items())
    far = _delta_direction(plan.add, 12.0, 1e-3, None)[0]
    assert 0.0 <= far <= 1e-300  # only the truncated tails' mass (it was 1.0 on 6809edb)
    near = _delta_direction(plan.add, TOP * 0.999, 1e-3, None)[0]
    assert 0.0 < near <= 1e-20  # true ≈ 1e-110 (it was 1.0 on 2877e1a: the tilt ran away)
