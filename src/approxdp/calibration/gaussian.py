"""``calibrate_gaussian``: σ for the Gaussian mechanism under every method, checked for privacy."""

from __future__ import annotations

import math
import warnings
from typing import overload

import numpy as np
import numpy.typing as npt

from approxdp._numerics import FloatArray
from approxdp._validation import (
    check_parameter,
    is_scalar,
    plain_floats,
)
from approxdp.calibration.methods import CALIBRATION_METHODS, CalibrationMethod
from approxdp.calibration.optimal import (
    sigma_optimal_dp_scalar,
    sigma_optimal_pdp_scalar,
    sigma_zero_epsilon,
    sigma_zero_epsilon_scalar,
)
from approxdp.errors import (
    InvalidParameterError,
    NotPrivateError,
    NotPrivateWarning,
    ParameterTypeError,
    UnknownMethodError,
)
from approxdp.profiles.gaussian import profile_surely_within

__all__ = ["calibrate_gaussian", "get_method", "privacy_check", "scale_sigma"]


def get_method(method: object) -> CalibrationMethod:
    """The :class:`CalibrationMethod` called ``method``, or a typed error listing the names."""
    if not isinstance(method, str):
        raise ParameterTypeError(
            f"method must be a string, got {type(method).__name__} {method!r}; "
            f"choose one of {', '.join(CALIBRATION_METHODS)}"
        )
    try:
        return CALIBRATION_METHODS[method]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method={method!r}; choose one of {', '.join(CALIBRATION_METHODS)}"
        ) from None


def privacy_check(
    sigma_unit: FloatArray, eps: FloatArray, delta: FloatArray, notion: str
) -> tuple[np.ndarray, FloatArray]:
    """Whether σ/Δ is (ε, δ)-private under ``notion``, and the log δ it really gives.

    A point passes only if the computed profile is below δ by more than its evaluation error
    (:func:`~approxdp.profiles.gaussian.profile_surely_within`).
    """
    with np.errstate(divide="ignore"):
        return profile_surely_within(eps, 1.0 / sigma_unit, delta, notion)  # type: ignore[arg-type]


def scale_sigma(sigma_unit: float, sensitivity: float) -> float:
    """σ at ℓ2-sensitivity Δ from the σ₁ calibrated at Δ = 1: Δ·σ₁, rounded up one float.

    A Gaussian's guarantee depends on σ/Δ alone (Zhao et al. Thm 2), so σ₁'s guarantee holds
    at Δ for any σ ≥ Δ·σ₁. The float product may round below the real Δ·σ₁; the next float up
    cannot, so the result keeps σ₁'s guarantee exactly (Δ = 0 and Δ = 1 need no rounding).
    This is the last step of :func:`calibrate_gaussian` (elementwise on its array path):
    ``calibrate_gaussian(ε, δ, Δ, m) == scale_sigma(calibrate_gaussian(ε, δ, 1.0, m), Δ)``, bit
    for bit. A release plan calibrates σ₁ once and scales it to each query with this.

    >>> scale_sigma(3.0, 2.0) > 6.0, scale_sigma(3.0, 1.0)
    (True, 3.0)
    """
    out = sensitivity * sigma_unit
    return math.nextafter(out, math.inf) if sensitivity != 0.0 and sensitivity != 1.0 else out


def _fmt(x: float) -> str:
    return f"{x:.6g}"


@overload
def calibrate_gaussian(
    epsilon: float,
    delta: float,
    sensitivity: float = ...,
    method: str = ...,
    *,
    allow_non_private: bool = ...,
) -> float: ...
@overload
def calibrate_gaussian(
    epsilon: npt.ArrayLike,
    delta: npt.ArrayLike,
    sensitivity: npt.ArrayLike = ...,
    method: str = ...,
    *,
    allow_non_private: bool = ...,
) -> FloatArray: ...


