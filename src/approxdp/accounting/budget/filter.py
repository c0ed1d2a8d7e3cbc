"""The ledger as a privacy filter: what stays certified when the analyst adapts.

A *privacy filter* (Rogers et al. 2016, arXiv:1605.08294) is a stopping rule: the analyst picks
each release and its privacy parameters after seeing earlier outputs, the filter admits or
refuses it before its noise is drawn, and the whole interaction — however it adapts and
whenever it stops — is (ε_B, δ_B)-DP. Composition theorems for declared sequences are not
automatically filters (the natural PLD / f-DP filter is invalid: Honkela et al. 2026,
arXiv:2602.06756; Regehr et al. 2026, arXiv:2602.15815).

**The residue argument** (the structure of Regehr et al. 2026's residue filters). Write f ≥ g
for trade-off curves (f at least as private). Let R_t be a curve, the *residue*, fixed before
step t+1's noise is drawn (it may depend on every earlier output). If step t+1 runs a mechanism
whose trade-off curve is ≥ T and the filter chooses the next residue R_{t+1} — again before the
noise — with T ⊗ R_{t+1} ≥ R_t, then by induction from the last step (stopping is the identity
mechanism, always admissible) the rest of the interaction from step t is R_t-DP: the next step
is T-DP and, for *every* one of its outputs, the remainder is R_{t+1}-DP with R_{t+1} fixed
beforehand, and f-DP composes for mechanisms chosen adaptively when the curves are fixed in
advance (Dong et al. 2022, Sec. 3; interactive remainders: Vadhan & Zhang 2023,
arXiv:2207.08335). With R_0 the budget curve f_{ε_B, δ_B}, the interaction is (ε_B, δ_B)-DP.
A filter is then a rule for the residues; what breaks natural filters is a residue chosen
*after* the output it depends on.

**This filter (``"gdp"``).** Residues are products of three parts, each fixed before the noise
it covers:

- **Gaussian-DP room** G_ν: a step that is μ-GDP leaves ν'² = ν² − μ² (G_μ ⊗ G_ν' = G_ν; Smith
  & Thakurta 2022, arXiv:2210.17520, prove this filter directly). Gaussian releases are charged
  exactly μ² = Δ²/σ², pure-ε events their least dominating μ²
  (:mod:`~approxdp.accounting.budget.gdp`), a subsampled Gaussian the μ² of its Gaussian (a
  subsampled mechanism is never less private than the mechanism itself).
- **A block declared before the first spend**: plans committed while nothing has been spent,
  and the first spend's own non-Gaussian parts. No noise has been drawn, so the block D is a
  fixed sequence: the room after it is the largest ν with T(D) ⊗ G_ν ≥ f_{ε_B, δ_B}, i.e. the
  largest ν for which the certified PLD of D plus one Gaussian of μ = ν is (ε_B, δ_B)-DP. A
  DP-SGD run committed first therefore costs what its privacy-loss distribution says, not its
  Gaussian-DP domination (which is worthless: near α → 0 its curve is its un-subsampled
  Gaussian's, so T steps would cost T·μ²). With nothing non-Gaussian declared, the room is
  exactly the Gaussian rule's: a spend fits iff δ_G(ε_B; σ* = (Σμᵢ²)^(−1/2)) ≤ δ_B.
- **A basic share** (ε_A, δ_A) fixed when the ledger is created, for events with δ > 0 that
  no Gaussian dominates (truncated Laplace, partition selection, a discrete Gaussian's
  calibrated (ε, δ)): charged by basic composition Σεᵢ ≤ ε_A, Σδᵢ ≤ δ_A (f_{ε,δ} ⊗
  f_{ε_A−ε, δ_A−δ} ≥ f_{ε_A, δ_A}: Rogers et al. 2016's basic filter). The share is part of the
  declared block (an ``EpsilonDeltaEvent(ε_A, δ_A)`` in the PLD that sets the room).

Plans committed after the first spend are charged in the same currencies up front (and
refunded if closed early: the residue is unchanged, since the plan's prepaid room was still
room). Plans in the declared block are charged by their curve; closing one early gives
nothing back (its curve cannot be turned into Gaussian room).

**Why no δ reserve by default, and what that costs.** Suppose the filter admitted all-Gaussian
histories up to the exact Gaussian rule (as it does) and also, after a first Gaussian spend, a
continuation C whose privacy profile is above the remaining Gaussian's somewhere — an event with
δ > 0, or a DP-SGD run priced below its Gaussian domination. An analyst who runs C when the
first output's privacy loss L₁ is very negative and the Gaussian otherwise gets
δ(ε_B) = δ_B + E[1{L₁ < −K}(δ_C − δ_G)(ε_B − L₁)] > δ_B: the all-Gaussian path already meets
the budget with equality, so any such switch overspends. A valid filter that keeps §2's
all-Gaussian admission must therefore refuse such events after the first noise draw unless a
share for them was fixed before it (the basic share, or the declared block).

**The ``"basic"`` filter** is Rogers et al. 2016's: every event is charged its own (ε, δ) and
Σεᵢ ≤ ε_B, Σδᵢ ≤ δ_B; a Gaussian event has no (ε, δ) of its own and is refused (describe it as
an ``EpsilonDeltaEvent`` at the δ you choose, or use ``"gdp"``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache, singledispatch

from approxdp.accounting.budget.costs import add_up, contribution
from approxdp.accounting.budget.filter_state import (
    FILTERS,
    ZERO,
    Commitment,
    FilterKind,
    FilterState,
)
from approxdp.accounting.budget.gdp import laplace_mu, pure_dp_mu
from approxdp.accounting.composition.gaussian import sigma_from_rho
from approxdp.accounting.pld.accounting import grid_step, pld_epsilon
from approxdp.accounting.serialization import event_from_json, event_key
from approxdp.errors import BudgetExceededError, InvalidParameterError, ParameterTypeError
from approxdp.events import (
    ComposedEvent,
    DiscreteGaussianEvent,
    EpsilonDeltaEvent,
    GaussianEvent,
    LaplaceEvent,
    PrivacyEvent,
    SubsampledEvent,
)

__all__ = [
    "FILTERS",
    "Charge",
    "Commitment",
    "FilterKind",
    "FilterRefusedError",
    "FilterState",
    "PartCost",
    "admit_commit",
    "admit_spend",
    "budget_rho",
    "close_commitment",
    "declared_room",
    "gdp_equivalent",
    "new_filter",
    "part_costs",
    "replay",
]



class FilterRefusedError(BudgetExceededError):
    """The filter refuses a spend or a commitment (a :class:`BudgetExceededError`)."""


# -- what each atomic part of an event costs ------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartCost:
    """The cost of one atomic part of an event in the filter's currencies.

    Attributes:
        key: the part's canonical description (what a declared block's PLD composes).
        gdp: μ² in Gaussian-DP room (rounded up), or None if no Gaussian dominates the part.
        basic: its (ε, δ) for a basic share, or None if it has none of its own (a Gaussian).
        gaussian: True for a plain Gaussian release (declared blocks charge it exactly).
    """

    key: str
    gdp: float | None
    basic: tuple[Fraction, Fraction] | None
    gaussian: bool = False


def _square_up(mu: float) -> float:
    return math.nextafter(mu * mu, math.inf) if mu > 0.0 else 0.0


def _pure(key: str, eps: float, mu: float | None) -> PartCost:
    return PartCost(key, _square_up(mu if mu is not None else pure_dp_mu(eps)),
                    (Fraction(eps), ZERO))


@singledispatch
def _parts(event: object) -> tuple[PartCost, ...]:
    raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")


@_parts.register
def _(event: GaussianEvent) -> tuple[PartCost, ...]:
    rho = contribution(event).rho
    return (PartCost(event_key(event), rho, None, gaussian=True),) if rho > 0 else ()


@_parts.register
def _(event: LaplaceEvent) -> tuple[PartCost, ...]:
    eps = event.epsilon
    return (_pure(event_key(event), eps, laplace_mu(eps)),) if eps > 0 else ()


@_parts.register
def _(event: EpsilonDeltaEvent) -> tuple[PartCost, ...]:
    return _described(event_key(event), event.epsilon, event.delta)


@_parts.register
def _(event: DiscreteGaussianEvent) -> tuple[PartCost, ...]:
    # its calibrated (ε, δ) (the profile of Canonne et al. 2020); no Gaussian-DP claim is made
    return _described(event_key(event), event.epsilon, event.delta)


def _described(key: str, eps: float, delta: float) -> tuple[PartCost, ...]:
    if delta == 0.0:
        return (_pure(key, eps, None),) if eps > 0 else ()
    return (PartCost(key, None, (Fraction(eps), Fraction(delta))),)


@_parts.register
def _(event: ComposedEvent) -> tuple[PartCost, ...]:
    return tuple(p for inner in event.events for p in _parts(inner))


@_parts.register
def _(event: SubsampledEvent) -> tuple[PartCost, ...]:
    contrib = contribution(event)  # validates it (a subsampled mix with Gaussians raises)
    if isinstance(event.event, GaussianEvent):
        # dominated by its own Gaussian (joint convexity of the hockey-stick divergence), which
        # is all a Gaussian-DP room can say of it: no amplification after the first spend
        rho = contribution(event.event).rho
        return (PartCost(event_key(event), rho, None),) if rho > 0 else ()
    if not contrib.items:
        return ()
    ((eps, delta),) = contrib.items
    return _described(contrib.pld[0], eps, delta)


@lru_cache(maxsize=4096)
def _parts_of_key(key: str) -> tuple[PartCost, ...]:
    return _parts(event_from_json(key))


def part_costs(event: PrivacyEvent) -> tuple[PartCost, ...]:
    """The atomic parts of ``event`` and what each costs (cached by the event's key)."""
    if not isinstance(event, PrivacyEvent):
        raise ParameterTypeError(f"event must be a PrivacyEvent, got {type(event).__name__}")
    return _parts_of_key(event_key(event))


# -- the state ------------------------------------------------------------------------------


def new_filter(kind: FilterKind, budget: tuple[float, float],
               share: tuple[float, float] | None = None) -> FilterState:
    """The state of a new ledger: the ``"basic"`` filter's share is the whole budget; the
    ``"gdp"`` filter's basic share (if any) is declared now and sets the room."""
    if kind == "basic":
        if share is not None:
            raise InvalidParameterError(
                "basic_share is for the 'gdp' filter; under 'basic' the whole budget is one "
                "basic share already"
            )
        return FilterState(kind="basic", pristine=False, room=0.0,
                           share=(Fraction(budget[0]), Fraction(budget[1])))
    if share is None or share == (0.0, 0.0):
        return FilterState()
    eps_a, delta_a = share
    if not (0.0 <= eps_a <= budget[0] and 0.0 <= delta_a <= budget[1]):
        raise InvalidParameterError(
            f"basic_share must be an (epsilon, delta) within the budget {budget}, got "
            f"basic_share={share}"
        )
    state = FilterState(share=(Fraction(eps_a), Fraction(delta_a)))
    return dataclasses.replace(state, room=declared_room(budget, (), state.share))


# -- rooms ----------------------------------------------------------------------------------


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


def _block_items(declared: Sequence[tuple[str, int]],
                 share: tuple[Fraction, Fraction]) -> list[tuple[PrivacyEvent, int]]:
    items: list[tuple[PrivacyEvent, int]] = [(event_from_json(k), c) for k, c in declared]
    if share[0] > 0 or share[1] > 0:
        items.append((EpsilonDeltaEvent(float(share[0]), float(share[1]), label="basic share"),
                      1))
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
                  share: tuple[Fraction, Fraction]) -> float:
    """The Gaussian-DP room ν² left after a declared block: the largest ν (to 1e-5 of the
    budget's own μ) for which the certified PLD of the block plus one Gaussian of μ = ν is
    (ε_B, δ_B)-DP — so T(block) ⊗ G_ν ≥ f_{ε_B, δ_B}. Raises FilterRefusedError if the block alone
    does not fit."""
    eps_b, delta_b = budget
    items = _block_items(declared, share)
    if not items:
        return budget_rho(budget)
    if all(isinstance(e, EpsilonDeltaEvent) and e.epsilon == 0.0 for e, _ in items):
        return _pure_delta_room(budget, items)
    f0 = _block_epsilon(items, 0.0, delta_b) - eps_b if delta_b > 0.0 else math.inf
    if f0 > 0.0 and _basic_fits(items, budget):
        # the PLD's certified bound is a hair pessimistic; a block that basic composition
        # fits exactly (e.g. one (ε, δ) release of the whole budget) leaves no room, but fits
        return 0.0
    if f0 > 0.0:
        raise FilterRefusedError(
            f"the plans declared before the first spend do not fit the budget ({eps_b:g}, "
            f"{delta_b:g}) on their own (certified PLD)"
        )
    mu_b = math.sqrt(budget_rho(budget))
    tol = 1e-4 * max(eps_b, 1e-3)
    h = grid_step([*items, (GaussianEvent(sigma=1.0 / mu_b), 1)], delta_b) if mu_b > 0 else None
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


