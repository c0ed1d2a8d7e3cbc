"""Calibration of the discrete Gaussian mechanism with its own exact profile (SPEC §4).

Lives here until the calibration package (issue 2) lands; then it moves to
``approxdp.calibration.discrete_gaussian``.

``calibrate_discrete_gaussian(ε, δ, Δ)`` returns the least σ (up to a relative bracket width
of 1e-9) such that the discrete profile of CKS20 Thm 7 satisfies δ_Z(ε; σ, Δ) ≤ δ. It errs on
the private side: the bisection keeps the upper end of the bracket, and the returned σ is
checked with ``δ_Z(ε; σ, Δ)·(1 + 1e-9) ≤ δ`` (a margin far above the float error of the
log-space sum), raising if the check fails. For ``dimension > 1`` (ℓ2-sensitivity over integer
shift vectors) it calibrates the ρ-zCDP bound of CKS20 Prop. 5 / Cor. 13 instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from approxdp._validation import check_interval, check_probability
from approxdp.errors import InvalidParameterError, NotPrivateError
from approxdp.profiles.discrete_gaussian import discrete_gaussian_log_delta, zcdp_delta

__all__ = ["calibrate_discrete_gaussian", "discrete_gaussian_satisfies"]

_MARGIN = 1e-9


def discrete_gaussian_satisfies(
    epsilon: float, delta: float, sigma: float, sensitivity: float, dimension: int = 1
) -> bool:
    """True when N_Z(0, σ²) noise on each of ``dimension`` coordinates is (ε, δ)-DP for
    (ℓ2-)sensitivity Δ, with the safety margin of the module docstring."""
    if sensitivity == 0.0:
        return True
    if dimension == 1:
        log_d = discrete_gaussian_log_delta(epsilon, sigma, sensitivity)
        return bool(log_d + math.log1p(_MARGIN) <= math.log(delta))
    rho = sensitivity * sensitivity / (2.0 * sigma * sigma)
    return zcdp_delta(epsilon, rho) * (1.0 + _MARGIN) <= delta


def calibrate_discrete_gaussian(
    epsilon: float,
    delta: float,
    sensitivity: float = 1.0,
    *,
    dimension: int = 1,
    at_least: float | None = None,
) -> float:
    """Least σ with δ_Z(ε; σ, Δ) ≤ δ for the discrete Gaussian mechanism (CKS20 Thm 7).

    Args:
        epsilon: ε > 0.
        delta: δ in (0, 1).
        sensitivity: Δ ≥ 0; for ``dimension == 1`` an integer (|q(x) − q(x')| ≤ Δ), otherwise
            the ℓ2-norm bound of the integer difference vector.
        dimension: number of coordinates released with independent noise.
        at_least: a floor for σ (e.g. a noise multiplier to match); the result is the least
            σ ≥ ``at_least`` that satisfies the profile.

    Returns:
        σ as a float; 0.0 when Δ = 0 (no noise needed).

    Raises:
        InvalidParameterError: out-of-range ε, δ, Δ or a non-integer Δ in one dimension.
        NotPrivateError: if the final verification fails (never expected).

    >>> s = calibrate_discrete_gaussian(1.0, 1e-5, 1)
    >>> 3.0 < s < 4.5
    True
    """
    eps = float(check_interval("epsilon", epsilon, 0.0, math.inf, low_open=True, high_open=True))
    dlt = float(check_probability("delta", delta))
    sens = float(check_interval("sensitivity", sensitivity, 0.0, 2.0**40))
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
        raise InvalidParameterError(
            f"dimension must be an integer >= 1, got dimension={dimension!r}"
        )
    if dimension == 1 and sens != math.floor(sens):
        raise InvalidParameterError(
            f"sensitivity must be an integer for the discrete Gaussian, got sensitivity={sens:g}"
        )
    if sens == 0.0:
        return 0.0

    def ok(s: float) -> bool:
        return discrete_gaussian_satisfies(eps, dlt, s, sens, dimension)

    if at_least is not None:
        floor_ = float(check_interval("at_least", at_least, 0.0, 2.0**40, low_open=True))
        if ok(floor_):
            return floor_
        lo, step = floor_, floor_ * 1e-6
        hi = lo + step
        while not ok(hi):
            lo, step = hi, step * 4.0
            hi = lo + step
            if hi > 2.0**40:
                raise InvalidParameterError(
                    f"no sigma below 2^40 makes the discrete Gaussian ({eps:g}, {dlt:g})-DP "
                    f"for sensitivity={sens:g}"
                )
        return _bisect(ok, lo, hi)
    lo = sens * 1e-3
    while ok(lo):
        lo /= 2.0
        if lo < 1e-6 * sens:
            break
    hi = max(2.0 * lo, sens)
    while not ok(hi):
        lo, hi = hi, hi * 2.0
        if hi > 2.0**40:
            raise InvalidParameterError(
                f"no sigma below 2^40 makes the discrete Gaussian ({eps:g}, {dlt:g})-DP for "
                f"sensitivity={sens:g}"
            )
    return _bisect(ok, lo, hi)


def _bisect(ok: Callable[[float], bool], lo: float, hi: float) -> float:
    """Shrink [lo, hi] (ok(hi) true, ok(lo) false) to relative width 1e-9; return hi, verified."""
    while hi - lo > 1e-9 * hi:
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    if not ok(hi):
        raise NotPrivateError(f"calibration failed to verify sigma={hi!r}")
    return hi
