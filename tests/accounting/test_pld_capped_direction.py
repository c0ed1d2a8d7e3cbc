"""ε asks where the add direction of Poisson subsampling is capped: its loss is at most
−log(1 − q) a step, so at any ε above the sum of those ceilings its δ is 0 and it need not be
composed (Zhu, Dong, Wang 2022, https://arxiv.org/abs/2106.08567, Thm 9). Tiny σ puts ε far
above that sum; the add direction's grid, sized from a loss that is a near point mass at its
ceiling, was a step of ~1e-14 and a window of 1e10-1e17 points: GridTooLargeError after
3-25 s ("use a coarser precision"), for a question with a finite answer."""

from __future__ import annotations

import math

import pytest

from approxdp.accounting.dpsgd.accountants import dpsgd_epsilon
from approxdp.accounting.dpsgd.training import TrainingAccountant
from approxdp.accounting.pld import accounting
from approxdp.accounting.pld.accounting import clear_caches
from approxdp.events import PrivacyEvent
from pld_spies import record_solves
from subsampled_exact import log_delta_two


def test_tiny_sigma_two_steps_against_exact() -> None:
    """σ = 0.05, q = 0.5, T = 2, δ = 1e-5: the exact δ is at least δ at the lower end and at
    most δ at the upper end, 0.1 % apart (was GridTooLargeError after 25 s)."""
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=0.05, sample_rate=0.5, steps=2, delta=1e-5)
    assert got.bracket is not None
    low, up = got.bracket

    def log_exact(e: float) -> float:
        return max(log_delta_two(e, (0.05, 0.5), (0.05, 0.5), way) for way in ("remove", "add"))

    assert log_exact(low) >= math.log(1e-5) - 1e-10
    assert log_exact(up) <= math.log(1e-5) + 1e-10
    assert up <= low * 1.001


def test_tiny_sigma_many_steps_bracketed() -> None:
    """σ = 0.05, q = 0.01, T = 100: a bracket within 0.1 % (was GridTooLargeError; the
    lower end, once the add direction was skipped, was 0 until the tests' Q-window took the
    P-window's Chernoff exponents)."""
    clear_caches()
    got = dpsgd_epsilon(noise_multiplier=0.05, sample_rate=0.01, steps=100, delta=1e-5)
    assert got.bracket is not None
    low, up = got.bracket
    assert 1000.0 < low <= up <= low * 1.001


@pytest.mark.parametrize(("sigma", "q", "steps"), [(1.0, 0.01, 1000), (1.1, 256 / 60000, 14063)])
def test_usual_runs_compose_both_directions(
    sigma: float, q: float, steps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ε is below the ceilings' sum (every usual DP-SGD run) nothing is skipped, and
    not even the saddle-point estimate is asked for (a Gaussian guess from cached moments
    rules it out)."""
    calls: list[object] = []
    real = accounting.saddle_epsilon

    def spy(*args: object) -> object:
        calls.append(args)
        return real(*args)  # type: ignore[arg-type]

    clear_caches()
    plan = accounting._plan(_events(sigma, q, steps))
    monkeypatch.setattr(accounting, "saddle_epsilon", spy)
    assert accounting._without_capped(plan, 1e-5) is None
    assert calls == []


def _events(sigma: float, q: float, steps: int) -> list[tuple[PrivacyEvent, int]]:
    acct = TrainingAccountant()
    acct.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
    return list(acct.events())


def test_skipping_gives_the_same_guarantee(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """σ = 0.5, q = 1e-3, T = 1000, δ = 1e-5 (the sweep's #11: ε ≈ 2.4 against ceilings
    summing to 1.0): the same guarantee as composing both directions, in no more passes
    (there the other direction is read off the dominant one's windows anyway)."""
    calls = record_solves(monkeypatch)
    items = _events(0.5, 1e-3, 1000)
    clear_caches()
    skipped = accounting.pld_epsilon(items, 1e-5)
    fewer = len(calls)
    monkeypatch.setattr(accounting, "_without_capped", lambda plan, delta: None)
    calls.clear()
    clear_caches()
    both = accounting.pld_epsilon(items, 1e-5)
    assert (skipped.epsilon, skipped.bracket) == (both.epsilon, both.bracket)
    assert fewer <= len(calls)


def test_a_grid_too_large_for_memory_coarsens_every_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where one step's grid at the planned step does not fit (δ far in the tail: σ = 2.98,
    q = 1.5e-4, T = 2, δ = 8.1e-272 raised GridTooLargeError out of a pass that had already
    coarsened its grid and certified ε), the excess model and the retilt check use the grid
    the pass really used, and a test whose grid does not fit is skipped: a certified bracket.
    Here with a step grid capped at 150 points (main raised at 180)."""
    from approxdp.accounting.pld import grid

    clear_caches()
    fine = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10, delta=1e-8)
    assert fine.bracket is not None
    monkeypatch.setattr(grid, "_MAX_STEP_POINTS", 150)
    clear_caches()
    coarse = dpsgd_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=10, delta=1e-8)
    assert coarse.bracket is not None
    # both contain the truth, so each one's lower end is at most the other's upper end
    assert coarse.bracket[0] <= fine.bracket[1] and fine.bracket[0] <= coarse.bracket[1]
    assert coarse.bracket[1] <= coarse.bracket[0] * 1.01
    clear_caches()