# -- admission -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Charge:
    """How one spend or commitment was charged (stored with it, so a ledger can be audited).

    Attributes:
        gdp: μ² charged to the Gaussian-DP room.
        basic: (ε, δ) charged to the basic share.
        declared: parts added to the declared block (charged by its PLD).
        commitment: the plan it was spent from, if any.
    """

    gdp: float = 0.0
    basic: tuple[Fraction, Fraction] = (ZERO, ZERO)
    declared: tuple[tuple[str, int], ...] = ()
    commitment: int | None = None

    def describe(self, kind: FilterKind) -> str:
        """One line for the spend's ``rule`` column."""
        if self.commitment is not None:
            return f"filter '{kind}': from commitment #{self.commitment} (charged when committed)"
        parts = []
        if self.declared:
            parts.append("declared before the first spend (its PLD sets the room)")
        if self.gdp > 0.0:
            parts.append(f"Gaussian-DP room μ² = {self.gdp:.6g}")
        if self.basic != (ZERO, ZERO):
            parts.append(f"basic share (ε, δ) = ({float(self.basic[0]):.6g}, "
                         f"{float(self.basic[1]):.6g})")
        return f"filter '{kind}': " + ("; ".join(parts) if parts else "free")

    def to_json(self) -> str:
        """The charge as JSON."""
        return json.dumps({"gdp": self.gdp, "basic": [str(self.basic[0]), str(self.basic[1])],
                           "declared": [list(p) for p in self.declared],
                           "commitment": self.commitment}, sort_keys=True)


