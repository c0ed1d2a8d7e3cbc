"""Budget splitting: the per-step budget that makes k steps compose to a total (ε, δ).

The inverse of composition (Ziani's notes, §2). For generic (ε, δ)-DP steps the split
follows basic, advanced or optimal composition; for Gaussian steps the exact composition
(Zhao et al. Lemma 15) makes the split exact: k steps of noise σ compose to one release with
σ/√k, so the per-step σ is √k · σ_opt(ε, δ) — strictly less noise than the seed's rule of
per-step ε/(2√(2k ln(1/δ'))) with the classical Gaussian calibration.

Every split is verified forwards: the returned per-step values are composed again and
checked against the total with no tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from approxdp._validation import check_parameter
from approxdp.accounting.composition.closed_form import advanced_composition, check_steps
from approxdp.accounting.composition.gaussian import compose_gaussian
from approxdp.accounting.composition.optimal import check_optimal_steps, optimal_epsilon
from approxdp.accounting.guarantees import Guarantee
from approxdp.accounting.registry import rule_names
from approxdp.errors import InvalidParameterError, UnknownMethodError

__all__ = ["SPLIT_RULES", "BudgetSplit", "seed_gaussian_split", "split_budget"]

SplitRule: TypeAlias = Literal["basic", "advanced", "optimal", "gaussian"]
#: The split rules, from the registry (:data:`~approxdp.accounting.registry.ACCOUNTING_RULES`).
SPLIT_RULES: tuple[SplitRule, ...] = cast(tuple[SplitRule, ...], rule_names("split"))


@dataclass(frozen=True, slots=True)
class BudgetSplit:
    """Per-step budget for k steps composing to ``total``.

    Attributes:
        composition: the rule used ("basic", "advanced", "optimal" or "gaussian").
        k: number of steps.
        epsilon: per-step ε (for "gaussian": nan, the step is described by ``sigma``).
        delta: per-step δ (for "gaussian": nan).
        sigma: per-step Gaussian σ for the given sensitivity ("gaussian" only, else None).
        total: what the k steps compose to under the rule — within the requested total.
    """

    composition: SplitRule
    k: int
    epsilon: float
    delta: float
    sigma: float | None
    total: Guarantee


def _bisect_largest(
    pred: Callable[[float], bool], lo: float, hi: float, iters: int = 200
) -> float:
    """Largest x in [lo, hi] (to float resolution) with pred(x) true, given pred(lo) true."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo


