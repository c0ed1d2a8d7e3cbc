"""δ(ε)'s non-dominant direction starts on a grid 4x as coarse as the dominant one's final grid
where its saddle-point estimate (times 1 + 16x that pass's relative excess) is within 90 % of the
dominant δ (was 50 %): it only has to come out below that δ. The answers do not move: the upper
end is the dominant direction's, the lower end its tests' (main e733dfe's digits pinned)."""

from __future__ import annotations

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta
from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld import delta as delta_route
from approxdp.accounting.pld.accounting import clear_caches

Q = 256 / 60000
TEN = [(2.0 - 0.12 * i, Q if i < 5 else 2 * Q, 1400) for i in range(10)]
# main e733dfe's (upper, lower) ends of the 10-phase history at ε = 2 (the upper one 3.0e-10
# lower since the round-off is weighted as the masses in δ(ε) (ComposedPLD._rounding))
TEN_DELTA, TEN_LOW = 0.006579503730277329, 0.006558765542502858


def _steps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the grid step of every δ pass."""
    steps: list[float] = []
    run = delta_route._delta_pass

    def pass_(parts, epsilon, h, *args):  # type: ignore[no-untyped-def]
        steps.append(h)
        return run(parts, epsilon, h, *args)

    monkeypatch.setattr(delta_route, "_delta_pass", pass_)
    return steps


def test_a_close_other_direction_starts_coarse(monkeypatch: pytest.MonkeyPatch) -> None:
    # 10 phases at ε = 2: "add"'s saddle estimate (x 1 + 16·excess) is 0.69 of "remove"'s
    # certified δ: one pass 4x as coarse certifies it (0.0046 < 0.00658); main (room 0.5)
    # composed it on the fine grid
    clear_caches()
    steps = _steps(monkeypatch)
    g = TrainingAccountant(phases=TEN).delta(2.0)
    assert g.bracket is not None
    assert float(g.delta) == TEN_DELTA
    # (the tests' tails carry their float sums' own error since branch low: −1.6e-11 of it)
    assert float(g.bracket[0]) == pytest.approx(TEN_LOW, rel=1e-10)
    assert float(g.bracket[0]) <= TEN_LOW
    assert len(steps) == 2 and steps[1] == pytest.approx(4.0 * steps[0], rel=1e-9)
    clear_caches()


# main e733dfe's (upper, lower) ends, where the other direction's estimate is 0.77-0.97 of
# the dominant δ: its coarse pass certifies it below that δ, the answer is unchanged (upper
# ends 9.2e-11 and 4.1e-10 lower since the round-off is weighted as the masses in δ(ε):
# ComposedPLD._rounding)
@pytest.mark.parametrize(("sigma", "q", "steps", "eps", "up_main", "low_main"), [
    (1.0, 0.01, 1000, 0.5, 0.0305907342845163, 0.03055578885197),
    (2.0, 0.3, 20, 0.5, 0.12094969987188674, 0.12091219565605446),
    (1.1, Q, 14063, 1.0, 0.015547156437437096, 0.015520765607079061),
])
def test_same_answers_one_coarse_pass(
    monkeypatch: pytest.MonkeyPatch, sigma: float, q: float, steps: int, eps: float,
    up_main: float, low_main: float,
) -> None:
    clear_caches()
    grids = _steps(monkeypatch)
    g = dpsgd_delta(noise_multiplier=sigma, sample_rate=q, steps=steps, epsilon=eps)
    assert g.bracket is not None
    assert float(g.delta) == pytest.approx(up_main, rel=1e-12)
    assert float(g.bracket[0]) == pytest.approx(low_main, rel=1e-12)
    # (the dominant direction's passes, then one coarse pass of the other one)
    assert grids[-1] >= 3.0 * min(grids[:-1])
    clear_caches()
