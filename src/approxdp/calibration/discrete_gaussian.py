"""Calibration of the discrete Gaussian mechanism with its own profile (Canonne et al. 2020).

See https://arxiv.org/abs/2004.00010, Thm 7 (the profile), Prop. 5 and Cor. 13 (zCDP).

``calibrate_discrete_gaussian(ε, δ, Δ, dimension=d)`` returns the least σ (up to a relative
bracket width of 1e-9) such that N_Z(0, σ²) noise on each of d coordinates is (ε, δ)-DP for
integer queries whose neighbouring answers differ by an integer vector of ℓ2-norm ≤ Δ:

* d = 1: the exact profile of Canonne et al. 2020 Thm 7 at the integer shift ⌊Δ⌋;
* d > 1: the smaller of the smoothing bound (the discrete Gaussian is a post-processed
  continuous Gaussian up to a factor e^(±ζ), :mod:`approxdp.profiles.discrete_gaussian_smoothing`)
  and the ρ-zCDP bound of Canonne et al. 2020 Prop. 5 / Cor. 13
  (:func:`approxdp.profiles.discrete_gaussian.discrete_gaussian_vector_log_delta`).

It errs on the private side: the bisection keeps the upper end of the bracket, and the returned
σ is checked with ``ln δ_bound(ε; σ) + ln(1 + 1e-9) ≤ ln δ`` (a margin far above the float error
of the log-space sums), raising :class:`~approxdp.errors.NotPrivateError` if the check fails.
The σ of a sampler is then rounded *up* onto its exact grid
(:meth:`~approxdp.mechanisms.DiscreteGaussianSampler.at_least`), which only adds noise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from approxdp._validation import check_interval, check_parameter
from approxdp.errors import InvalidParameterError, NotPrivateError, ParameterTypeError
from approxdp.profiles.discrete_gaussian import discrete_gaussian_vector_log_delta

__all__ = ["calibrate_discrete_gaussian", "check_dimension", "discrete_gaussian_satisfies"]

_MARGIN = 1e-9
_SIGMA_MAX = 2.0**40


def check_dimension(dimension: Any) -> int:
    """The number of coordinates of a release, an integer ≥ 1 (typed errors otherwise)."""
    if isinstance(dimension, (bool, np.bool_)) or not isinstance(dimension, (int, np.integer)):
        raise ParameterTypeError(
            f"dimension must be an integer >= 1, got {type(dimension).__name__} {dimension!r}"
        )
    if dimension < 1:
        raise InvalidParameterError(f"dimension must be an integer >= 1, got dimension={dimension}")
    return int(dimension)


def discrete_gaussian_satisfies(
    epsilon: float, delta: float, sigma: float, sensitivity: float, dimension: int = 1
) -> bool:
    """True when N_Z(0, σ²) noise on each of ``dimension`` coordinates is provably (ε, δ)-DP
    for integer shift vectors of ℓ2-norm ≤ Δ, with the margin of the module docstring.

    >>> discrete_gaussian_satisfies(1.0, 1e-5, 4.0, 1)
    True
    >>> discrete_gaussian_satisfies(1.0, 1e-5, 2.0, 1)
    False
    """
    if sensitivity == 0.0:
        return True
    log_d = discrete_gaussian_vector_log_delta(epsilon, sigma, sensitivity, dimension)
    return bool(log_d + math.log1p(_MARGIN) <= math.log(delta))


def calibrate_discrete_gaussian(
    epsilon: npt.ArrayLike, delta: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0, *,
    dimension: int = 1,
) -> float:
    """Least σ with which the discrete Gaussian mechanism is (ε, δ)-DP (module docstring).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: Δ ≥ 0, the ℓ2-norm bound of the integer difference vector between
            neighbouring answers (for ``dimension == 1``, |q(x) − q(x')| ≤ Δ, i.e. ⌊Δ⌋).
        dimension: number of coordinates released with independent noise.

    Returns:
        σ as a float; 0.0 when no noise is needed (⌊Δ⌋ = 0 in one dimension, or Δ = 0).

    Raises:
        InvalidParameterError: out-of-range ε, δ, Δ or dimension; no σ below 2^40 suffices.
        ParameterTypeError: a non-numeric argument or a non-integer dimension.
        NotPrivateError: if the final verification fails (never expected).

    >>> s = calibrate_discrete_gaussian(1.0, 1e-5, 1)
    >>> 3.0 < s < 4.5
    True
    >>> calibrate_discrete_gaussian(1.0, 1e-5, 10, dimension=100) < 1.01 * 3.7302 * 10
    True
    """
    eps = float(check_parameter("epsilon", epsilon, "epsilon_positive"))
    dlt = float(check_parameter("delta", delta))
    sens = float(check_interval("sensitivity", sensitivity, 0.0, _SIGMA_MAX))
    dim = check_dimension(dimension)
    if sens == 0.0 or (dim == 1 and math.floor(sens) == 0):
        return 0.0

    def ok(s: float) -> bool:
        return discrete_gaussian_satisfies(eps, dlt, s, sens, dim)

    lo = max(sens, 1.0) * 1e-3
    while ok(lo):
        lo /= 2.0
        if lo < 1e-6 * max(sens, 1.0):
            break
    hi = max(2.0 * lo, sens)
    while not ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > _SIGMA_MAX:
            raise InvalidParameterError(
                f"no sigma below 2^40 makes the discrete Gaussian ({eps:g}, {dlt:g})-DP for "
                f"sensitivity={sens:g}, dimension={dim}; increase epsilon or delta"
            )
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    if not ok(hi):
        raise NotPrivateError(f"discrete Gaussian calibration failed to verify sigma={hi!r}")
    return hi
