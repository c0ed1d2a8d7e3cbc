"""Privacy profiles of the Laplace and truncated Laplace mechanisms (SPEC §4).

Laplace, scale b, sensitivity Δ (one coordinate), ε₀ = Δ/b: the privacy loss is ε₀ for
y ≤ 0, −ε₀ for y ≥ Δ and (Δ − 2y)/b in between, and integrating (1 − e^(ε − L))₊ gives

    δ(ε) = 1 − exp((ε − ε₀)/2) for 0 ≤ ε < ε₀, and 0 for ε ≥ ε₀.

Truncated Laplace (lecture-wang Thm 5.6): density ∝ e^(−|y|/λ) on |y| ≤ τ. When Δ/λ ≤ ε and
Δ ≤ τ, the only outputs with loss above ε are those the neighbour cannot produce, so
δ(ε) = P[Bad] = e^(−τ/λ)(e^(Δ/λ) − 1)/(2(1 − e^(−τ/λ))) exactly (the Thm 5.6 integral);
with λ = Δ/ε and τ = λ ln(1 + (e^ε − 1)/(2δ)) this equals δ.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from approxdp._validation import check_interval
from approxdp.errors import InvalidParameterError

__all__ = ["laplace_delta", "truncated_laplace_delta", "truncated_laplace_tau"]


def laplace_delta(epsilon: Any, scale: float, sensitivity: float = 1.0) -> Any:
    """δ(ε) = max(0, 1 − e^((ε − Δ/b)/2)) of the one-dimensional Laplace mechanism.

    >>> laplace_delta(1.0, 1.0, 1.0)
    0.0
    """
    eps = check_interval("epsilon", epsilon, 0.0, math.inf)
    b = float(check_interval("scale", scale, 0.0, math.inf, low_open=True))
    d = float(check_interval("sensitivity", sensitivity, 0.0, math.inf, high_open=True))
    eps0 = d / b
    out = np.where(eps < eps0, -np.expm1(np.minimum(eps - eps0, 0.0) / 2.0), 0.0)
    return float(out) if out.ndim == 0 else out


def truncated_laplace_tau(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """τ = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)) (lecture-wang Thm 5.6)."""
    return (sensitivity / epsilon) * math.log1p(math.expm1(epsilon) / (2.0 * delta))


def truncated_laplace_delta(epsilon: float, lam: float, tau: float, sensitivity: float) -> float:
    """P[Bad] = e^(−τ/λ)(e^(Δ/λ) − 1)/(2(1 − e^(−τ/λ))): δ at any ε ≥ Δ/λ, for Δ ≤ τ.

    Raises:
        InvalidParameterError: for ε < Δ/λ or Δ > τ, where the formula does not apply.
    """
    if epsilon < sensitivity / lam or sensitivity > tau:
        raise InvalidParameterError(
            f"truncated_laplace_delta needs epsilon >= sensitivity/lam and tau >= sensitivity, "
            f"got epsilon={epsilon:g}, lam={lam:g}, tau={tau:g}, sensitivity={sensitivity:g}"
        )
    return math.exp(-tau / lam) * math.expm1(sensitivity / lam) / (-2.0 * math.expm1(-tau / lam))