def _room_fits(state: FilterState, budget: tuple[float, float]) -> bool:
    if state.room is None:
        return _gauss_fits(state.gdp_used, budget)
    return state.gdp_used <= state.room


def _share_fits(state: FilterState) -> bool:
    return state.share_used[0] <= state.share[0] and state.share_used[1] <= state.share[1]


def _fmt(x: Fraction | float) -> str:
    return f"{float(x):.6g}"


def _left(state: FilterState, budget: tuple[float, float]) -> str:
    if state.kind == "basic":
        return (f"basic budget left: (ε, δ) = ({_fmt(state.share[0] - state.share_used[0])}, "
                f"{_fmt(state.share[1] - state.share_used[1])})")
    room = budget_rho(budget) if state.room is None else state.room
    out = f"Gaussian-DP room left: μ² = {max(room - state.gdp_used, 0.0):.6g} of {room:.6g}"
    if state.share != (ZERO, ZERO):
        out += (f"; basic share left: (ε, δ) = ({_fmt(state.share[0] - state.share_used[0])}, "
                f"{_fmt(state.share[1] - state.share_used[1])})")
    return out


_NO_SHARE = (
    "the filter can admit it only from a basic share fixed when the ledger was created "
    "(PrivacyAccountant(..., basic_share=(epsilon, delta))) or in a plan committed before the "
    "first spend; after a first noise draw, admitting it from the Gaussian-DP room would let "
    "an adaptive analyst exceed the budget (guide: Adaptive analysts and privacy filters)"
)