def split_budget(
    epsilon: float,
    delta: float,
    k: int,
    *,
    composition: str = "optimal",
    delta_prime: float | None = None,
    sensitivity: float = 1.0,
) -> BudgetSplit:
    """Per-step budget so that k adaptive steps compose to at most (ε, δ).

    - ``basic``: (ε/k, δ/k).
    - ``advanced`` (Dwork & Roth 2014, Thm 3.20): δ' = ``delta_prime`` (default δ/2), per-step
      δ = (δ − δ')/k and the largest per-step ε with √(2k ln(1/δ'))ε₀ + kε₀(e^ε₀ − 1) ≤ ε.
    - ``optimal`` (Kairouz et al. 2017): δ' = ``delta_prime`` (default δ/2), per-step δ₀ with
      1 − (1 − δ₀)^k (1 − δ') = δ, and the largest ε₀ whose optimal composition is ≤ ε.
    - ``gaussian``: per-step σ = √k · σ_opt(ε, δ, Δ) — exact (Zhao et al. Lemma 15), no δ' slack.

    Args:
        epsilon: total ε > 0 (finite). delta: total δ ∈ (0, 1).
        k: number of steps, integer ≥ 1 (any k for "basic", "advanced" and "gaussian", whose
            cost does not grow with k; at most
            :data:`~approxdp.accounting.composition.optimal.OPTIMAL_MAX_STEPS` for "optimal").
        composition: one of :data:`SPLIT_RULES`.
        delta_prime: slack δ' ∈ (0, δ) for "advanced"/"optimal" (default δ/2).
        sensitivity: ℓ2-sensitivity of each Gaussian step (used by "gaussian" only).

    Returns:
        BudgetSplit, whose ``total`` has been recomputed from the per-step values.

    Raises:
        InvalidParameterError, UnknownMethodError: on bad input, or k too large for "optimal".

    Example:
        >>> s = split_budget(1.0, 1e-5, 100, composition="gaussian")
        >>> 37 < s.sigma < 38
        True
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    steps = check_steps("k", k)
    if composition not in SPLIT_RULES:
        raise UnknownMethodError(
            f"composition must be one of {SPLIT_RULES}, got composition={composition!r}"
        )
    if composition == "gaussian":
        return _split_gaussian(eps, dlt, steps, sensitivity)
    if composition == "basic":
        e0, d0 = eps / steps, dlt / steps
        while e0 * steps > eps:
            e0 = math.nextafter(e0, 0.0)
        while d0 * steps > dlt:
            d0 = math.nextafter(d0, 0.0)
        total = Guarantee(e0 * steps, d0 * steps, "upper bound", "basic composition")
        return BudgetSplit("basic", steps, e0, d0, None, total)
    dp = (dlt / 2.0 if delta_prime is None
          else float(check_parameter("delta_prime", delta_prime, "delta")))
    if not dp < dlt:
        raise InvalidParameterError(
            f"delta_prime must be in (0, delta={dlt:g}), got delta_prime={dp:g}"
        )
    if composition == "advanced":
        d0 = (dlt - dp) / steps
        while steps * d0 + dp > dlt:
            d0 = math.nextafter(d0, 0.0)

        def fits_adv(e0: float) -> bool:
            return float(advanced_composition(e0, d0, steps, dp).epsilon) <= eps

        e0 = _bisect_largest(fits_adv, 0.0, eps)
        return BudgetSplit("advanced", steps, e0, d0, None, advanced_composition(e0, d0, steps, dp))
    # optimal
    check_optimal_steps(steps)
    d0 = -math.expm1((math.log1p(-dlt) - math.log1p(-dp)) / steps)
    while -math.expm1(steps * math.log1p(-d0) + math.log1p(-dp)) > dlt:
        d0 = math.nextafter(d0, 0.0)

    def fits_opt(e0: float) -> bool:
        return optimal_epsilon(e0, steps, dp) <= eps

    lo = eps / steps
    while not fits_opt(lo):
        lo = math.nextafter(lo, 0.0)
    e0 = _bisect_largest(fits_opt, lo, eps, iters=60)
    delta_total = -math.expm1(steps * math.log1p(-d0) + math.log1p(-dp))
    total = Guarantee(
        optimal_epsilon(e0, steps, dp),
        delta_total,
        "exact",
        "optimal homogeneous composition (Kairouz-Oh-Viswanath 2017)",
    )
    return BudgetSplit("optimal", steps, e0, d0, None, total)


def _split_gaussian(eps: float, dlt: float, steps: int, sensitivity: float) -> BudgetSplit:
    from approxdp.calibration import calibrate_gaussian

    sens = float(check_parameter("sensitivity", sensitivity, "sensitivity_positive"))
    sigma = math.sqrt(steps) * float(calibrate_gaussian(eps, dlt, sens, method="optimal"))
    composed = compose_gaussian(sigma, sens, counts=steps)  # O(1) in k
    # Verify forwards with no tolerance; grow σ by ulps if rounding broke it (never under).
    while float(composed.delta(eps)) > dlt:
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-15)
        composed = compose_gaussian(sigma, sens, counts=steps)
    total = Guarantee(eps, float(composed.delta(eps)), "exact",
                      "exact Gaussian composition (Zhao et al. Lemma 15)")
    return BudgetSplit("gaussian", steps, math.nan, math.nan, sigma, total)


def seed_gaussian_split(
    epsilon: float, delta: float, k: int, sensitivity: float = 1.0
) -> tuple[float, float, float]:
    """The seed's rule (Ziani's notes, §2), for comparison only: (ε₀, δ₀, σ₀).

    δ' = δ/2, δ₀ = δ/(2k), ε₀ = ε/(2√(2k ln(1/δ'))), and the classical Gaussian
    σ₀ = Δ√(2 ln(1.25/δ₀))/ε₀ (Dwork & Roth 2014, Thm A.1, valid as ε₀ < 1).
    """
    dp = delta / 2.0
    d0 = delta / (2.0 * k)
    e0 = epsilon / (2.0 * math.sqrt(2.0 * k * math.log(1.0 / dp)))
    sigma0 = sensitivity * math.sqrt(2.0 * math.log(1.25 / d0)) / e0
    return e0, d0, sigma0
