"""How a long run is cut into blocks (pld.blocks.block_plan): a divisor of the step count where
one is near the power of 2, so that no remainder has to be composed — and the guarantee only
tightens for it."""

from __future__ import annotations

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.pld import blocks, discretized


@pytest.mark.parametrize(
    ("count", "plan"),
    [(10**6, (1250, 800, 0)), (10**7, (5000, 2000, 0)), (2**20, (1024, 1024, 0)),
     (10**5, (256, 390, 160)), (999_983, (1024, 976, 559))],
)
def test_a_divisor_at_most_sqrt2_above_the_power_of_2_is_the_block(
    count: int, plan: tuple[int, int, int]
) -> None:
    assert blocks.block_plan(count) == plan
    block, k, rem = blocks.block_plan(count, divide=False)
    assert block & (block - 1) == 0 and k * block + rem == count


def test_exact_blocks_only_tighten_the_bracket(monkeypatch: pytest.MonkeyPatch) -> None:
    """σ = 4, q = 0.01, T = 10^6 (issue 22's sweep #24): 800 blocks of 1250 instead of 976 of
    1024 and a remainder of 576."""

    def run() -> tuple[float, float]:
        discretized.clear_caches()
        g = dpsgd_epsilon(noise_multiplier=4.0, sample_rate=0.01, steps=10**6, delta=1e-9)
        assert g.bracket is not None
        return float(g.bracket[0]), float(g.bracket[1])

    lo, up = run()
    plan = blocks.block_plan
    monkeypatch.setattr(blocks, "block_plan", lambda count, divide=True: plan(count, False))
    old_lo, old_up = run()
    discretized.clear_caches()
    assert (lo, up) != (old_lo, old_up)
    assert old_lo <= lo <= up <= old_up