def _charge_part(state: FilterState, part: PartCost, budget: tuple[float, float],
                 what: str) -> tuple[FilterState, float, tuple[Fraction, Fraction]]:
    """Charge one part to the room if it fits there, else to the basic share; refuse
    otherwise (with the reason)."""
    if part.gdp is not None and state.kind == "gdp":
        trial = dataclasses.replace(state, gdp_used=add_up(state.gdp_used, part.gdp))
        if _room_fits(trial, budget):
            return trial, part.gdp, (ZERO, ZERO)
    if part.basic is not None and state.share != (ZERO, ZERO):
        used = (state.share_used[0] + part.basic[0], state.share_used[1] + part.basic[1])
        trial = dataclasses.replace(state, share_used=used)
        if _share_fits(trial):
            return trial, 0.0, part.basic
    raise FilterRefusedError(_refusal(state, part, budget, what))


def _refusal(state: FilterState, part: PartCost, budget: tuple[float, float], what: str) -> str:
    head = f"{what} does not fit the budget ({budget[0]:g}, {budget[1]:g}) under filter " \
           f"'{state.kind}' (fully adaptive)"
    if state.kind == "basic" and part.basic is None:
        return (f"{head}: a Gaussian release has no (epsilon, delta) of its own for basic "
                "composition; describe it as an EpsilonDeltaEvent at the delta you choose, or "
                "use the 'gdp' filter")
    if part.gdp is None and state.share == (ZERO, ZERO):
        return f"{head}: it has a part with delta > 0 that no Gaussian dominates, and {_NO_SHARE}"
    if part.gdp is None and part.basic is not None:
        return (f"{head}: it needs basic (ε, δ) = ({_fmt(part.basic[0])}, "
                f"{_fmt(part.basic[1])}); {_left(state, budget)}")
    detail = f"it needs μ² = {part.gdp:.6g}"
    if part.basic is not None:
        detail += f" (or basic (ε, δ) = ({_fmt(part.basic[0])}, {_fmt(part.basic[1])}))"
    note = ""
    if '"SubsampledEvent"' in part.key and '"type": "GaussianEvent"' in part.key:
        note = ("; a subsampled Gaussian spent after the first spend costs its Gaussian's μ² "
                "(no amplification): commit the whole run before the first spend to charge it "
                "by its privacy-loss distribution")
    return f"{head}: {detail}; {_left(state, budget)}{note}"


