"""The first pass planned from the saddle point (grid_steps._planned_start), checked by the lower
bound's bracket:

- not near-Gaussian, with a window small enough that the first pass is on the final grid's
  first guess: the excess model (at the saddle point's tilt, before any pass) picks the grid
  twice as fine when it is well inside the target there, and that one pass is trusted (no
  calibration pass) — issue 22's sweep #28 (σ = 5, q = 1e-5, T = 1000, δ = 1e-5), composed
  twice for its upper bound on main 2877e1a, once now;
- near-Gaussian and not skewed, where the first pass would be the coarse one that only aims
  the tilt and picks the final grid: the prior model picks that grid (a 10-phase schedule).
"""

from __future__ import annotations

from typing import Any

import pytest

from approxdp.accounting.pld import accounting, discretized, grid_steps, refine
from approxdp.accounting.pld.accounting import pld_epsilon
from approxdp.accounting.pld.plan import _plan
from approxdp.events import GaussianEvent, SubsampledEvent

EVENTS = [(SubsampledEvent(GaussianEvent(5.0), 1e-5), 1000)]
#: main 2877e1a's answer and the lower end of its bracket (two passes, calibrated)
MAIN_EPS, MAIN_LOW = 4.141324718931474e-05, 4.139129515672612e-05


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    grids: list[float] = []
    solve = refine._solve

    def spy(*args: Any, **kwargs: Any) -> refine._Solved:
        grids.append(args[2])
        return solve(*args, **kwargs)

    monkeypatch.setattr(refine, "_solve", spy)
    monkeypatch.setattr(accounting, "_solve", spy)
    return grids


def test_the_dominant_direction_is_composed_once_on_the_planned_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    discretized.clear_caches()
    grids = _spied(monkeypatch)
    g = pld_epsilon(EVENTS, 1e-5)
    parts = accounting._dominant(_plan(EVENTS), 1e-5)
    assert parts is not None
    guess = grid_steps._first_step(parts[0], 1e-3, 1e-5)
    assert grids == [pytest.approx(guess / 2.0)]  # (main: guess, then guess / 2)
    assert g.bracket is not None
    assert g.epsilon <= MAIN_EPS  # the same grid, its own tilt: no looser
    assert g.epsilon <= g.bracket[0] * (1.0 + 1e-3)  # (bracket within precision)
    assert g.bracket[0] >= MAIN_LOW  # (its tests on the pass's window: test_pld_lower_window)
    discretized.clear_caches()


def test_a_bracket_wider_than_precision_refines_as_an_untrusted_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the lower bound does not confirm the trusted pass, the calibration pass follows
    (on a grid twice as fine again) and the lower bound is made for the refined answer."""
    discretized.clear_caches()
    grids = _spied(monkeypatch)
    lower = accounting.lower_epsilon
    lows: list[float] = []

    def poor_first(*args: Any, **kwargs: Any) -> float:
        low = lower(*args, **kwargs)
        lows.append(low)
        return 0.99 * low if len(grids) == 1 else low  # (still valid lower bounds)

    monkeypatch.setattr(accounting, "lower_epsilon", poor_first)
    g = pld_epsilon(EVENTS, 1e-5)
    assert len(grids) >= 2 and grids[1] == pytest.approx(grids[0] / 2.0)
    assert len(lows) >= 3  # (the first pass's two tests, then the refined answer's)
    assert g.bracket is not None and g.epsilon <= MAIN_EPS
    assert g.epsilon <= g.bracket[0] * (1.0 + 1e-3)
    discretized.clear_caches()


def test_near_gaussian_and_large_windows_keep_the_first_guess() -> None:
    """σ = 3, q = 0.5, T = 10 (near-Gaussian: no calibration pass to save) and σ = 0.5,
    q = 1e-5, T = 1000 (a coarse first pass) start where they always did, untrusted."""
    for sigma, q, steps, delta in ((3.0, 0.5, 10, 1e-3), (0.5, 1e-5, 1000, 1e-5)):
        plan = _plan([(SubsampledEvent(GaussianEvent(sigma), q), steps)])
        known = accounting._dominant(plan, delta)
        parts = known[0] if known is not None else plan.remove
        start = grid_steps._start_step(parts, 1e-3, delta)
        planned = grid_steps._planned_start(parts, 1e-3, delta)
        assert planned == grid_steps._Start(start, False, start)


def test_a_schedule_is_composed_once_on_the_grid_its_prior_model_picks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 10-phase schedule (σ 2.0 → 0.92, q = 256/60000 then twice that, 1400 steps each):
    near-Gaussian with a small skewness, so the coarse first pass that only aimed the tilt and
    picked the final grid (main 2877e1a: 0.00195, then 0.000411) is replaced by the prior
    model's pick; one pass, on the same final grid, no looser."""
    from approxdp.accounting.dpsgd.bounds import event_of
    from approxdp.accounting.dpsgd.phases import check_phases

    q = 256 / 60000
    phases = check_phases([(2.0 - 0.12 * i, q if i < 5 else 2 * q, 1400) for i in range(10)])
    items = [(event_of(p, "poisson"), p.steps) for p in phases]
    discretized.clear_caches()
    grids = _spied(monkeypatch)
    g = pld_epsilon(items, 1e-5)
    known = accounting._dominant(_plan(items), 1e-5)
    assert known is not None
    coarse = grid_steps._start_step(known[0], 1e-3, 1e-5)
    assert grids == [pytest.approx(2.0 ** -11.25)]  # (main: [coarse, this one])
    assert coarse > 4.0 * grids[0]
    assert g.bracket is not None
    assert g.epsilon <= 3.7164349284378844  # (main 2877e1a's answer)
    assert g.epsilon <= g.bracket[0] * (1.0 + 1e-3)
    discretized.clear_caches()


def test_a_skewed_sum_keeps_its_coarse_first_pass() -> None:
    """σ = 0.595, q = 2.3e-4, T = 130 (issue 22's sweep #1): near-Gaussian by the saddle
    point's slope, but skewed (the estimate of ε is 5x the answer there, and so would be the
    target it sizes the grid for): the coarse first pass stays, untrusted."""
    plan = _plan([(SubsampledEvent(GaussianEvent(0.595), 2.3e-4), 130)])
    known = accounting._dominant(plan, 1e-5)
    parts = known[0] if known is not None else plan.remove
    saddle = grid_steps.saddle_epsilon(parts, 1e-5)
    assert saddle is not None
    slope, skew = grid_steps._saddle_shape(parts, saddle[1])
    assert 0.8 <= saddle[1] / slope <= 1.25 and skew > grid_steps._SKEW
    start = grid_steps._start_step(parts, 1e-3, 1e-5)
    assert grid_steps._planned_start(parts, 1e-3, 1e-5) == grid_steps._Start(start, False, start)
