"""The grids of the PLD accountant's lower-bound tests (``pld.refine.lower_grids``): the
tests run coarsest first and stop once the bracket is within ``precision``; each is
certified, so a coarser first grid may only loosen the bracket (never past ``precision``),
and the truth stays inside it."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.pld import accounting, discretized
from approxdp.accounting.pld.passes import quantize


def _spy_tests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """(grid, final grid) of every lower-bound test pld_epsilon runs."""
    seen: list[tuple[float, float]] = []
    lower = accounting.lower_epsilon

    def spy(*args: object, **kwargs: object) -> float:
        seen.append((float(args[2]), float(kwargs["aim_h"])))  # type: ignore[arg-type]
        return lower(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(accounting, "lower_epsilon", spy)
    return seen


def test_tests_in_blocks_start_on_a_grid_sqrt2_coarser(monkeypatch: pytest.MonkeyPatch) -> None:
    """σ = 2, q = 1e-3, T = 10^7 (composed in blocks): the tests first at √2 times the final
    grid (0.056 % there; on the final grid 0.042 %, at 2h 0.084 %), which suffices."""
    seen = _spy_tests(monkeypatch)
    discretized.clear_caches()
    g = dpsgd_epsilon(noise_multiplier=2.0, sample_rate=1e-3, steps=10_000_000, delta=1e-6)
    assert g.bracket is not None
    (h, final), = seen
    assert h == quantize(math.sqrt(2.0) * final, up=True)
    lo, hi = (float(b) for b in g.bracket)
    assert 0.0 < lo <= hi == g.epsilon <= lo * (1.0 + 1e-3)
    discretized.clear_caches()


def test_concentrated_losses_start_the_tests_at_four_times_the_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """σ = 0.5, q = 1e-5, T = 1000 (issue 22): the loss is concentrated far below one grid
    step (the excess model calibrated 13-fold up), where the pessimistic split errs to first
    order in h and the tests only to second: their first grid is 4h. The bracket holds the
    truth, certified within [0.0197230887, 0.0197261452] by pld_epsilon on the grid 2^-17
    (8 times finer than the first test's; its lower and upper end, both certified)."""
    seen = _spy_tests(monkeypatch)
    discretized.clear_caches()
    g = dpsgd_epsilon(noise_multiplier=0.5, sample_rate=1e-5, steps=1000, delta=1e-5)
    assert g.bracket is not None
    assert seen[0][0] == quantize(4.0 * seen[0][1], up=True)
    lo, hi = (float(b) for b in g.bracket)
    assert lo <= 0.0197261452 and hi >= 0.0197230887
    assert 0.0 < lo <= hi <= lo * (1.0 + 1e-3)
    discretized.clear_caches()


def test_smooth_losses_start_the_tests_at_twice_the_grid(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MNIST example (a near-Gaussian sum, one FFT): the tests start at 2h, as ever."""
    seen = _spy_tests(monkeypatch)
    discretized.clear_caches()
    g = dpsgd_epsilon(noise_multiplier=1.1, sample_rate=256 / 60000, steps=14063, delta=1e-5)
    assert g.bracket is not None
    assert seen[0][0] == quantize(2.0 * seen[0][1], up=True)
    discretized.clear_caches()
