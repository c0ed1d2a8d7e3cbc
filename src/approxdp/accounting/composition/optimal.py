"""Optimal homogeneous composition of k (ε, δ)-DP mechanisms (Kairouz et al. 2017).

Kairouz et al. 2017 (ICML 2015 / IEEE Trans. Inf. Theory 2017, Thm 3.3 and its proof) show that the
k-fold adaptive composition of (ε, δ)-DP mechanisms is (ε_g, δ_g)-DP **iff**

    δ_g ≥ 1 − (1 − δ)^k (1 − S(ε_g)),
    S(ε_g) = (1 + e^ε)^(−k) Σ_{l=0}^{k} C(k, l) [e^((k−l)ε) − e^(ε_g) e^(lε)]₊ ,

and the bound is attained by composing randomized response, so it is exact over the class of
(ε, δ)-DP mechanisms (cited by Zhao et al. 2019 as [4]). At the breakpoints ε_g = (k − 2i)ε this is
Kairouz et al.'s δ_i = Σ_{l<i} C(k, l)(e^((k−l)ε) − e^((k−2i+l)ε)) / (1 + e^ε)^k.

Every sum is evaluated in log space (``logsumexp`` of log-binomials), so k = 10⁴ and ε up to
hundreds work in float64; the breakpoint is found by binary search (O(k log k)) and ε_g
inside a segment in closed form against δ'(1 − η), η ≈ 1e-13·k·(1 + ε) covering the float64
error of the sums, then rounded up by a few ulps (never under; checked at 40 digits in tests).

Cost: every evaluation sums k + 1 terms, so time and memory grow linearly in k (about 0.5 s and
tens of MB at k = 10⁶). :data:`OPTIMAL_MAX_STEPS` bounds k: above it
:func:`optimal_composition` refuses with a typed error rather than run for minutes, and the
accountant's rules fall back to bounds that cost O(1) in k
(:mod:`approxdp.accounting.composition.rules`).

See https://arxiv.org/abs/1311.0776 (Kairouz et al. 2017), Thm 3.3.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, logsumexp

from approxdp._validation import check_parameter
from approxdp.accounting.composition.closed_form import check_steps
from approxdp.accounting.guarantees import Guarantee, round_up
from approxdp.errors import InvalidParameterError

__all__ = [
    "OPTIMAL_MAX_STEPS",
    "check_optimal_steps",
    "kov_delta",
    "optimal_composition",
    "optimal_epsilon",
]

FloatArray = npt.NDArray[np.float64]
RULE = "optimal homogeneous composition (Kairouz-Oh-Viswanath 2017, Thm 3.3)"
#: Largest number of steps the optimal composition is evaluated for (its cost is O(k)).
OPTIMAL_MAX_STEPS = 1_000_000


def check_optimal_steps(k: int) -> int:
    """``k`` if the optimal composition can be evaluated for it, else InvalidParameterError."""
    if k > OPTIMAL_MAX_STEPS:
        raise InvalidParameterError(
            f"optimal composition sums k + 1 terms per evaluation (time and memory O(k)) and "
            f"is limited to k <= {OPTIMAL_MAX_STEPS:,}, got k={k:,}; use advanced_composition "
            "(O(1) in k) or, for Gaussian releases, compose_gaussian (exact, O(1) in k)"
        )
    return k


@lru_cache(maxsize=64)
def _log_terms(epsilon: float, k: int) -> tuple[FloatArray, FloatArray]:
    """log of C(k,l) e^((k−l)ε)/(1+e^ε)^k and of C(k,l) e^(lε)/(1+e^ε)^k, l = 0..k."""
    l = np.arange(k + 1, dtype=np.float64)
    log_binom = gammaln(k + 1.0) - gammaln(l + 1.0) - gammaln(k - l + 1.0)
    log_norm = k * float(np.logaddexp(0.0, epsilon))
    high = log_binom + (k - l) * epsilon - log_norm
    low = log_binom + l * epsilon - log_norm
    high.setflags(write=False)
    low.setflags(write=False)
    return high, low


def _log_s(epsilon: float, k: int, eps_g: float) -> float:
    """log S(ε_g) (−inf when S = 0): the δ of the pure part, Kairouz et al.'s hockey-stick sum."""
    if epsilon == 0.0:
        return -math.inf
    high, _ = _log_terms(epsilon, k)
    # term l active iff (k − 2l)ε > ε_g; term = C e^((k−l)ε)(1 − e^(ε_g − (k−2l)ε)) / norm
    l = np.arange(k + 1, dtype=np.float64)
    with np.errstate(over="ignore"):  # a gap beyond ±max float is ±inf: the sign is all we use
        gap = (k - 2.0 * l) * epsilon - eps_g
    active = gap > 0
    if not bool(np.any(active)):
        return -math.inf
    vals = high[active] + np.log(-np.expm1(-gap[active]))
    return float(logsumexp(vals))