def _take_from_commitment(state: FilterState, key: str) -> tuple[FilterState, int] | None:
    for i, c in enumerate(state.commitments):
        if c.closed:
            continue
        left = dict(c.remaining)
        if left.get(key, 0) > 0:
            left[key] -= 1
            updated = dataclasses.replace(c, remaining=tuple(left.items()))
            commits = (*state.commitments[:i], updated, *state.commitments[i + 1:])
            return dataclasses.replace(state, commitments=commits), c.id
    return None


def _merge(pairs: Iterable[tuple[str, int]], more: Iterable[tuple[str, int]]) -> \
        tuple[tuple[str, int], ...]:
    out = dict(pairs)
    for k, c in more:
        out[k] = out.get(k, 0) + c
    return tuple(sorted(out.items()))


def _declare(state: FilterState, parts: Sequence[tuple[PartCost, int]],
             budget: tuple[float, float], what: str) -> tuple[FilterState, Charge]:
    """Add parts to the declared block (pristine ledger): Gaussians are charged exactly to the
    room, the rest join the block and the room is certified again."""
    gdp = 0.0
    block: list[tuple[str, int]] = []
    for part, count in parts:
        if part.gaussian:
            gdp = add_up(gdp, _times_up(part.gdp or 0.0, count))
        else:
            block.append((part.key, count))
    declared = _merge(state.declared, block) if block else state.declared
    room = state.room
    if block:
        try:
            room = declared_room(budget, declared, state.share)
        except FilterRefusedError as exc:
            raise FilterRefusedError(f"{what} does not fit: {exc}") from None
    trial = dataclasses.replace(state, declared=declared, room=room,
                                gdp_used=add_up(state.gdp_used, gdp))
    if not _room_fits(trial, budget):
        raise FilterRefusedError(
            f"{what} does not fit the budget ({budget[0]:g}, {budget[1]:g}) under filter "
            f"'gdp': declared before the first spend, its Gaussian parts need μ² = "
            f"{trial.gdp_used:.6g} but the room left after the declared block is "
            f"{(budget_rho(budget) if room is None else room):.6g}"
        )
    return trial, Charge(gdp=gdp, declared=tuple(block))


