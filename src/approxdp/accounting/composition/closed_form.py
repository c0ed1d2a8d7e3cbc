"""Generic composition theorems for (ε, δ)-DP: basic and advanced (Dwork & Roth 2014, Thm 3.20).

These hold for *any* (ε, δ)-DP mechanisms, composed adaptively. For Gaussian releases the
exact composition (:func:`approxdp.accounting.composition.gaussian.compose_gaussian`) is
always tighter; for k identical (ε, δ)-DP steps the optimal composition
(:func:`approxdp.accounting.composition.optimal.optimal_composition`) is the tightest possible.

See https://doi.org/10.1561/0400000042 (Dwork & Roth 2014), Thm 3.16 and 3.20.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp._numerics import FloatArray
from approxdp._validation import as_float_array, check_parameter
from approxdp.accounting.guarantees import FloatOrArray, Guarantee, to_output
from approxdp.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "advanced_composition",
    "basic_composition",
    "check_steps",
    "simplified_advanced_composition",
]


def check_steps(name: str, value: Any) -> int:
    """Validate a number of composed steps (an integer ≥ 1) and return it as ``int``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float)):
        raise ParameterTypeError(f"{name} must be an integer >= 1, got {value!r}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {name}={value!r}")
    k = int(value)
    if k < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1, got {name}={k}")
    return k


def basic_composition(budgets: npt.ArrayLike) -> Guarantee:
    """Basic (sequential) composition: (ε₁, δ₁), …, (ε_k, δ_k) compose to (Σ εᵢ, Σ δᵢ).

    Holds under adaptive composition (D. Wang's notes, Lemma 5.3; Dwork & Roth 2014, Thm 3.16).

    Args:
        budgets: a sequence of (ε, δ) pairs, or an array of shape (k, 2). ε ≥ 0, δ ∈ [0, 1).

    Returns:
        Guarantee (upper bound) with ε = Σ εᵢ and δ = min(1, Σ δᵢ).

    Raises:
        ParameterTypeError, InvalidParameterError: on a malformed or out-of-range budget.

    Example:
        >>> basic_composition([(0.5, 1e-6), (0.25, 0.0)]).as_tuple()
        (0.75, 1e-06)
    """
    arr = as_float_array("budgets", budgets)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise InvalidParameterError(
            f"budgets must be a non-empty sequence of (epsilon, delta) pairs, got shape {arr.shape}"
        )
    check_parameter("budgets epsilon", arr[:, 0], "epsilon_unbounded")
    check_parameter("budgets delta", arr[:, 1], "delta_cost")
    eps = _fsum_or_inf(arr[:, 0].tolist())
    delta = min(1.0, math.fsum(arr[:, 1].tolist()))
    return Guarantee(eps, delta, "upper bound", "basic composition (Dwork-Roth Thm 3.16)")


def _fsum_or_inf(values: list[float]) -> float:
    """The exact float sum of non-negative ``values``; ``inf`` when it exceeds the largest float
    (``math.fsum`` raises OverflowError there; inf is the true, vacuous bound)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def _check_common(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, k: int, delta_prime: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, int, FloatArray]:
    eps = check_parameter("epsilon", epsilon)
    dlt = check_parameter("delta", delta, "delta_cost")
    steps = check_steps("k", k)
    dp = check_parameter("delta_prime", delta_prime, "delta")
    return eps, dlt, steps, dp


def advanced_composition(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, k: int, delta_prime: npt.ArrayLike
) -> Guarantee:
    """Advanced composition of k adaptive (ε, δ)-DP steps (Dwork & Roth 2014, Thm 3.20).

    ε' = √(2k ln(1/δ')) ε + k ε (e^ε − 1),   δ' _total = k δ + δ'
    (Ziani's notes, Thm 5). Vectorized over ``epsilon``, ``delta``, ``delta_prime``.

    At ε = 1 it never beats basic composition (k ε (e − 1) > k ε alone); it beats basic
    composition only for k > 2 ln(1/δ') / (2 − e^ε)² and ε < ln 2.

    Args:
        epsilon: per-step ε ≥ 0 (finite).
        delta: per-step δ ∈ [0, 1).
        k: number of steps, an integer ≥ 1.
        delta_prime: the slack δ' ∈ (0, 1).

    Returns:
        Guarantee (upper bound) (ε', min(1, kδ + δ')).

    Example:
        >>> round(advanced_composition(0.01, 0.0, 10_000, 1e-6).epsilon, 4)
        6.2615
    """
    eps, dlt, steps, dp = _check_common(epsilon, delta, k, delta_prime)
    with np.errstate(over="ignore"):  # e^ε overflows above ε ≈ 709.8: ε' is then inf, truly
        eps_total = np.sqrt(2.0 * steps * -np.log(dp)) * eps + steps * eps * np.expm1(eps)
    delta_total = np.minimum(1.0, steps * dlt + dp)
    return Guarantee(
        to_output(eps_total),
        to_output(delta_total),
        "upper bound",
        "advanced composition (Dwork-Roth Thm 3.20)",
    )


def simplified_advanced_composition(
    epsilon: npt.ArrayLike, k: int, delta_prime: npt.ArrayLike
) -> Guarantee:
    """The notes' simplified advanced composition ε' = 2 ε √(2k ln(1/δ')) — an APPROXIMATION.

    From Near & Abuah ("Advanced Composition", ε-DP steps; https://programming-dp.com/ch6.html). It
    is an upper bound only when it dominates Thm 3.20, i.e. when √k (e^ε − 1) ≤ √(2 ln(1/δ'));
    elsewhere (e.g. ε = 1 and k ≥ 7 at δ' = 1e-4) it UNDERESTIMATES the privacy loss and must not be
    used to account. The returned kind says which case applies (``"upper bound"`` only if the
    condition holds for every element).

    Args:
        epsilon: per-step ε ≥ 0 of pure ε-DP steps.
        k: number of steps, an integer ≥ 1.
        delta_prime: δ' ∈ (0, 1).

    Returns:
        Guarantee (ε', δ'), kind "upper bound" where valid, else "approximation".
    """
    eps = check_parameter("epsilon", epsilon)
    steps = check_steps("k", k)
    dp = check_parameter("delta_prime", delta_prime, "delta")
    log_inv = -np.log(dp)
    eps_total = 2.0 * eps * np.sqrt(2.0 * steps * log_inv)
    with np.errstate(over="ignore"):  # e^ε = inf: the condition is simply false
        valid = bool(np.all(math.sqrt(steps) * np.expm1(eps) <= np.sqrt(2.0 * log_inv)))
    dp_out: FloatOrArray = to_output(np.broadcast_to(dp, np.shape(eps_total)).copy())
    return Guarantee(
        to_output(eps_total),
        dp_out,
        "upper bound" if valid else "approximation",
        "simplified advanced composition 2ε√(2k ln(1/δ')) (Near & Abuah; looser than Thm 3.20)",
    )
