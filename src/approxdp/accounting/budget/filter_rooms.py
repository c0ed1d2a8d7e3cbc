"""The privacy filter's rooms: how much Gaussian-DP room a budget, or a block declared before
the first spend, leaves.

- :func:`budget_rho`: the exact Gaussian rule's threshold, the largest Σμᵢ² an all-Gaussian
  history may reach at the budget (Balle & Wang 2018, arXiv:1805.06530, Theorem 8, for δ_G).
- :func:`declared_room`: the largest ν with T(D) ⊗ G_ν ≥ f_{ε_B, δ_B} for a declared block D,
  certified by its privacy-loss distribution (Dong et al. 2022, Sec. 3, for the composition of
  trade-off curves); the residue argument is in :mod:`approxdp.accounting.budget.filter`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from approxdp.accounting.budget.filter_parts import part_costs
from approxdp.accounting.composition.costs import add_up
from approxdp.accounting.composition.filter_state import (
    ZERO,
    FilterState,
)
from approxdp.accounting.composition.gaussian import sigma_from_rho
from approxdp.accounting.pld.accounting import grid_step, pld_epsilon
from approxdp.accounting.serialization import event_from_json
from approxdp.errors import BudgetExceededError
from approxdp.events import (
    EpsilonDeltaEvent,
    GaussianEvent,
    PrivacyEvent,
)

__all__ = ["FilterRefusedError", "budget_rho", "declared_room", "gdp_equivalent"]


class FilterRefusedError(BudgetExceededError):
    """The filter refuses a spend or a commitment (a :class:`BudgetExceededError`)."""


@lru_cache(maxsize=64)
def budget_rho(budget: tuple[float, float]) -> float:
    """The largest Σμᵢ² an all-Gaussian history may reach: the exact Gaussian rule's
    threshold, the largest float ρ with δ_G(ε_B; σ* = ρ^(−1/2)) ≤ δ_B (the very predicate
    admissions use, found by bisection on the floats: no float above it passes)."""
    from approxdp.calibration import calibrate_gaussian

    eps, delta = budget
    if delta <= 0.0 and eps <= 0.0:
        return 0.0
    try:
        sigma = float(calibrate_gaussian(eps, delta)) if delta > 0.0 else math.inf
    except (ArithmeticError, ValueError):
        sigma = math.inf
    guess = 0.0 if not math.isfinite(sigma) or sigma <= 0.0 else 1.0 / (sigma * sigma)
    if guess == 0.0 or not math.isfinite(guess):
        guess = 1.0
    lo, hi = guess, guess
    while lo > 0.0 and not _gauss_fits(lo, budget):
        lo = 0.0 if lo < 1e-300 else lo / 2.0
    while math.isfinite(hi) and _gauss_fits(hi, budget):
        hi = hi * 2.0
    if not _gauss_fits(lo, budget):
        return 0.0
    for _ in range(2100):  # bisection on the floats between lo (fits) and hi (does not)
        mid = lo + (hi - lo) / 2.0 if math.isfinite(hi) else lo * 2.0
        if mid <= lo or mid >= hi:
            break
        if _gauss_fits(mid, budget):
            lo = mid
        else:
            hi = mid
    return lo


def _gauss_fits(rho: float, budget: tuple[float, float]) -> bool:
    """The exact Gaussian rule: one Gaussian of μ² = ``rho`` is (ε_B, δ_B)-DP."""
    from approxdp.profiles.gaussian import gaussian_delta

    if rho <= 0.0:
        return True
    if not math.isfinite(rho):
        return False
    return float(gaussian_delta(budget[0], sigma_from_rho(rho), 1.0)) <= budget[1]


def _block_items(declared: Sequence[tuple[str, int]], share: tuple[Fraction, Fraction],
                 fixed: tuple[tuple[Fraction, Fraction], ...] = ()) -> \
        list[tuple[PrivacyEvent, int]]:
    items: list[tuple[PrivacyEvent, int]] = [(event_from_json(k), c) for k, c in declared]
    if share[0] > 0 or share[1] > 0:
        items.append((EpsilonDeltaEvent(float(share[0]), float(share[1]), label="basic share"),
                      1))
    for eps, delta in fixed:  # the Rényi share, sub-budgets: (ε, δ)-DP interactive mechanisms
        if eps > 0 or delta > 0:
            items.append((EpsilonDeltaEvent(float(eps), float(delta), label="fixed share"), 1))
    return items


def _block_epsilon(items: list[tuple[PrivacyEvent, int]], nu: float, delta: float,
                   h: float | None = None) -> float:
    """Certified ε(δ) of the block composed with one Gaussian of μ = ν (on grid step h: one
    grid for a whole search keeps the block's discretizations cached)."""
    extra = [(GaussianEvent(sigma=1.0 / nu), 1)] if nu > 0.0 else []
    try:
        return float(pld_epsilon([*items, *extra], delta, bracket=False, h=h).epsilon)
    except (ArithmeticError, ValueError):
        return math.inf


def _pure_delta_room(budget: tuple[float, float],
                     items: Sequence[tuple[PrivacyEvent, int]]) -> float:
    """The room after a block of (0, δᵢ) events only (partition selection, a (0, δ) share),
    exactly: the (0, δ) curve f(α) = max(0, 1 − δ − α) composes with G_ν into a pair whose
    hockey-stick divergence at ε is δ₀ + (1 − δ₀)·δ_G(ε; ν), δ₀ = 1 − Π(1 − δᵢ)^cᵢ (the
    revealed part counts fully, the rest is the Gaussian's; Dong et al. 2022, Sec. 3, for the
    composition of trade-off curves). So the room is the exact Gaussian rule's at
    (ε_B, (δ_B − δ₀)/(1 − δ₀)), δ₀ rounded up and the remainder down — the PLD of such a block
    is a hair pessimistic, and would refuse a release calibrated to the whole budget."""
    eps_b, delta_b = budget
    log_q = math.fsum(c * math.log1p(-float(e.delta))
                      for e, c in items if isinstance(e, EpsilonDeltaEvent))
    delta0 = min(1.0, -math.expm1(log_q) * (1.0 + 1e-12))
    if delta0 > delta_b:
        raise FilterRefusedError(
            f"the plans declared before the first spend do not fit the budget ({eps_b:g}, "
            f"{delta_b:g}) on their own: their δ alone is {delta0:.6g}"
        )
    rest = (delta_b - delta0) / (1.0 - delta0) * (1.0 - 1e-12)
    if rest <= 0.0:
        return 0.0
    return budget_rho((eps_b, rest))


@lru_cache(maxsize=64)
def declared_room(budget: tuple[float, float], declared: tuple[tuple[str, int], ...],
                  share: tuple[Fraction, Fraction],
                  fixed: tuple[tuple[Fraction, Fraction], ...] = ()) -> float:
    """The Gaussian-DP room ν² left after a declared block: the largest ν (to where the
    certified ε is within 0.1 % of ε_B, or ν to 1e-4) for which the certified PLD of the block
    plus one Gaussian of μ = ν is (ε_B, δ_B)-DP — so T(block) ⊗ G_ν ≥ f_{ε_B, δ_B}. The basic
    share and the shares fixed at creation (``fixed``: the Rényi share's (ε_R, δ_R),
    :mod:`~approxdp.accounting.budget.filter_rdp`; each sub-budget's (ε_i, δ_i)) are part of
    the block. Raises FilterRefusedError if the block alone does not fit."""
    eps_b, delta_b = budget
    items = _block_items(declared, share, fixed)
    if not items:
        return budget_rho(budget)
    if all(isinstance(e, EpsilonDeltaEvent) and e.epsilon == 0.0 for e, _ in items):
        return _pure_delta_room(budget, items)
    mu_b = math.sqrt(budget_rho(budget))
    # one grid for the whole search (the one the block with the budget's own Gaussian needs),
    # so the block's discretization is made once and every composition below reuses it
    h = grid_step([*items, (GaussianEvent(sigma=1.0 / mu_b), 1)], delta_b) if mu_b > 0 else None
    f0 = _block_epsilon(items, 0.0, delta_b, h) - eps_b if delta_b > 0.0 else math.inf
    if f0 > 0.0 and h is not None and delta_b > 0.0:  # that grid may be coarse for the block
        f0 = _block_epsilon(items, 0.0, delta_b) - eps_b  # alone: certify it on its own grid
    if f0 > 0.0 and _basic_fits(items, budget):
        # the PLD's certified bound is a hair pessimistic; a block that basic composition
        # fits exactly (e.g. one (ε, δ) release of the whole budget) leaves no room, but fits
        return 0.0
    if f0 > 0.0:
        raise FilterRefusedError(
            f"the plans declared before the first spend do not fit the budget ({eps_b:g}, "
            f"{delta_b:g}) on their own (certified PLD)"
        )
    # a room whose certified ε is within 0.1 % of the budget's is accepted: each further
    # composition costs about a quarter of a cold commit (a DP-SGD run: 4 → 3), for at most
    # 0.1 % of ε
    tol = 1e-3 * max(eps_b, 1e-3)
    lo, f_lo = 0.0, f0  # f(ν) = ε(block + G_ν) − ε_B is increasing: f(lo) <= 0 < f(hi)
    hi, f_hi = mu_b * (1.0 + 1e-9), math.inf
    # Newton-like steps in Gaussian-DP currency: a block composed with G_ν is about as private
    # as one Gaussian of μ_tot² = μ_D² + ν², so ν² moves by μ_B² − μ_tot(ν)² (two or three PLD
    # compositions); every point evaluated keeps the bracket, and only a point certified to fit
    # is ever returned
    nu = math.sqrt(max(mu_b * mu_b - _gaussian_mu_of(f0 + eps_b, delta_b) ** 2, 0.0))
    for _ in range(6):
        if not lo < nu < hi:
            break
        f_nu = _block_epsilon(items, nu, delta_b, h) - eps_b
        if f_nu <= 0.0:
            lo, f_lo = nu, f_nu
            if f_nu >= -tol:
                return math.nextafter(lo * lo, 0.0)
        else:
            hi, f_hi = nu, f_nu
        mu_tot = _gaussian_mu_of(f_nu + eps_b, delta_b)
        step = mu_b * mu_b - mu_tot * mu_tot
        nu = math.sqrt(max(nu * nu + step, 0.0)) * (1.0 - 2e-5)  # aim a hair inside
    side = 0
    for _ in range(60):  # the safeguard: Illinois regula falsi on the bracket
        if hi - lo <= 1e-4 * hi or f_lo >= -tol:
            break
        nu = lo + (hi - lo) * (-f_lo) / (f_hi - f_lo) if math.isfinite(f_hi) else 0.5 * (lo + hi)
        nu = min(max(nu, lo + 0.01 * (hi - lo)), hi - 0.01 * (hi - lo))
        f_nu = _block_epsilon(items, nu, delta_b) - eps_b
        if f_nu <= 0.0:
            lo, f_lo = nu, f_nu
            if side == -1 and math.isfinite(f_hi):
                f_hi /= 2.0
            side = -1
        else:
            hi, f_hi = nu, f_nu
            if side == 1:
                f_lo /= 2.0
            side = 1
    return math.nextafter(lo * lo, 0.0)


def _basic_fits(items: list[tuple[PrivacyEvent, int]], budget: tuple[float, float]) -> bool:
    """Basic composition of the block's own (ε, δ) descriptions fits the budget exactly
    (exact rational sums; False if a part has none, e.g. a subsampled Gaussian)."""
    eps, delta = ZERO, ZERO
    for event, count in items:
        for part in part_costs(event):
            if part.basic is None:
                return False
            eps += part.basic[0] * count
            delta += part.basic[1] * count
    return eps <= Fraction(budget[0]) and delta <= Fraction(budget[1])


def _gaussian_mu_of(epsilon: float, delta: float) -> float:
    """The μ whose Gaussian is exactly (ε, δ)-DP (a starting guess only)."""
    from approxdp.calibration import calibrate_gaussian

    if not math.isfinite(epsilon):
        return math.inf
    if epsilon <= 0.0:
        return 0.0
    try:
        return 1.0 / float(calibrate_gaussian(epsilon, delta))
    except (ArithmeticError, ValueError):
        return math.inf


def gdp_equivalent(state: FilterState, budget: tuple[float, float]) -> float:
    """The Σμ² of the all-Gaussian history that would use the same room: what is charged to
    the room, plus what the declared block took from the budget's own μ_B²."""
    if state.room is None:
        return state.gdp_used
    return add_up(max(budget_rho(budget) - state.room, 0.0), state.gdp_used)