def admit_spend(state: FilterState, event: PrivacyEvent, budget: tuple[float, float]) -> \
        tuple[FilterState, Charge]:
    """The filter's decision on spending ``event`` (before its noise is drawn): the new state
    and how it was charged; raises :class:`FilterRefusedError` (nothing changes) if it does not
    fit."""
    what = f"spending {event!r}"
    if state.over is not None:
        raise FilterRefusedError(f"{what} is refused: {state.over}")
    key = event_key(event)
    taken = _take_from_commitment(state, key)
    if taken is not None:
        new, cid = taken
        return dataclasses.replace(new, pristine=False), Charge(commitment=cid)
    parts = part_costs(event)
    if state.pristine and state.kind == "gdp":
        new, charge = _declare(state, [(p, 1) for p in parts], budget, what)
        return dataclasses.replace(new, pristine=False), charge
    gdp, basic = 0.0, (ZERO, ZERO)
    new = dataclasses.replace(state, pristine=False)
    for part in parts:
        new, g, b = _charge_part(new, part, budget, what)
        gdp = add_up(gdp, g)
        basic = (basic[0] + b[0], basic[1] + b[1])
    return new, Charge(gdp=gdp, basic=basic)


def admit_commit(state: FilterState, items: Sequence[tuple[PrivacyEvent, int]], label: str,
                 budget: tuple[float, float]) -> tuple[FilterState, Commitment, Charge]:
    """The filter's decision on committing a plan: (event, count) pairs whose parameters are
    fixed now, before any of their noise. Before the first spend the plan joins the declared
    block (charged by its curve); after it, its parts are charged up front."""
    if state.over is not None:
        raise FilterRefusedError(f"committing {label!r} is refused: {state.over}")
    what = f"committing plan {label!r}"
    planned = _merge((), ((event_key(ev), c) for ev, c in items))
    cid = len(state.commitments) + 1
    if state.pristine and state.kind == "gdp":
        flat = [(p, c) for ev, c in items for p in part_costs(ev)]
        new, charge = _declare(state, flat, budget, what)
        commitment = Commitment(cid, label, "declared", planned, planned)
    else:
        new = state
        gdp, basic = 0.0, (ZERO, ZERO)
        prices = []
        for key, count in planned:
            for part in _parts_of_key(key):
                new, g_each, b_each = _charge_many(new, part, count, budget, what)
                gdp = add_up(gdp, _times_up(g_each, count))
                basic = (basic[0] + b_each[0] * count, basic[1] + b_each[1] * count)
                prices.append((key, g_each, b_each[0], b_each[1]))
        commitment = Commitment(cid, label, "prepaid", planned, planned, _price_table(prices))
        charge = Charge(gdp=gdp, basic=basic)
    new = dataclasses.replace(new, commitments=(*new.commitments, commitment))
    return new, commitment, charge


def _price_table(prices: list[tuple[str, float, Fraction, Fraction]]) -> \
        tuple[tuple[str, float, Fraction, Fraction], ...]:
    out: dict[str, tuple[float, Fraction, Fraction]] = {}
    for key, g, e, d in prices:
        g0, e0, d0 = out.get(key, (0.0, ZERO, ZERO))
        out[key] = (add_up(g0, g), e0 + e, d0 + d)
    return tuple((k, *v) for k, v in sorted(out.items()))


