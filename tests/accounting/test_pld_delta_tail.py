"""δ at ε far in the tail of a DP-SGD run with a tiny sampling rate: one step's loss grid at the
step the precision asks for would exceed memory (its support reaches far out while its bulk is
narrow). The PLD accountant then composes on the coarsest grid that fits — still certified, a
little looser — instead of raising; and it starts δ's passes on the composed loss's scale, not
one step's."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta, dpsgd_epsilon
from approxdp.accounting.pld import grid, passes
from approxdp.accounting.pld.accounting import pld_delta
from approxdp.accounting.pld.privacy_loss import GaussianLoss
from approxdp.events import GaussianEvent
from approxdp.profiles.gaussian import gaussian_log_delta


def test_a_step_grid_too_large_for_memory_is_coarsened_and_stays_certified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # four Gaussian steps of μ = 1/2 compose to μ = 1 exactly; a cap of 3000 points per step
    # cannot hold one step's grid at h = 1e-4 (tens of thousands of points)
    monkeypatch.setattr(grid, "_MAX_STEP_POINTS", 3000)
    passes.clear_caches()
    parts = ((GaussianLoss(0.5), 4),)
    comp = passes.composed(parts, 1e-4, 1e-12, 1.0)
    assert comp.step_h > 1e-4
    exact = math.exp(gaussian_log_delta(1.0, 1.0))
    got = comp.delta(1.0)
    assert exact <= got <= exact * 1.05
    passes.clear_caches()


def test_a_grid_too_large_is_a_typed_error_naming_how_many_points() -> None:
    with pytest.raises(grid.GridTooLargeError, match="points at step") as info:
        grid._grid_of(0.0, 1.0, 1e-8)
    assert info.value.needed > info.value.limit == grid._MAX_STEP_POINTS
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(("sigma", "q", "steps", "epsilon"), [(2.0, 1e-5, 100, 0.3)])
def test_delta_far_in_the_tail_of_a_tiny_sampling_rate_is_answered_and_certified(
    sigma: float, q: float, steps: int, epsilon: float
) -> None:
    # (raised "the loss grid needs 24909300 points" before)
    g = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=steps, epsilon=epsilon)
    assert g.bracket is not None
    assert 0.0 < g.delta < 1e-12
    # an upper bound on δ(ε): the ε certified at that δ cannot be certified above ε from below
    e = dpsgd_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=g.delta)
    assert e.bracket is not None and e.bracket[0] <= epsilon


def test_delta_of_many_gaussian_steps_brackets_the_exact_value() -> None:
    # Gaussian events merge into one exact Gaussian (μ = √T/σ = 1): δ(ε) in closed form
    g = pld_delta([(GaussianEvent(sigma=20.0), 400)], 2.0)
    exact = math.exp(gaussian_log_delta(2.0, 1.0))
    assert g.bracket is not None
    assert g.bracket[0] <= exact <= g.delta <= exact * (1.0 + 1e-2)
