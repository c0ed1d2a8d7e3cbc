"""Privacy profiles of the Laplace and truncated Laplace mechanisms, continuous and discrete.

All four are the exact hockey-stick divergence δ(ε) = sup_E P[M(D) ∈ E] − e^ε P[M(D') ∈ E] of
a location family with a log-concave noise density, for the worst neighbouring shift. The
likelihood ratio p(y)/p(y − m) is non-increasing in y (log-concavity), so the optimal events are
half-lines E = {y ≤ c} and δ_m(ε) = sup_c F(c) − e^ε F(c − m) grows with the shift m: the
largest shift (the sensitivity) is the worst case, for every ε ≥ 0.

Laplace, scale b, sensitivity Δ (one coordinate), ε₀ = Δ/b: the privacy loss is ε₀ for
y ≤ 0, −ε₀ for y ≥ Δ and (Δ − 2y)/b in between, and integrating (1 − e^(ε − L))₊ gives

    δ(ε) = 1 − exp((ε − ε₀)/2) for 0 ≤ ε < ε₀, and 0 for ε ≥ ε₀.

Truncated Laplace (D. Wang's notes, Thm 5.6; Geng et al. 2018): density e^(−|y|/λ)/N on
|y| ≤ τ, N = 2λ(1 − e^(−τ/λ)), shift Δ ≤ τ, ε₀ = Δ/λ. Outputs in [−τ, Δ − τ) are impossible
for the neighbour (the "Bad" set), on [Δ − τ, 0] the loss is ε₀, on [0, Δ] it is (Δ − 2y)/λ,
above Δ it is −ε₀. Integrating (p − e^ε q)₊ over the three pieces:

    δ(ε) = [λe^(−τ/λ)(e^(ε₀) − 1) + λ(1 − e^(−(τ−Δ)/λ))(1 − e^(ε−ε₀))₊
            + λ(1 − e^(−(ε₀−ε)/2))₊²] / N.

At ε ≥ ε₀ only the Bad set remains, and with λ = Δ/ε, τ = λ ln(1 + (e^ε − 1)/(2δ)) it has mass
exactly δ (Thm 5.6). Below ε₀ the profile is larger, but finite and well defined.

Discrete Laplace (the secure lattice release), P[k] ∝ w^|k|, w = e^(−r), integer shift m:
the same three pieces as sums. With K the number of k in [1, m] with r(m − 2k) > ε,

    δ(ε) = [1 − e^(ε − rm) + (1 − w^K)(w − e^ε w^(m−K))] / (1 + w)      (ε < rm; else 0).

Truncated to |k| ≤ T (T ≥ m), with Z_T(1 − w) = 1 + w − 2w^(T+1):

    δ(ε) = [w^(T−m+1)(1 − w^m) + (1 − w^(T−m+1))(1 − e^(ε−rm))₊
            + (1 − w^K)(w − e^ε w^(m−K))] / (1 + w − 2w^(T+1)).

Every piece is a product of terms computed with ``expm1``: no cancellation.

See https://arxiv.org/abs/1810.00877 (Geng et al. 2018) for the truncated Laplace mechanism.
"""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_parameter
from approxdp.errors import InvalidParameterError

__all__ = [
    "discrete_laplace_delta",
    "discrete_truncated_laplace_delta",
    "laplace_delta",
    "truncated_laplace_delta",
    "truncated_laplace_tau",
]

FloatArray = npt.NDArray[np.float64]


@overload
def laplace_delta(epsilon: float, scale: float, sensitivity: float = ...) -> float: ...
@overload
def laplace_delta(epsilon: npt.ArrayLike, scale: float, sensitivity: float = ...) -> FloatArray: ...


