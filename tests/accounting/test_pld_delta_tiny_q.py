"""δ(ε) at tiny q: what pld_delta no longer composes.

- The add direction of a Poisson-subsampled pair has loss at most −log(1 − q) per step: where
  ε is at least the sum of those ceilings its δ(ε) is 0 exactly, and no pass is run for it
  (each cost 0.4-7 s of window planning at q ≤ 1e-5 for a δ of ~3e-322; where that pass
  was its own round-off it could even swamp the answer: review 13:06).
- The kink loop stops before a finer grid's tests where that grid's FFT round-off is half
  the bracket left (its tests lose about as much; since the round-off is weighted as the
  masses in δ(ε) (73305aa) that stop fired later: σ = 0.7, q = 1e-5, T = 2, ε = 0.05 took
  15 s instead of 1.7 for a looser answer on every later grid).

The answers stay those of main 827104c (pinned digits) and bracket the exact δ of two steps
(``tests/subsampled_exact.py``).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_delta, dpsgd_schedule_delta
from approxdp.accounting.pld import delta as delta_route
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.accounting.pld.passes import lower_delta
from approxdp.accounting.pld.privacy_loss import GaussianLoss, SubsampledLoss
from subsampled_exact import log_delta_two


def _exact_two(sigma: float, q: float, eps: float) -> float:
    return max(math.exp(log_delta_two(eps, (sigma, q), (sigma, q), way))
               for way in ("remove", "add"))


def _record(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Record each δ pass's (direction, grid step) and each lower bound's grid step."""
    seen: dict[str, list[Any]] = {"passes": [], "lowers": []}
    run_pass, run_lower = delta_route._delta_pass, lower_delta

    def pass_(parts, epsilon, h, *args):  # type: ignore[no-untyped-def]
        seen["passes"].append((parts[0][0].direction, h))
        return run_pass(parts, epsilon, h, *args)

    def lower_(parts, epsilon, h, *args):  # type: ignore[no-untyped-def]
        seen["lowers"].append(h)
        return run_lower(parts, epsilon, h, *args)

    monkeypatch.setattr(delta_route, "_delta_pass", pass_)
    monkeypatch.setattr(delta_route, "lower_delta", lower_)
    return seen


def _add(q: float, sigma: float = 1.0) -> SubsampledLoss:
    return SubsampledLoss(GaussianLoss(mu=1.0 / sigma), q, "add")


def test_capped_at_the_sum_of_the_add_ceilings() -> None:
    q = 1e-5
    top = 2 * -math.log1p(-q)
    assert delta_route._capped([(_add(q), 2)], top * (1.0 + 1e-8))
    assert delta_route._capped([(_add(q), 1), (_add(2 * q, 0.5), 1)], 3.0 * top)
    assert not delta_route._capped([(_add(q), 2)], top * (1.0 - 1e-8))
    # not the remove direction (no ceiling), not a mix with it, not q = 1
    remove = SubsampledLoss(GaussianLoss(mu=1.0), q, "remove")
    assert not delta_route._capped([(remove, 2)], 100.0)
    assert not delta_route._capped([(_add(q), 1), (remove, 1)], 100.0)
    assert not delta_route._capped([(GaussianLoss(mu=1.0), 1)], 100.0)


def test_the_add_direction_is_not_composed_where_its_delta_is_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # σ = 1, q = 1e-5, T = 2, ε = 0.05 (ceilings sum to 2e-5): main composed the add direction
    # (6.3 s of 6.3, for δ ≈ 3e-322); the answer is the remove direction's, unchanged
    clear_caches()
    seen = _record(monkeypatch)
    g = dpsgd_delta(noise_multiplier=1.0, sample_rate=1e-5, steps=2, epsilon=0.05)
    assert g.bracket is not None
    assert [way for way, _ in seen["passes"]] == ["remove"] * len(seen["passes"])
    # main 827104c's ends (the lower end within 1e-8 of it: the extended retry of the tests
    # now keeps the window's edge bounds, which moved it by −6.4e-9)
    assert float(g.delta) == 4.151675380522404e-21
    assert float(g.bracket[0]) == pytest.approx(9.493470787306646e-22, rel=1e-8)
    exact = _exact_two(1.0, 1e-5, 0.05)
    assert float(g.bracket[0]) <= exact <= float(g.delta)
    clear_caches()


