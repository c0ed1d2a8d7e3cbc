"""Privacy of a whole history: exact Gaussian part plus (ε, δ) parts under a chosen rule.

For a history with Gaussian part ρ (σ* = ρ^(−1/2), Zhao et al. Lemma 15) and (ε, δ) parts composed
into a profile δ_N(x), the whole history is (ε, δ)-DP with

    δ(ε) = min over x ∈ [0, ε] of δ_N(x) + δ_G(ε − x)

(basic composition of the two parts; every x gives a valid bound, the minimisation only
tightens it). δ_N is one of

- ``basic``: Σδᵢ once x ≥ Σεᵢ (else 1);
- ``advanced``: Dwork & Roth 2014, Thm 3.20 for n steps of (max εᵢ, max δᵢ);
- ``optimal``: Kairouz et al. 2017 for n steps of (max εᵢ, max δᵢ), exact for that class;
- ``auto``: the smaller of basic and optimal (optimal dominates advanced), and of the PLD.

``pld`` composes the whole history by its privacy-loss distribution instead
(:mod:`approxdp.accounting.pld.accounting`: each event's own distribution, not its (ε, δ)
summary; a certified upper bound within ~0.1 % of the exact privacy profile). ``auto`` is the
exact Gaussian composition when the history is all Gaussian, and otherwise the smaller of the
closed-form rules and the PLD (every candidate is a valid upper bound, so the smallest is one
too); a subsampled Gaussian has no (ε, δ) summary, so histories with one use the PLD alone.

The optimal rule costs O(n) per evaluation; above
:data:`~approxdp.accounting.composition.optimal.OPTIMAL_MAX_STEPS` (ε, δ) parts it is replaced
by the advanced bound, which it never exceeds (so the result stays a valid upper bound, and says
so). Every other step is O(1) in the number of parts: a history is a multiset with counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Literal, TypeAlias, cast

import numpy as np
from scipy.optimize import minimize_scalar

from approxdp.accounting.composition.costs import LedgerState, add_up
from approxdp.accounting.composition.gaussian import sigma_from_rho
from approxdp.accounting.composition.optimal import OPTIMAL_MAX_STEPS, kov_delta
from approxdp.accounting.guarantees import round_up
from approxdp.accounting.pld.accounting import pld_delta, pld_epsilon
from approxdp.accounting.registry import rule_names
from approxdp.accounting.serialization import event_from_json
from approxdp.events import GaussianEvent, PrivacyEvent

__all__ = [
    "AUTO_PLD_MAX_EVENTS",
    "CLOSED_FORM_RULES",
    "COMPOSITION_RULES",
    "CompositionRule",
    "delta_at",
    "epsilon_at",
]

CompositionRule: TypeAlias = Literal["auto", "basic", "advanced", "optimal", "pld"]
#: The ledger's rules, from the registry (:data:`~approxdp.accounting.registry.ACCOUNTING_RULES`).
COMPOSITION_RULES: tuple[CompositionRule, ...] = cast(
    tuple[CompositionRule, ...], rule_names("ledger")
)
#: The rules that need every event's (ε, δ) summary (they cannot take a subsampled Gaussian).
CLOSED_FORM_RULES: tuple[CompositionRule, ...] = ("basic", "advanced", "optimal")
PLD_NAME = "privacy loss distribution (Doroshenko et al. 2022)"

GAUSS = "exact Gaussian (Zhao et al. Lemma 15)"
NAMES = {
    "basic": "basic (Dwork-Roth Thm 3.16)",
    "advanced": "advanced (Dwork-Roth Thm 3.20)",
    "optimal": "optimal (Kairouz-Oh-Viswanath 2017)",
}
_OPTIMAL_TOO_LONG = (
    f"advanced (Dwork-Roth Thm 3.20; optimal is limited to {OPTIMAL_MAX_STEPS:,} steps)"
)


def _effective_rule(state: LedgerState, rule: str) -> str:
    """``rule``, with optimal replaced by advanced (an upper bound on it) for long histories."""
    if rule == "optimal" and state.n_items > OPTIMAL_MAX_STEPS:
        return "advanced"
    return rule


def _gaussian_profile(rho: float) -> Callable[[float], float]:
    from approxdp.profiles.gaussian import gaussian_delta

    sigma = sigma_from_rho(rho)

    def delta_g(eps: float) -> float:
        return 0.0 if eps < 0 else float(gaussian_delta(eps, sigma, 1.0))

    return delta_g


def _rest_profile(state: LedgerState, rule: str) -> Callable[[float], float]:
    n = state.n_items
    eps_m = max(e for e, _, _ in state.groups)
    delta_m = max(d for _, d, _ in state.groups)
    if rule == "optimal":
        return lambda x: kov_delta(eps_m, delta_m, n, x)
    # advanced: ε(δ') = √(2n ln(1/δ'))ε_m + nε_m(e^ε_m − 1)  ⇒  δ'(x) for x above the drift
    drift = n * eps_m * math.expm1(eps_m) if eps_m < 709.0 else math.inf  # e^ε overflows

    def delta_adv(x: float) -> float:
        if eps_m == 0.0:
            return min(1.0, n * delta_m)
        if x <= drift:
            return 1.0
        z = (x - drift) / eps_m
        return min(1.0, n * delta_m + math.exp(-z * z / (2.0 * n)))

    return delta_adv


def _frac_to_float(value: Fraction, direction: float) -> float:
    """``value`` as a float rounded towards ``direction`` (+inf: up, 0: down)."""
    out = float(value)
    if (direction > 0 and Fraction(out) < value) or (direction <= 0 and Fraction(out) > value):
        out = math.nextafter(out, direction)
    return out


def _basic_slack(state: LedgerState, epsilon: float) -> tuple[float, float] | None:
    """(ε left for the Gaussian part, rounded down; Σδ rounded up), exactly; None if Σε > ε.

    Sums are exact rationals of the stored floats, so k steps of ε/k fit a budget ε exactly
    when the floats add up to it, and never when they exceed it by any amount.
    """
    eps_sum = sum((Fraction(e) * c for e, _, c in state.groups), Fraction(0))
    left = Fraction(epsilon) - eps_sum
    if left < 0:
        return None
    delta_sum = sum((Fraction(d) * c for _, d, c in state.groups), Fraction(0))
    return _frac_to_float(left, 0.0), _frac_to_float(delta_sum, math.inf)


def _delta_one_rule(state: LedgerState, epsilon: float, rule: str) -> float:
    has_gauss = state.rho > 0
    if not state.groups:
        return _gaussian_profile(state.rho)(epsilon) if has_gauss else 0.0
    if rule == "basic":
        slack = _basic_slack(state, epsilon)
        if slack is None:
            return 1.0
        left, delta_n = slack
        extra = _gaussian_profile(state.rho)(left) if has_gauss else 0.0
        return min(1.0, add_up(delta_n, extra))
    rest = _rest_profile(state, rule)
    if not has_gauss:
        return rest(epsilon)
    gauss = _gaussian_profile(state.rho)

    def total(x: float) -> float:
        return min(1.0, rest(x) + gauss(epsilon - x))

    best = min(total(0.0), total(epsilon))
    if epsilon > 0:
        # at ε ~ 1e300 the parabolic steps overflow; the method then takes golden-section steps
        with np.errstate(over="ignore", invalid="ignore"):
            res = minimize_scalar(total, bounds=(0.0, epsilon), method="bounded",
                                  options={"xatol": 1e-10 * max(1.0, epsilon)})
        # Re-evaluate at the returned point: any x in [0, ε] gives a valid bound.
        best = min(best, total(float(res.x)))
    return best


def _closed_delta_at(state: LedgerState, epsilon: float, rule: str) -> tuple[float, str]:
    candidates = ["basic", "optimal"] if rule == "auto" else [rule]
    best, best_rule, best_name = math.inf, "", ""
    for cand in candidates:
        used = _effective_rule(state, cand)
        value = _delta_one_rule(state, epsilon, used)
        if value < best:
            best, best_rule = value, used
            best_name = _OPTIMAL_TOO_LONG if used != cand else NAMES[used]
    parts = []
    if state.rho > 0:
        parts.append(GAUSS)
    if state.groups:
        parts.append(best_name)
    description = " + ".join(parts) if parts else "nothing spent"
    value = min(1.0, round_up(best)) if best > 0 and best_rule != "basic" else min(1.0, best)
    return value, description


def _pld_history(rho: float, pld: tuple[tuple[str, int], ...]) -> list[tuple[PrivacyEvent, int]]:
    items: list[tuple[PrivacyEvent, int]] = [(event_from_json(k), c) for k, c in pld]
    if rho > 0:  # every Gaussian release at once: one Gaussian with σ* (Zhao et al. Lemma 15)
        items.append((GaussianEvent(sigma=sigma_from_rho(rho)), 1))
    return items


#: ``auto`` tries the PLD on histories of at most this many non-Gaussian events (or any
#: history with a subsampled Gaussian); beyond, the closed-form rules are O(1) in the count and
#: near-tight for so many steps, while the PLD's window grows as the square root of the count.
AUTO_PLD_MAX_EVENTS = 10**6


@lru_cache(maxsize=512)
def _pld_delta(rho: float, pld: tuple[tuple[str, int], ...], epsilon: float) -> float:
    try:
        return min(1.0, float(pld_delta(_pld_history(rho, pld), epsilon).delta))
    except (ArithmeticError, ValueError):  # e.g. parts with ε ~ 1e300: a vacuous bound
        return 1.0


@lru_cache(maxsize=512)
def _pld_epsilon(rho: float, pld: tuple[tuple[str, int], ...], delta: float) -> float:
    if delta <= 0.0:  # the PLD certifies through an error term: never δ = 0 exactly
        return math.inf
    try:
        return float(pld_epsilon(_pld_history(rho, pld), delta, bracket=False).epsilon)
    except (ArithmeticError, ValueError):
        return math.inf


def _uses_pld(state: LedgerState, rule: str) -> bool:
    if rule == "pld":
        return True
    if rule != "auto" or not state.pld:
        return False
    return state.pld_only or sum(c for _, c in state.pld) <= AUTO_PLD_MAX_EVENTS


def delta_at(state: LedgerState, epsilon: float, rule: str = "auto") -> tuple[float, str]:
    """Least δ (rounded up) for which the history is (ε, δ)-DP under ``rule``, and the rule.

    Returns:
        (δ, description of the rule that achieved it).
    """
    if not _uses_pld(state, rule):
        return _closed_delta_at(state, epsilon, rule)
    if not state.pld and state.rho == 0.0:
        return 0.0, "nothing spent"
    value = _pld_delta(state.rho, state.pld, epsilon)
    if rule == "pld" or state.pld_only:
        return value, PLD_NAME
    closed, name = _closed_delta_at(state, epsilon, rule)
    return (value, PLD_NAME) if value < closed else (closed, name)


#: Largest ε searched for (beyond it, the arithmetic of the rules would overflow).
_LARGEST = 1e300


def epsilon_at(state: LedgerState, delta: float, rule: str = "auto") -> tuple[float, str]:
    """Least ε (to ~1e-12 relative, rounded to the private side) with δ(ε) ≤ ``delta``.

    Returns ``inf`` if no ε up to 1e300 achieves ``delta`` (e.g. Σδᵢ already exceeds it). The
    bracket grows by squaring (a dozen evaluations even at ε ~ 1e300), then is bisected
    geometrically and arithmetically.
    """
    if not state.pld and not state.groups and state.rho == 0.0:
        return 0.0, "nothing spent"
    if _uses_pld(state, rule) and (state.pld or state.rho > 0.0):
        value = _pld_epsilon(state.rho, state.pld, delta)
        if rule == "pld" or state.pld_only:
            return value, PLD_NAME
        closed, name = _closed_epsilon_at(state, delta, rule)
        return (value, PLD_NAME) if value < closed else (closed, name)
    return _closed_epsilon_at(state, delta, rule)


def _closed_epsilon_at(state: LedgerState, delta: float, rule: str) -> tuple[float, str]:
    at_zero = _closed_delta_at(state, 0.0, rule)
    if at_zero[0] <= delta:
        return 0.0, at_zero[1]
    at_max = _closed_delta_at(state, _LARGEST, rule)
    if at_max[0] > delta:
        return math.inf, at_max[1]
    lo, hi = 0.0, 2.0
    while _closed_delta_at(state, hi, rule)[0] > delta:  # δ(lo) > delta >= δ(hi) once this ends
        lo, hi = hi, min(hi * hi, _LARGEST)
    while lo > 0 and hi > 4.0 * lo:  # geometric bisection of a wide bracket
        mid = math.sqrt(lo) * math.sqrt(hi)
        if _closed_delta_at(state, mid, rule)[0] <= delta:
            hi = mid
        else:
            lo = mid
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-13 * hi:
            break
        if _closed_delta_at(state, mid, rule)[0] <= delta:
            hi = mid
        else:
            lo = mid
    return hi, _closed_delta_at(state, hi, rule)[1]