def kov_delta(epsilon: float, delta: float, k: int, eps_g: float) -> float:
    """Exact δ_g(ε_g) = 1 − (1 − δ)^k (1 − S(ε_g)) of k composed (ε, δ)-DP steps
    (Kairouz et al. 2017).

    Args:
        epsilon: per-step ε ≥ 0. delta: per-step δ ∈ [0, 1). k: steps ≥ 1.
        eps_g: the ε at which to evaluate the composed profile (any real; ≥ kε gives 1−(1−δ)^k).

    Returns:
        The smallest δ_g for which the composition is (eps_g, δ_g)-DP, as a float.
    """
    s = math.exp(_log_s(epsilon, k, eps_g))
    if s >= 1.0:  # e.g. one step of ε = 1000 at ε_g = 0: S = 1 to float precision
        return 1.0
    log_keep = k * math.log1p(-delta) + math.log1p(-s)
    return min(1.0, -math.expm1(log_keep))


def optimal_epsilon(epsilon: float, k: int, delta_prime: float) -> float:
    """Least ε_g ≥ 0 with S(ε_g) ≤ δ' (the pure part of Kairouz et al.'s bound), rounded up.

    Binary search over the breakpoints ε_i = (k − 2i)ε, then on the segment
    [ε_{i+1}, ε_i] (active terms l ≤ i) S(ε_i − t) = S(ε_i) + (1 − e^(−t)) B_i with
    B_i = Σ_{l≤i} C(k,l) e^((k−2i+l)ε)/(1+e^ε)^k, so t = −log1p(−(δ' − S(ε_i))/B_i).
    """
    if epsilon == 0.0 or delta_prime >= 1.0:
        return 0.0
    if delta_prime <= 0.0:
        return k * epsilon
    # Float64 log-space sums carry a relative error of order k·(1+ε)·1e-16 in S; aim below δ'
    # by a margin that covers it, so that the rounded result is never on the wrong side.
    margin = min(1e-6, 1e-13 * (k + 10) * (1.0 + epsilon))
    delta_prime = delta_prime * (1.0 - margin)
    log_dp = math.log(delta_prime)
    if _log_s(epsilon, k, 0.0) <= log_dp:
        return 0.0
    # S(ε_i) increases with i; S(ε_0 = kε) = 0 ≤ δ'. Find the largest i with S(ε_i) ≤ δ'.
    lo, hi = 0, k // 2 + 1  # invariant: S(ε_lo) ≤ δ', S(ε_hi) > δ' (ε_hi may be < 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _log_s(epsilon, k, (k - 2 * mid) * epsilon) <= log_dp:
            lo = mid
        else:
            hi = mid
    i = lo
    eps_i = (k - 2 * i) * epsilon
    s_i = math.exp(_log_s(epsilon, k, eps_i))
    _, low = _log_terms(epsilon, k)
    log_b = float(logsumexp(low[: i + 1] + (k - 2 * i) * epsilon))
    frac = (delta_prime - s_i) / math.exp(log_b) if log_b > -745.0 else math.inf
    t = -math.log1p(-frac) if frac < 1.0 else 2.0 * epsilon
    eps_g = max(eps_i - min(t, 2.0 * epsilon), eps_i - 2.0 * epsilon, 0.0)
    eps_g = round_up(eps_g, 8) if eps_g > 0 else 0.0
    # Private side: never return an ε_g whose S exceeds δ' because of rounding.
    while _log_s(epsilon, k, eps_g) > log_dp and eps_g < eps_i:
        eps_g = min(eps_i, round_up(eps_g + 1e-15 * max(1.0, eps_g), 1))
    return eps_g


def optimal_composition(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, k: int, delta_prime: npt.ArrayLike
) -> Guarantee:
    """Optimal composition of k adaptive (ε, δ)-DP steps (Kairouz et al. 2017, Thm 3.3).

    Returns the least ε_g such that the composition is (ε_g, δ_g)-DP with
    δ_g = 1 − (1 − δ)^k (1 − δ') ≤ kδ + δ' — the same δ budget as advanced composition's
    (kδ + δ'), so the two are directly comparable and optimal ≤ advanced, ≤ basic (kε).

    Args:
        epsilon: per-step ε ≥ 0 (finite). delta: per-step δ ∈ [0, 1).
        k: number of steps, integer ≥ 1 (k up to 10⁴ takes milliseconds, 10⁶ about half a
            second; above :data:`OPTIMAL_MAX_STEPS` it is refused).
        delta_prime: δ' ∈ (0, 1), the part of δ_g spent on the pure-DP tail.

    Returns:
        Guarantee (exact over all (ε, δ)-DP mechanisms, ε_g rounded up by a few ulps).

    Raises:
        InvalidParameterError: a parameter out of range, or k > :data:`OPTIMAL_MAX_STEPS`.

    Example:
        >>> g = optimal_composition(0.1, 0.0, 100, 1e-6)
        >>> g.epsilon < 10.0
        True
    """
    eps = float(check_parameter("epsilon", epsilon))
    dlt = float(check_parameter("delta", delta, "delta_cost"))
    steps = check_optimal_steps(check_steps("k", k))
    dp = float(check_parameter("delta_prime", delta_prime, "delta"))
    eps_g = optimal_epsilon(eps, steps, dp)
    delta_g = min(1.0, round_up(-math.expm1(steps * math.log1p(-dlt) + math.log1p(-dp))))
    return Guarantee(eps_g, delta_g, "exact", RULE)
