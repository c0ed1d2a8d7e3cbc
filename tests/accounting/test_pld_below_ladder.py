"""accounting._below's ladder of quarter-octave grids must advance: ``quantize`` can round
2^(k/4)·2^(1/4) back down to 2^(k/4) (k = −7, −5, −3: 4·log2 lands a hair below the next
integer), and the ladder then never left h ≈ 0.297 (12 million quantize calls: the large-ε
setting below, drawn by hypothesis in test_dpsgd.py, hung)."""

from __future__ import annotations

from approxdp.accounting.dpsgd import dpsgd_epsilon
from approxdp.accounting.pld.discretized import quantize


def test_quantize_can_round_the_next_quarter_octave_back_down() -> None:
    """(Why the ladder needs its guard: with it, every step strictly advances.)"""
    stuck = [k for k in range(-40, 8)
             if quantize(quantize(2.0 ** (k / 4)) * 2.0**0.25) <= quantize(2.0 ** (k / 4))]
    assert stuck  # (k = −7, −5, −3 on IEEE doubles)
    for k in stuck:
        h = quantize(2.0 ** (k / 4))
        assert quantize(h * 2.0**0.25, up=True) > h


def test_a_large_epsilon_setting_on_a_coarse_grid_answers() -> None:
    g = dpsgd_epsilon(noise_multiplier=0.6, sample_rate=0.5, steps=3000, delta=1e-6)
    assert g.bracket is not None
    assert g.bracket[0] <= g.epsilon
    assert 1000.0 < g.epsilon < 2000.0
