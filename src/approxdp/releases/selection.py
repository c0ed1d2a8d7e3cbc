"""Differentially private partition selection by Gaussian thresholding, and its δ cost.

Without a public domain, a grouped release shows only cells whose noisy count exceeds a
threshold τ. Let G be the Gaussian release of every cell present in both neighbours (ℓ2
sensitivity Δ2, (ε, δ_G)-DP) and T the thresholded noisy counts of the ≤ k cells that only the
added unit creates; each such cell has true count ≤ m, so
p = P[T ≠ ∅] ≤ 1 − (1 − Φ̄((τ − m)/σ))^k with σ the count's noise.

The output is G post-processed when T = ∅. Writing P, Q for G's output laws and H for the
hockey-stick divergence, removal gives H_{e^ε}(M(D) ‖ M(D')) = H_{e^ε(1−p)}(P ‖ Q)
≤ δ_G(ε) + p e^ε Q(E*) ≤ δ_G(ε) + p/(1 − p) (on the optimal set E*, e^ε (1 − p) Q(E*) < 1),
and addition gives ≤ (1 − p) δ_G(ε) + p. Both are at most δ_G(ε) + p/(1 − p) for every ε, so
the release is dominated by G composed with a (0, δ_T)-DP mechanism when
δ_T + (1 − δ_T) δ_G ≥ δ_G + p/(1 − p), i.e. δ_T = p / ((1 − p)(1 − δ_G)) — valid for basic
composition and for accountants that compose privacy profiles exactly. This is the standard
Gaussian-thresholding argument (Korolova et al. 2009; Wilson et al. 2020, "Differentially
private SQL with bounded user contribution"), written without the usual ≈.
Replace-one neighbours are not supported here (use a declared domain).

See https://doi.org/10.1145/1526709.1526733 (Korolova et al. 2009) and
https://arxiv.org/abs/1909.01917 (Wilson et al. 2020).
"""

from __future__ import annotations

import math

from scipy import special

from approxdp._validation import check_parameter

__all__ = ["selection_budget", "selection_delta", "selection_probability", "selection_threshold"]


def selection_probability(threshold: float, sigma: float, k: int, m: int) -> float:
    """p: probability that any of the ≤ k cells one unit creates clears ``threshold``.

    Each has true count ≤ m and noise N(0, σ²): p = 1 − (1 − Φ̄((τ − m)/σ))^k.
    """
    tail = float(special.ndtr((m - threshold) / sigma))  # Φ̄(x) = Φ(−x)
    return -math.expm1(k * math.log1p(-tail)) if tail < 1 else 1.0


def selection_delta(p: float, delta_gaussian: float) -> float:
    """δ_T = p / ((1 − p)(1 − δ_G)) charged for a total selection probability p."""
    if p >= 1.0:
        return math.inf
    return p / ((1.0 - p) * (1.0 - delta_gaussian))


def selection_budget(delta_t: float, delta_gaussian: float) -> float:
    """Largest p with :func:`selection_delta` (p, δ_G) ≤ ``delta_t`` (up to rounding)."""
    check_parameter("delta_t", delta_t, "probability")
    q = delta_t * (1.0 - delta_gaussian)
    return q / (1.0 + q)


def selection_threshold(sigma: float, k: int, m: int, p_max: float) -> float:
    """Least threshold τ (closed form, then checked) with selection probability ≤ ``p_max``.

    Errs on the private side: τ is verified with :func:`selection_probability` and raised
    until the check passes with no tolerance.

    >>> tau = selection_threshold(sigma=2.0, k=1, m=1, p_max=1e-6)
    >>> round(tau, 3), selection_probability(tau, 2.0, 1, 1) <= 1e-6
    (10.507, True)
    """
    check_parameter("sigma", sigma, "sigma_finite")
    check_parameter("p_max", p_max, "probability")
    tail = -math.expm1(math.log1p(-p_max) / k)  # 1 - (1 - tail)^k ≤ p_max
    tau = m - sigma * float(special.ndtri(tail))  # Φ̄⁻¹(q) = −Φ⁻¹(q)
    step = sigma * 1e-12 + 1e-300
    while selection_probability(tau, sigma, k, m) > p_max:
        tau += step
        step *= 2.0
    return tau
