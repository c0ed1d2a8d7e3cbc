"""Exact privacy profile of the discrete Gaussian mechanism, and bounds for vectors.

Canonne et al. 2020 (https://arxiv.org/abs/2004.00010), Theorem 7: for an integer query with
|q(x) − q(x')| ≤ Δ and noise Y ~ N_Z(0, σ²), P[Y = y] = e^(−y²/(2σ²)) / Σ_z e^(−z²/(2σ²)),

    δ(ε) = P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2].

We evaluate it as the hockey-stick divergence itself, a sum of positive terms with no
cancellation: with the privacy loss L(y) = (Δ² + 2yΔ)/(2σ²) of output y (the mirrored side),
δ(ε) = Σ_{y : L(y) > ε} p(y)(1 − e^(ε − L(y))), each factor by ``-expm1``, summed in log space.
The normaliser uses the Poisson summation identity
Σ_z e^(−z²/(2σ²)) = σ√(2π) Σ_k e^(−2π²σ²k²) (exact; two terms suffice for σ ≥ 1/2). A real
sensitivity Δ means integer shifts up to ⌊Δ⌋, and δ grows with the shift, so ⌊Δ⌋ is used.

For vectors (d coordinates with independent noise, integer shift vectors of ℓ2-norm ≤ Δ) the
exact profile needs a supremum over shift vectors; :func:`discrete_gaussian_vector_log_delta`
bounds it by the smaller of two proven bounds:

* the smoothing bound of :mod:`approxdp.profiles.discrete_gaussian_smoothing`:
  e^ζ δ_G(ε; Δ/√(σ² − b²) + √(2π)ζ), within a relative σ of about b²/(2σ²) of the continuous
  Gaussian's exact profile (tight for σ above a few units);
* ρ-zCDP with ρ = Δ²/(2σ²) (Canonne et al. 2020 Prop. 5: the Rényi divergence of N_Z(μ, σ²) from
  N_Z(ν, σ²) is at most α(μ − ν)²/(2σ²), additive over coordinates) and the conversion of Canonne et
  al. 2020 Cor. 13, δ = inf_{α>1} e^((α−1)(αρ−ε)) (1 − 1/α)^α / (α − 1) (better for σ ≲ 3).
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from approxdp._validation import check_parameter
from approxdp.errors import InvalidParameterError
from approxdp.profiles.discrete_gaussian_smoothing import smoothed_log_delta

__all__ = [
    "discrete_gaussian_delta",
    "discrete_gaussian_log_delta",
    "discrete_gaussian_log_normalizer",
    "discrete_gaussian_pmf",
    "discrete_gaussian_tail",
    "discrete_gaussian_vector_log_delta",
    "zcdp_delta",
    "zcdp_log_delta",
]

FloatArray = npt.NDArray[np.float64]
_SUM_SPAN = 40.0  # terms beyond 40σ from the first term are below e^(-800) relative: underflow


def discrete_gaussian_log_normalizer(sigma: float) -> float:
    """ln Σ_{z∈Z} e^(−z²/(2σ²)), by Poisson summation (exact identity, series truncated at
    terms below 1e-300 relative)."""
    s = float(sigma)
    if s < 0.5:
        z = np.arange(-40, 41, dtype=np.float64)
        return float(special.logsumexp(-(z * z) / (2 * s * s)))
    k = np.arange(1, 8, dtype=np.float64)
    corr = 2.0 * float(np.sum(np.exp(-2.0 * math.pi**2 * s * s * k * k)))
    return math.log(s) + 0.5 * math.log(2 * math.pi) + math.log1p(corr)


def discrete_gaussian_pmf(y: npt.ArrayLike, sigma: float) -> FloatArray | float:
    """P[Y = y] for Y ~ N_Z(0, σ²) (Canonne et al. 2020 Def. 1); integers y, scalar σ > 0.

    >>> round(discrete_gaussian_pmf(0, 1.0), 12)  # φ(0) = 0.398942280401, minus 5e-9
    0.398942278267
    """
    s = float(check_parameter("sigma", sigma, "sigma_finite"))
    yy = np.asarray(y, dtype=np.float64)
    out = np.exp(-(yy * yy) / (2 * s * s) - discrete_gaussian_log_normalizer(s))
    return float(out) if out.ndim == 0 else out


def discrete_gaussian_tail(x: float, sigma: float) -> float:
    """P[Y > x] for Y ~ N_Z(0, σ²), by direct summation in log space."""
    s = float(sigma)
    start = math.floor(x) + 1
    if start <= -_SUM_SPAN * s - 2:
        return 1.0
    if start < 0:
        return 1.0 - discrete_gaussian_tail(-start, s)  # P[Y > x] = 1 − P[Y ≥ start] ... symmetric
    stop = start + int(_SUM_SPAN * s) + 2
    z = np.arange(start, stop, dtype=np.float64)
    log_sum = float(special.logsumexp(-(z * z) / (2 * s * s)))
    return math.exp(log_sum - discrete_gaussian_log_normalizer(s))


def _log_delta_scalar(eps: float, sigma: float, delta_sens: float) -> float:
    delta_sens = float(math.floor(delta_sens))
    if delta_sens == 0.0:
        return -math.inf
    if math.isinf(sigma):
        return -math.inf
    s2 = sigma * sigma
    # Loss L(y) = (Δ² + 2yΔ)/(2σ²) for output y of the shifted-by-(−Δ)... by symmetry we sum
    # over y ≥ y0 where L(y) > ε, i.e. y > εσ²/Δ − Δ/2, with p(y) the N_Z(0, σ²) pmf.
    threshold = eps * s2 / delta_sens - delta_sens / 2.0
    y0 = math.floor(threshold) + 1
    span = int(_SUM_SPAN * sigma) + 2
    if y0 < -span:  # loss exceeds ε on essentially all the mass: extend the sum down
        y0 = -span
    y = np.arange(y0, max(y0, 0) + span + 1, dtype=np.float64)
    loss = (delta_sens * delta_sens + 2.0 * y * delta_sens) / (2.0 * s2)
    gap = eps - loss
    keep = gap < 0
    y, gap = y[keep], gap[keep]
    if y.size == 0:
        return -math.inf
    log_terms = -(y * y) / (2.0 * s2) + np.log(-np.expm1(gap))
    return float(special.logsumexp(log_terms)) - discrete_gaussian_log_normalizer(sigma)


@overload
def discrete_gaussian_log_delta(
    epsilon: float, sigma: float, sensitivity: float = ...
) -> float: ...
@overload
def discrete_gaussian_log_delta(
    epsilon: npt.ArrayLike, sigma: float, sensitivity: float = ...
) -> FloatArray: ...


def discrete_gaussian_log_delta(
    epsilon: npt.ArrayLike, sigma: float, sensitivity: float = 1.0
) -> float | FloatArray:
    """ln δ(ε) of the one-dimensional discrete Gaussian mechanism (Canonne et al. 2020, Thm 7),
    see the module docstring.

    Args:
        epsilon: ε ≥ 0 (scalar or array).
        sigma: σ > 0 of N_Z(0, σ²).
        sensitivity: Δ ≥ 0 with |q(x) − q(x')| ≤ Δ (integer shifts up to ⌊Δ⌋).

    Returns:
        ln δ, a float for scalar ε, else an array; −inf where δ = 0.
    """
    eps = check_parameter("epsilon", epsilon)
    s = float(check_parameter("sigma", sigma))
    d = float(check_parameter("sensitivity", sensitivity))
    out = np.array([_log_delta_scalar(float(e), s, d) for e in eps.ravel()]).reshape(eps.shape)
    return float(out) if out.ndim == 0 else out


@overload
def discrete_gaussian_delta(
    epsilon: float, sigma: float, sensitivity: float = ...
) -> float: ...
@overload
def discrete_gaussian_delta(
    epsilon: npt.ArrayLike, sigma: float, sensitivity: float = ...
) -> FloatArray: ...


def discrete_gaussian_delta(
    epsilon: npt.ArrayLike, sigma: float, sensitivity: float = 1.0
) -> float | FloatArray:
    """δ(ε) = P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2], Y ~ N_Z(0, σ²) (Canonne et al. 2020,
    Thm 7).

    >>> d = discrete_gaussian_delta(1.0, 4.0, 1)
    >>> 0.0 < d < 0.01
    True
    """
    out = np.exp(discrete_gaussian_log_delta(epsilon, sigma, sensitivity))
    return float(out) if np.ndim(out) == 0 else out


def zcdp_log_delta(epsilon: float, rho: float) -> float:
    """ln δ of ρ-zCDP at ε (Canonne et al. 2020, Cor. 13):
    inf_{α>1} (α−1)(αρ−ε) + α ln(1 − 1/α) − ln(α − 1).

    Any α > 1 gives a valid bound; we minimise numerically and return the value at the α found
    (so the result is always a valid ln δ, optimal or not), capped at 0 (δ ≤ 1).
    """
    eps = float(check_parameter("epsilon", epsilon))
    r = float(check_parameter("rho", rho))
    if r == 0.0:
        return -math.inf

    def log_bound(a: float) -> float:
        return (a - 1) * (a * r - eps) + a * math.log1p(-1 / a) - math.log(a - 1)

    a_hi = max(2.0, (eps + r) / r + 2.0)
    res = optimize.minimize_scalar(log_bound, bounds=(1.0 + 1e-9, a_hi * 4), method="bounded")
    return min(0.0, float(res.fun), log_bound(a_hi))


def zcdp_delta(epsilon: float, rho: float) -> float:
    """δ of ρ-zCDP at ε (Canonne et al. 2020 Cor. 13), ``exp`` of :func:`zcdp_log_delta`."""
    return math.exp(zcdp_log_delta(epsilon, rho))


def discrete_gaussian_vector_log_delta(
    epsilon: float, sigma: float, sensitivity: float, dimension: int
) -> float:
    """ln of an upper bound on δ(ε) for N_Z(0, σ²) noise on each of d coordinates, for integer
    shift vectors of ℓ2-norm ≤ Δ: the smaller of the smoothing and zCDP bounds (module doc).
    For d = 1 this is the exact profile (Canonne et al. 2020 Thm 7) at ⌊Δ⌋.

    Args:
        epsilon: ε ≥ 0.
        sigma: σ > 0.
        sensitivity: ℓ2-norm bound Δ ≥ 0 of the integer shift vectors.
        dimension: number of coordinates d ≥ 1.
    """
    eps = float(check_parameter("epsilon", epsilon))
    s = float(check_parameter("sigma", sigma, "sigma_finite"))
    d_sens = float(check_parameter("sensitivity", sensitivity))
    if isinstance(dimension, bool) or not isinstance(dimension, (int, np.integer)) or dimension < 1:
        raise InvalidParameterError(
            f"dimension must be an integer >= 1, got dimension={dimension!r}"
        )
    if d_sens == 0.0:
        return -math.inf
    if dimension == 1:
        return float(discrete_gaussian_log_delta(eps, s, d_sens))
    rho = d_sens * d_sens / (2.0 * s * s)
    return min(zcdp_log_delta(eps, rho), smoothed_log_delta(eps, s, d_sens, int(dimension)))