def test_below_the_ceilings_the_add_direction_is_composed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ε = 1e-6 < 2·(−log(1 − 1e-5)): the add direction's δ may be positive: composed
    clear_caches()
    seen = _record(monkeypatch)
    g = dpsgd_delta(noise_multiplier=1.0, sample_rate=1e-5, steps=2, epsilon=1e-6)
    assert "add" in [way for way, _ in seen["passes"]]
    exact = _exact_two(1.0, 1e-5, 1e-6)
    assert g.bracket is not None and float(g.bracket[0]) <= exact <= float(g.delta)
    clear_caches()


def test_the_kink_loop_stops_where_round_off_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    # σ = 0.4, q = 1e-6, T = 2, ε = 0.5: the first pass's bracket is 11 % (wider than the kink
    # loop's 2 %); its finer pass (h/4) carries a round-off charge 6.7e-13, about the whole
    # bracket left (6.75e-13): no tests there, no finer pass (main: two more finer passes
    # and their tests, 15 s CPU in all, for the same ends)
    clear_caches()
    seen = _record(monkeypatch)
    g = dpsgd_delta(noise_multiplier=0.4, sample_rate=1e-6, steps=2, epsilon=0.5)
    assert g.bracket is not None
    steps = [h for _, h in seen["passes"]]
    assert len(steps) == 2 and steps[1] == pytest.approx(steps[0] / 4.0, rel=1e-9)
    assert len(seen["lowers"]) == 2 and min(seen["lowers"]) == pytest.approx(steps[0])
    # main 827104c's ends (the lower end within 1e-8 of it, as above)
    assert float(g.delta) == 1.5314803464643713e-11
    assert float(g.bracket[0]) == pytest.approx(1.4639905256659805e-11, rel=1e-8)
    assert float(g.bracket[0]) <= _exact_two(0.4, 1e-6, 0.5) <= float(g.delta)
    clear_caches()


@pytest.mark.parametrize(("d", "low", "rounding", "d_fine", "done"), [
    (1.01, 1.0, 0.0, 1.01, False),  # a narrow bracket: the tests may narrow it further
    (1.10, 1.0, 0.06, 1.20, True),  # round-off ≥ half the bracket left (0.05)
    (1.10, 1.0, 0.04, 1.10, False),  # less: a finer grid may close it
    (1.10, 1.0, 0.6, 1.10, True),  # round-off half that pass's δ (far in the tail)
])
def test_kink_done(d: float, low: float, rounding: float, d_fine: float, done: bool) -> None:
    assert delta_route._kink_done(d, low, rounding, d_fine) is done


def test_a_capped_add_direction_no_longer_swamps_a_schedule() -> None:
    # review 13:06 (pre-existing on 827104c): three tiny-q phases whose add-direction losses
    # top out at 0.057 ≪ ε; that direction's pass (tilted λ = 8740, 30 points) came out as
    # its own round-off, 0.0168, above the remove direction's 2.3e-6, so it was answered
    # with a lower end of 0 from its tests. Capped (δ = 0 exactly), the answer is the remove
    # direction's, as at the neighbouring ε = 0.340348439 (2.30239e-06 there)
    clear_caches()
    phases = [(1.414, 0.00083, 50), (1.089, 0.015, 1), (1.938, 0.00011, 1)]
    g = dpsgd_schedule_delta(phases, epsilon=0.34034843938068604)
    assert g.bracket is not None
    assert float(g.delta) == pytest.approx(2.3023872e-06, rel=1e-6)
    assert float(g.bracket[0]) == pytest.approx(2.3020762e-06, rel=1e-6)
    clear_caches()