def laplace_delta(
    epsilon: npt.ArrayLike, scale: float, sensitivity: float = 1.0
) -> float | FloatArray:
    """δ(ε) = max(0, 1 − e^((ε − Δ/b)/2)) of the one-dimensional Laplace mechanism.

    >>> laplace_delta(1.0, 1.0, 1.0)
    0.0
    """
    eps = check_parameter("epsilon", epsilon, "epsilon_unbounded")
    b = float(check_parameter("scale", scale))
    d = float(check_parameter("sensitivity", sensitivity))
    eps0 = d / b
    out = np.where(eps < eps0, -np.expm1(np.minimum(eps - eps0, 0.0) / 2.0), 0.0)
    return float(out) if out.ndim == 0 else out


def truncated_laplace_tau(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """τ = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)) (D. Wang's notes, Thm 5.6), rounded up by a relative 1e-12
    (a larger τ only lowers the Bad-set mass, so the float value stays (ε, δ)-DP).

    >>> tau = truncated_laplace_tau(1.0, 1e-3)
    >>> truncated_laplace_delta(1.0, 1.0, tau, 1.0) <= 1e-3
    True
    """
    # In log space, so that large ε (e^ε overflows from ε ≈ 709) and tiny δ stay finite:
    # ln(1 + x) with ln x = ln(e^ε − 1) − ln(2δ), as the softplus lr + ln(1 + e^−lr).
    if epsilon > 1.0:
        log_x = epsilon + math.log1p(-math.exp(-epsilon))
    else:
        log_x = math.log(math.expm1(epsilon))
    lr = log_x - math.log(2.0) - math.log(delta)
    soft = lr + math.log1p(math.exp(-lr)) if lr > 0 else math.log1p(math.exp(lr))
    return (sensitivity / epsilon) * soft * (1.0 + 1e-12)


@overload
def truncated_laplace_delta(
    epsilon: float, lam: float, tau: float, sensitivity: float = ...
) -> float: ...
@overload
def truncated_laplace_delta(
    epsilon: npt.ArrayLike, lam: float, tau: float, sensitivity: float = ...
) -> FloatArray: ...


def truncated_laplace_delta(
    epsilon: npt.ArrayLike, lam: float, tau: float, sensitivity: float = 1.0
) -> float | FloatArray:
    """Exact δ(ε) of the truncated Laplace mechanism (module docstring), for every ε ≥ 0.

    Args:
        epsilon: ε ≥ 0 (scalar or array).
        lam: λ > 0, the scale of the density e^(−|y|/λ).
        tau: τ ≥ Δ, the truncation bound.
        sensitivity: Δ > 0 (the shift between neighbouring answers).

    Raises:
        InvalidParameterError: for out-of-range arguments, or Δ > τ (then the neighbours'
            supports barely overlap and the mechanism is not a useful (ε, δ) mechanism).

    >>> lam, d = 1.0, 1e-3
    >>> tau = truncated_laplace_tau(1.0, d, 1.0)
    >>> round(truncated_laplace_delta(1.0, lam, tau, 1.0) / d, 9)
    1.0
    >>> truncated_laplace_delta(0.5, lam, tau, 1.0) > d
    True
    """
    eps = check_parameter("epsilon", epsilon, "epsilon_unbounded")
    lm = float(check_interval("lam", lam, 0.0, math.inf, low_open=True, high_open=True))
    t = float(check_interval("tau", tau, 0.0, math.inf, low_open=True, high_open=True))
    d = float(check_interval("sensitivity", sensitivity, 0.0, math.inf, low_open=True))
    if d > t:
        raise InvalidParameterError(
            f"truncated_laplace_delta needs tau >= sensitivity, got tau={t:g}, "
            f"sensitivity={d:g}"
        )
    eps0 = d / lm
    mass = -math.expm1(-t / lm)  # N/(2λ)
    bad = math.exp(-t / lm) * math.expm1(eps0) / (2.0 * mass)
    gap = np.minimum(eps - eps0, 0.0)
    flat = -math.expm1(-(t - d) / lm) * -np.expm1(gap)
    peak = np.expm1(gap / 2.0) ** 2
    out = bad + (flat + peak) / (2.0 * mass)
    return float(out) if out.ndim == 0 else out


def _terms_below_loss(eps: FloatArray, rate: float, shift: int) -> FloatArray:
    """K(ε): the number of k in [1, m] with r(m − 2k) > ε (float-consistent)."""
    k = np.ceil((shift - eps / rate) / 2.0) - 1.0
    k = np.clip(k, 0.0, float(shift))
    up = (k + 1 <= shift) & (rate * (shift - 2.0 * (k + 1)) > eps)
    k = np.where(up, k + 1, k)
    down = (k >= 1) & ~(rate * (shift - 2.0 * k) > eps)
    return np.where(down, k - 1, k)


def _check_discrete(
    epsilon: npt.ArrayLike, rate: float, shift: int
) -> tuple[FloatArray, float, int]:
    eps = check_parameter("epsilon", epsilon, "epsilon_unbounded")
    r = float(check_interval("rate", rate, 0.0, math.inf, low_open=True, high_open=True))
    m = float(check_interval("shift", shift, 1.0, 2.0**52))
    if m != math.floor(m):
        raise InvalidParameterError(f"shift must be an integer >= 1, got shift={shift!r}")
    return eps, r, int(m)


@overload
def discrete_laplace_delta(epsilon: float, rate: float, shift: int) -> float: ...
@overload
def discrete_laplace_delta(epsilon: npt.ArrayLike, rate: float, shift: int) -> FloatArray: ...


def discrete_laplace_delta(epsilon: npt.ArrayLike, rate: float, shift: int) -> float | FloatArray:
    """Exact δ(ε) of the discrete Laplace (geometric) mechanism, P[k] ∝ e^(−rate·|k|), for an
    integer shift m between neighbours (module docstring). 0 for ε ≥ rate·m.

    >>> w = math.exp(-1.0)
    >>> round(discrete_laplace_delta(0.0, 1.0, 1), 12) == round((1 - w) / (1 + w), 12)
    True
    """
    eps, r, m = _check_discrete(epsilon, rate, shift)
    w = math.exp(-r)
    k = _terms_below_loss(eps, r, m)
    gap = np.minimum(eps - r * m, 0.0)
    head = -np.expm1(gap)
    body = -np.expm1(-r * k) * w * -np.expm1(np.minimum(eps - r * (m - k - 1.0), 0.0))
    out = np.where(eps < r * m, (head + body) / (1.0 + w), 0.0)
    return float(out) if out.ndim == 0 else out


def discrete_truncated_laplace_delta(
    epsilon: npt.ArrayLike, rate: float, shift: int, bound: int
) -> Any:
    """Exact δ(ε) of the discrete Laplace conditioned on |k| ≤ T, integer shift m ≤ T
    (module docstring). At ε ≥ rate·m only the Bad set's mass remains.

    Raises:
        InvalidParameterError: bad arguments or bound < shift.
    """
    eps, r, m = _check_discrete(epsilon, rate, shift)
    t_raw = float(check_interval("bound", bound, 1.0, 2.0**52))
    if t_raw != math.floor(t_raw) or t_raw < m:
        raise InvalidParameterError(
            f"bound must be an integer >= shift={m}, got bound={bound!r}"
        )
    t = int(t_raw)
    w = math.exp(-r)
    denom = -math.expm1(-r) + 2.0 * w * -math.expm1(-r * t)  # 1 + w − 2w^(T+1)
    bad = math.exp(-r * (t - m + 1)) * -math.expm1(-r * m)
    k = _terms_below_loss(eps, r, m)
    gap = np.minimum(eps - r * m, 0.0)
    flat = -math.expm1(-r * (t - m + 1)) * -np.expm1(gap)
    body = -np.expm1(-r * k) * w * -np.expm1(np.minimum(eps - r * (m - k - 1.0), 0.0))
    out = (bad + np.where(eps < r * m, flat + body, 0.0)) / denom
    return float(out) if out.ndim == 0 else out