def calibrate_gaussian(
    epsilon: npt.ArrayLike,
    delta: npt.ArrayLike,
    sensitivity: npt.ArrayLike = 1.0,
    method: str = "optimal",
    *,
    allow_non_private: bool = False,
) -> float | FloatArray:
    """Standard deviation σ of Gaussian noise for (ε, δ)-differential privacy.

    With ``method="optimal"`` (the default) this is the least σ whose exact privacy profile
    (Zhao et al. Thm 2) is at most δ: δ_DP(ε; σ, Δ) <= δ, verified for the returned float and
    within about 1e-12 (relative) of the exact optimum. ``epsilon=0`` gives the (0, δ)-DP
    optimum Δ/(2√2 inverf(δ)) (Zhao et al. Thm 3). Other methods: see
    :data:`~approxdp.calibration.CALIBRATION_METHODS`.

    Every closed-form result is checked against the exact profile at the requested point: if
    it is not (ε, δ)-DP there (the classical formulas at large ε), :class:`NotPrivateError` is
    raised, unless ``allow_non_private=True`` (then σ is returned with a
    :class:`NotPrivateWarning`). pDP methods are checked for pDP, which implies DP.

    Args:
        epsilon: ε >= 0 (ε = 0 only with ``method="optimal"``); scalar or array.
        delta: δ in (0, 1); scalar or array.
        sensitivity: ℓ2-sensitivity Δ >= 0; σ scales linearly in it (Δ = 0 gives σ = 0).
        method: one of ``"optimal"``, ``"pdp-optimal"``, ``"zhao-m1"``, ``"zhao-m2"``,
            ``"zhao-m3"``, ``"zhao-m4"``, ``"dwork-2006"``, ``"dwork-roth-2014"``,
            ``"wang-lecture"``, ``"zcdp"``.
        allow_non_private: return a σ that is not private at (ε, δ) instead of raising.

    Returns:
        σ as a float for scalar inputs, else an array of the broadcast shape.

    Raises:
        InvalidParameterError: ε, δ or Δ out of range (the message names which and why).
        ParameterTypeError: a non-numeric argument.
        UnknownMethodError: an unknown method name.
        NotPrivateError: the method's σ is not private at (ε, δ).

    Example:
        >>> round(calibrate_gaussian(1.0, 1e-5), 6)
        3.730632
        >>> round(calibrate_gaussian(1.0, 1e-5, method="dwork-roth-2014"), 6)
        4.844805
    """
    if (method == "optimal" or method == "pdp-optimal") and type(allow_non_private) is bool:
        fast = _optimal_scalar(epsilon, delta, sensitivity, method)
        if fast is not None:
            return fast
    m = get_method(method)
    if not isinstance(allow_non_private, (bool, np.bool_)):
        raise ParameterTypeError(
            f"allow_non_private must be True or False, got {allow_non_private!r}"
        )
    if m.name == "optimal":
        eps = check_parameter("epsilon", epsilon)
    else:
        eps = check_parameter("epsilon", epsilon, "epsilon_positive")
    dlt = check_parameter("delta", delta)
    sens = check_parameter("sensitivity", sensitivity)
    scalar = is_scalar(epsilon) and is_scalar(delta) and is_scalar(sensitivity)
    e_b, d_b, s_b = np.broadcast_arrays(eps, dlt, sens)
    shape = e_b.shape
    e = np.array(e_b, dtype=np.float64).ravel()
    d = np.array(d_b, dtype=np.float64).ravel()
    s = np.array(s_b, dtype=np.float64).ravel()
    if np.any(d >= m.delta_below):
        bad = float(d[d >= m.delta_below][0])
        raise InvalidParameterError(
            f"method={m.name!r} is defined only for delta in (0, {m.delta_below:g}), "
            f"got delta={bad:g}; use method='optimal'"
        )
    sigma = np.empty_like(e)
    zero = e == 0
    if np.any(zero):
        sigma[zero] = sigma_zero_epsilon(d[zero])
    rest = ~zero
    if np.any(rest):
        sigma[rest] = m.sigma_unit(e[rest], d[rest])
    if m.closed_form:
        sigma = np.nextafter(sigma, np.inf)
        ok, logp = privacy_check(sigma, e, d, m.notion)
        if not np.all(ok):
            _report_not_private(m, e, d, sigma, ok, logp, allow_non_private)
    out = s * sigma  # scale_sigma, elementwise
    out = np.where((s != 0) & (s != 1), np.nextafter(out, np.inf), out)
    res = out.reshape(shape)
    return float(res.reshape(())) if scalar else res


def _optimal_scalar(
    epsilon: object, delta: object, sensitivity: object, method: str
) -> float | None:
    """The scalar fast path of the two optimal methods: σ, or None to take the validating path.

    Same formulas, aim, verification and final rounding as the array path.
    """
    if type(epsilon) is float and type(delta) is float and type(sensitivity) is float:
        e, d, s = epsilon, delta, sensitivity  # the common case, without the general check
    else:
        vals = plain_floats(epsilon, delta, sensitivity)
        if vals is None:
            return None
        e, d, s = vals
    if not (0.0 <= e < math.inf and 0.0 < d < 1.0 and 0.0 <= s < math.inf):  # NaN fails too
        return None
    if method == "optimal":
        sigma = sigma_optimal_dp_scalar(e, d) if e > 0.0 else sigma_zero_epsilon_scalar(d)
    elif e > 0.0:
        sigma = sigma_optimal_pdp_scalar(e, d)
    else:
        return None  # pdp-optimal needs ε > 0: the validating path says so
    return scale_sigma(sigma, s)


def _report_not_private(
    m: CalibrationMethod,
    e: FloatArray,
    d: FloatArray,
    sigma: FloatArray,
    ok: np.ndarray,
    logp: FloatArray,
    allow: bool,
) -> None:
    i = int(np.flatnonzero(~ok)[0])
    notion = "DP" if m.notion == "dp" else "pDP"
    count = int(np.count_nonzero(~ok))
    where = "" if e.size == 1 else f" (at {count} of {e.size} points; first shown)"
    hint = ""
    if m.name in ("dwork-2006", "dwork-roth-2014", "wang-lecture") and m.notion == "dp":
        from approxdp.calibration.thresholds import classical_failure_threshold

        g = classical_failure_threshold(float(d[i]), method=m.name)
        hint = f" (it fails above epsilon={g:.4g} at this delta)"
    msg = (
        f"{m.name} is not ({_fmt(e[i])}, {_fmt(d[i])})-{notion}{where}: its sigma="
        f"{_fmt(sigma[i])} per unit sensitivity gives delta={_fmt(math.exp(logp[i]))}{hint}; "
        "use method='optimal'"
    )
    if not allow:
        raise NotPrivateError(msg)
    warnings.warn(
        msg + " (returned anyway: allow_non_private=True)", NotPrivateWarning, stacklevel=3
    )