def _charge_many(state: FilterState, part: PartCost, count: int, budget: tuple[float, float],
                 what: str) -> tuple[FilterState, float, tuple[Fraction, Fraction]]:
    """``count`` copies of one part, all to the room or all to the share (per-copy price)."""
    if part.gdp is not None and state.kind == "gdp":
        total = _times_up(part.gdp, count)
        trial = dataclasses.replace(state, gdp_used=add_up(state.gdp_used, total))
        if _room_fits(trial, budget):
            return trial, part.gdp, (ZERO, ZERO)
    if part.basic is not None and state.share != (ZERO, ZERO):
        used = (state.share_used[0] + part.basic[0] * count,
                state.share_used[1] + part.basic[1] * count)
        trial = dataclasses.replace(state, share_used=used)
        if _share_fits(trial):
            return trial, 0.0, part.basic
    many = dataclasses.replace(part, gdp=None if part.gdp is None else
                               _times_up(part.gdp, count),
                               basic=None if part.basic is None else
                               (part.basic[0] * count, part.basic[1] * count))
    copies = f" ({count} copies)" if count > 1 else ""
    raise FilterRefusedError(_refusal(state, many, budget, what) + copies)


def _times_up(value: float, count: int) -> float:
    """value × count rounded up (exact for count = 1)."""
    return value if count == 1 or value == 0.0 else math.nextafter(value * count, math.inf)


def close_commitment(state: FilterState, cid: int) -> tuple[FilterState, Charge]:
    """Close plan ``cid``: a prepaid plan's unspent events are refunded (its prepaid room was
    still room, so the residue does not change); a declared plan's unspent part is given up."""
    for i, c in enumerate(state.commitments):
        if c.id != cid:
            continue
        if c.closed:
            raise InvalidParameterError(f"commitment #{cid} ({c.label!r}) is already closed")
        new = state
        refund_g, refund_b = 0.0, (ZERO, ZERO)
        if c.pricing == "prepaid":
            left = dict(c.remaining)
            for key, g, e, d in c.prices:
                n = left.get(key, 0)
                if n:
                    g_down = g * n
                    if g_down > 0.0:
                        g_down = math.nextafter(g_down, 0.0)  # refund rounded down
                    refund_g += g_down
                    refund_b = (refund_b[0] + e * n, refund_b[1] + d * n)
            gdp = max(0.0, math.nextafter(state.gdp_used - refund_g, math.inf)) \
                if refund_g > 0 else state.gdp_used
            new = dataclasses.replace(
                state, gdp_used=gdp,
                share_used=(state.share_used[0] - refund_b[0],
                            state.share_used[1] - refund_b[1]),
            )
        updated = dataclasses.replace(c, closed=True)
        commits = (*new.commitments[:i], updated, *new.commitments[i + 1:])
        return dataclasses.replace(new, commitments=commits), \
            Charge(gdp=-refund_g, basic=(-refund_b[0], -refund_b[1]), commitment=cid)
    raise InvalidParameterError(f"this ledger has no commitment #{cid}")


def replay(kind: FilterKind, budget: tuple[float, float], share: tuple[float, float] | None,
           events: Sequence[PrivacyEvent], *, legacy_rule: str | None = None) -> \
        tuple[FilterState, list[str]]:
    """Re-certify a stored history under a filter: each event spent again, in order, from a new
    filter. Returns the state and each spend's charge (JSON). If an event does not fit, the
    state says so (``over``: why, and what the user can do) and the rest are not charged."""
    state = new_filter(kind, budget, share)
    charges: list[str] = []
    for i, event in enumerate(events, start=1):
        if state.over is not None:
            charges.append(json.dumps({"not_charged": "after a refused spend"}))
            continue
        try:
            state, charge = admit_spend(state, event, budget)
            charges.append(charge.to_json())
        except FilterRefusedError as exc:
            rule = f" (its rule was {legacy_rule!r})" if legacy_rule else ""
            state = dataclasses.replace(state, over=(
                f"this ledger's stored history exceeds its budget ({budget[0]:g}, "
                f"{budget[1]:g}) under filter '{kind}' (fully adaptive), re-certified when it "
                f"was opened: spend #{i} of {len(events)} does not fit ({exc}). Every row is "
                "kept. Spends are refused until you decide: if every stored spend's parameters "
                "were fixed before any noise was drawn, reopen the ledger with "
                f"adaptivity='fixed'{rule} to declare it; otherwise keep the file as a record "
                "and start a new ledger"
            ))
            charges.append(json.dumps({"refused": str(exc)}))
    return state, charges
