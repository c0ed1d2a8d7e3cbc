"""Exact privacy profiles of the Gaussian mechanism and their inverses.

The mechanism releases f(D) + N(0, σ² I) for a query with ℓ2-sensitivity Δ. Its exact
(ε, δ)-DP profile (Balle & Wang 2018 Thm 8; Zhao et al. Thm 2; D. Wang's notes, Thm 5.18) is

    δ_DP(ε; σ, Δ) = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ),

and its (ε, δ)-pDP profile, P[|L| > ε] for the privacy loss L (Zhao et al. Thm 6), is

    δ_pDP(ε; σ, Δ) = Φ(Δ/(2σ) - εσ/Δ) + Φ(-Δ/(2σ) - εσ/Δ).

Both are evaluated in log space through the paper's substitution (Eq. 5, Eq. 13a; see
:mod:`approxdp.profiles._gaussian_terms`), so that values far below 1e-300 keep their relative
precision and the near-cancellation of the two DP terms loses nothing.

See https://arxiv.org/abs/1805.06530 (Balle & Wang 2018), Thm 8, and https://arxiv.org/abs/1911.12060
(Zhao et al. 2019), Thm 2, Thm 6, Eq. 5 and 13a.
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt
from scipy import special
from scipy.special import cython_special

from approxdp._numerics import (
    ARRAY_OPS,
    LOG2,
    SCALAR_OPS,
    SQRT2,
    TWO_OVER_SQRT_PI,
    FloatArray,
    Ops,
    round_up,
    solve_decreasing,
    solve_decreasing_scalar,
)
from approxdp._validation import (
    check_parameter,
    is_scalar,
    plain_floats,
)
from approxdp.errors import UnknownMethodError
from approxdp.profiles import _gaussian_terms as terms

__all__ = [
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_log_pdp_delta",
    "gaussian_pdp_delta",
]

Notion = Literal["dp", "pdp"]
_FLOAT_MAX = float(np.finfo(float).max)

# Relative margin (in log δ) by which the inverse keeps clear of the target to cover the
# evaluation error of the profile: ~1e-16 per unit of |log δ| (from a² ≈ -log δ), a floor, and
# a term in ε: the arguments 1/(2σ) ∓ εσ of the profile's terms are rounded at magnitude
# ≈ √ε, which costs up to ~0.1 ulp per unit of ε in log δ (measured against mpmath at
# ε ≤ 1e6; without it the optimum was under-noised by ~4e-12 relative at ε ≈ 3e5).
_LOG_MARGIN_FLOOR = 1e-12
_LOG_MARGIN_SLOPE = 4e-15
_LOG_MARGIN_PER_EPS = 1e-15
# The inverse in ε ends by :func:`~approxdp._numerics.round_up`: first bump 1e-13 relative.
_EPSILON_BUMP = 1e-13
_ROUND_UP_TRIES = 80


def log_margin(log_delta: Any, eps: Any = 0.0) -> Any:
    """How far below log δ a computed log-profile at ε must be to be surely ≤ δ (arrays or
    floats). Searches aim this far below the target; :func:`surely_within` accepts half of it.
    """
    return _LOG_MARGIN_FLOOR + _LOG_MARGIN_SLOPE * abs(log_delta) + _LOG_MARGIN_PER_EPS * eps


def margin_bound(log_bound: Any, complement: bool, eps: Any = 0.0) -> Any:
    """The threshold of :func:`within_margin`: log δ - margin/2, or log(1 - δ) + margin/2."""
    if complement:
        return log_bound + 0.5 * log_margin(log_bound, eps)
    return log_bound - 0.5 * log_margin(log_bound, eps)


def within_margin(log_value: Any, log_bound: Any, complement: bool, eps: Any = 0.0) -> Any:
    """The one-sided test behind every privacy verification (arrays or floats).

    ``complement=False``: log p <= log δ - margin(log δ)/2, i.e. p surely <= δ given the
    evaluation error of log p. ``complement=True``: log(1 - p) >= log(1 - δ) +
    margin(log(1 - δ))/2, the same statement made on the complement (for δ > 1/2).
    """
    if complement:
        return log_value >= margin_bound(log_bound, True, eps)
    return log_value <= margin_bound(log_bound, False, eps)


def surely_within(
    log_profile: FloatArray, delta: FloatArray, log_complement: FloatArray | None = None,
    eps: Any = 0.0,
) -> npt.NDArray[np.bool_]:
    """Whether computed log-profiles are surely ≤ δ: below it by half the evaluation margin.

    For δ <= 1/2 the test is log p <= log δ - margin(log δ)/2. For δ > 1/2 it is made on the
    complement, log(1 - p) >= log(1 - δ) + margin(log(1 - δ))/2, the better conditioned side
    there; pass ``log_complement`` = log(1 - p) computed directly (:func:`log_profile_comp_eu`),
    else it is derived from ``log_profile`` (which loses digits when p is close to 1). Every
    one-sided privacy verification in approxdp goes through here (see
    :func:`profile_surely_within`).
    """
    comp = delta > 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        log_d = np.log(delta)
        if not np.any(comp):
            return within_margin(log_profile, log_d, False, eps)  # type: ignore[no-any-return]
        log_c = np.log1p(-delta)
        if log_complement is None:
            log_complement = np.log(-np.expm1(log_profile))
        return np.where(  # type: ignore[no-any-return]
            comp,
            within_margin(log_complement, log_c, True, eps),
            within_margin(log_profile, log_d, False, eps),
        )


def profile_surely_within(
    eps: FloatArray, u: FloatArray, delta: FloatArray, notion: Notion
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """Whether the profile at (ε, u = Δ/σ) is surely ≤ δ (:func:`surely_within`), and log δ(σ).

    Where δ > 1/2 the complement log(1 - δ(σ)) is computed directly for the check.
    """
    logp = log_profile_eu(eps, u, notion)
    comp = delta > 0.5
    log_c = None
    if np.any(comp):
        log_c = np.zeros(eps.shape)
        log_c[comp] = log_profile_comp_eu(eps[comp], u[comp], notion)
    return surely_within(logp, delta, log_c, eps), logp


def _out(value: FloatArray, scalar: bool) -> float | FloatArray:
    return float(value.reshape(())) if scalar else value


def _check_notion(notion: object) -> Notion:
    if notion not in ("dp", "pdp"):
        raise UnknownMethodError(f"notion must be 'dp' or 'pdp', got notion={notion!r}")
    return "dp" if notion == "dp" else "pdp"


def _profile_inputs(
    epsilon: Any, sigma: Any, sensitivity: Any
) -> tuple[FloatArray, FloatArray, bool]:
    eps = check_parameter("epsilon", epsilon, "epsilon_unbounded")
    sig = check_parameter("sigma", sigma)
    sens = check_parameter("sensitivity", sensitivity)
    scalar = is_scalar(epsilon) and is_scalar(sigma) and is_scalar(sensitivity)
    eps, sig, sens = np.broadcast_arrays(eps, sig, sens)
    with np.errstate(divide="ignore", over="ignore"):
        u = sens / sig
    return np.array(eps, dtype=np.float64), np.array(u, dtype=np.float64), scalar


def log_profile_eu(eps: FloatArray, u: FloatArray, notion: Notion) -> FloatArray:
    """log δ for flat arrays of ε ∈ [0, ∞] and u = Δ/σ ∈ [0, ∞] (internal, no validation).

    δ = 0 (log = -inf) when u = 0 (no sensitivity or infinite noise) or ε = inf, except that
    the pDP profile at ε = 0 is 1. δ = 1 when u = inf (no noise) and ε is finite.
    """
    out = np.full(eps.shape, -np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        regular = (u > 0) & np.isfinite(eps)
        if notion == "pdp":
            out[(u > 0) & (eps == 0)] = 0.0
            regular &= eps > 0
        no_noise = regular & np.isinf(u)
        out[no_noise] = 0.0
        regular &= ~no_noise
        e, uu = eps[regular], u[regular]
        a = (e / uu - 0.5 * uu) / SQRT2
        b = (e / uu + 0.5 * uu) / SQRT2
        h = uu / SQRT2
        vals = np.full(a.shape, -np.inf)
        ok = np.isfinite(a) & np.isfinite(b)
        if notion == "dp":
            vals[ok] = terms.dp_log2delta(a[ok], b[ok], h[ok], e[ok]) - LOG2
        else:
            vals[ok] = terms.pdp_log2delta(a[ok], b[ok], h[ok], e[ok]) - LOG2
        # a = -inf (σ → 0 relative to Δ): the mechanism reveals f(D); δ = 1.
        vals[np.isneginf(a)] = 0.0
    out[regular] = np.minimum(vals, 0.0)
    return out


def log_profile_comp_eu(eps: FloatArray, u: FloatArray, notion: Notion) -> FloatArray:
    """log(1 - δ) for flat arrays of ε ∈ [0, ∞] and u ∈ [0, ∞], accurate when δ is near 1.

    Uses the complement forms of :mod:`approxdp.profiles._gaussian_terms` (sums of positive
    terms). Same edge cases as :func:`log_profile_eu`: 0 where δ = 0, -inf where δ = 1.
    """
    out = np.zeros(eps.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        regular = (u > 0) & np.isfinite(eps)
        if notion == "pdp":
            out[(u > 0) & (eps == 0)] = -np.inf
            regular &= eps > 0
        no_noise = regular & np.isinf(u)
        out[no_noise] = -np.inf
        regular &= ~no_noise
        e, uu = eps[regular], u[regular]
        a = (e / uu - 0.5 * uu) / SQRT2
        b = (e / uu + 0.5 * uu) / SQRT2
        h = uu / SQRT2
        vals = np.zeros(a.shape)
        ok = np.isfinite(a) & np.isfinite(b)
        comp = terms.dp_log2comp if notion == "dp" else terms.pdp_log2comp
        vals[ok] = comp(a[ok], b[ok], h[ok], e[ok]) - LOG2
        vals[np.isneginf(a)] = -np.inf
    out[regular] = np.minimum(vals, 0.0)
    return out


def log_profile_scalar(eps: float, u: float, notion: Notion) -> float:
    """:func:`log_profile_eu` for one ε and one u = Δ/σ (Python floats), same formulas.

    The regular case (0 < u < inf, finite ε, and ε > 0 for pDP) runs on Python floats; the edge
    cases, and anything the float functions reject, go through the array implementation.
    """
    if 0.0 < u < math.inf and (0.0 < eps < math.inf or (notion == "dp" and eps == 0.0)):
        a = (eps / u - 0.5 * u) / SQRT2
        b = (eps / u + 0.5 * u) / SQRT2
        h = u / SQRT2
        if -math.inf < a and b < math.inf:
            try:
                if notion == "dp":
                    val = terms.dp_log2delta_scalar(a, b, h, eps) - LOG2
                else:
                    val = terms.pdp_log2delta_scalar(a, b, h, eps) - LOG2
            except (ValueError, OverflowError, ZeroDivisionError):
                pass
            else:
                return val if val < 0.0 else 0.0
    return float(log_profile_eu(np.array([eps]), np.array([u]), notion)[0])


def _profile(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike, notion: Notion,
    log: bool,
) -> float | FloatArray:
    """The body of the four public profile functions: log δ (``log``) or δ, of ``notion``.

    Plain floats take the scalar path (:func:`log_profile_scalar`); anything else, and any
    value out of range, takes the validating array path (which raises the typed errors).
    """
    vals = plain_floats(epsilon, sigma, sensitivity)
    if vals is not None:
        e, sig, sens = vals
        if e >= 0.0 and sig > 0.0 and 0.0 <= sens < math.inf:  # NaN fails here too
            fast = log_profile_scalar(e, sens / sig, notion)
            return fast if log else math.exp(fast)
    eps, u, scalar = _profile_inputs(epsilon, sigma, sensitivity)
    res = log_profile_eu(eps.ravel(), u.ravel(), notion).reshape(eps.shape)
    return _out(res if log else np.exp(res), scalar)


@overload
def gaussian_log_delta(epsilon: float, sigma: float, sensitivity: float = ...) -> float: ...
@overload
def gaussian_log_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = ...
) -> FloatArray: ...


def gaussian_log_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0
) -> float | FloatArray:
    """Natural log of the exact (ε, δ)-DP profile of the Gaussian mechanism.

    Use this instead of :func:`gaussian_delta` when δ may be below 1e-300.

    Args:
        epsilon: ε >= 0 (``inf`` allowed, giving -inf).
        sigma: noise standard deviation σ > 0 (``inf`` allowed).
        sensitivity: ℓ2-sensitivity Δ >= 0 (0 gives -inf).

    Returns:
        log δ_DP(ε; σ, Δ), a float for scalar inputs, else an array of the broadcast shape.

    Example:
        >>> round(gaussian_log_delta(1.0, 50.0), 3)
        -1262.156
    """
    return _profile(epsilon, sigma, sensitivity, "dp", log=True)


@overload
def gaussian_delta(epsilon: float, sigma: float, sensitivity: float = ...) -> float: ...
@overload
def gaussian_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = ...
) -> FloatArray: ...


def gaussian_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0
) -> float | FloatArray:
    """Exact (ε, δ)-DP privacy profile of the Gaussian mechanism (Zhao et al. Thm 2; Balle &
    Wang 2018, Thm 8).

    δ_DP(ε; σ, Δ) = Φ(Δ/(2σ) - εσ/Δ) - e^ε Φ(-Δ/(2σ) - εσ/Δ): the least δ for which adding
    N(0, σ²) to a query of ℓ2-sensitivity Δ is (ε, δ)-DP. Relative error below 1e-12 wherever
    the value is a normal float; values below ~1e-308 underflow to 0 (use
    :func:`gaussian_log_delta`).

    Args:
        epsilon: ε >= 0, ``inf`` allowed.
        sigma: σ > 0, ``inf`` allowed (δ = 0).
        sensitivity: Δ >= 0 (Δ = 0 gives δ = 0).

    Example:
        >>> f"{gaussian_delta(1.0, 4.0):.4e}"
        '2.9243e-06'
    """
    return _profile(epsilon, sigma, sensitivity, "dp", log=False)


@overload
def gaussian_log_pdp_delta(epsilon: float, sigma: float, sensitivity: float = ...) -> float: ...
@overload
def gaussian_log_pdp_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = ...
) -> FloatArray: ...


def gaussian_log_pdp_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0
) -> float | FloatArray:
    """Natural log of :func:`gaussian_pdp_delta`."""
    return _profile(epsilon, sigma, sensitivity, "pdp", log=True)


@overload
def gaussian_pdp_delta(epsilon: float, sigma: float, sensitivity: float = ...) -> float: ...
@overload
def gaussian_pdp_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = ...
) -> FloatArray: ...


def gaussian_pdp_delta(
    epsilon: npt.ArrayLike, sigma: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0
) -> float | FloatArray:
    """(ε, δ)-pDP profile P[|L| > ε] of the Gaussian mechanism (Zhao et al. Def. 2, Thm 6).

    δ_pDP(ε; σ, Δ) = Φ(Δ/(2σ) - εσ/Δ) + Φ(-Δ/(2σ) - εσ/Δ). pDP implies DP (Zhao et al. Lemma 3),
    so this is always >= :func:`gaussian_delta`.

    Example:
        >>> f"{gaussian_pdp_delta(1.0, 4.0):.4e}"
        '7.1849e-05'
    """
    return _profile(epsilon, sigma, sensitivity, "pdp", log=False)


def _epsilon_terms(e: Any, uu: Any, notion: Notion, ops: Ops, profile: Any) -> tuple[Any, Any]:
    """log 2δ at (ε = e, u = uu) and its derivative in ε (arrays or floats).

    DP: d(2δ)/dε = -e^ε erfc(b) = -e^{-a²} erfcx(b); pDP: d(2δ)/dε =
    -(2/√π)(e^{-a²} + e^{-b²})/(u√2).
    """
    a = (e / uu - 0.5 * uu) / SQRT2
    b = (e / uu + 0.5 * uu) / SQRT2
    val = profile(a, b, uu / SQRT2, e)
    if notion == "dp":
        return val, -ops.exp(-a * a - val) * ops.erfcx(b)
    return val, -TWO_OVER_SQRT_PI * ops.exp(-a * a - val) * (1.0 + ops.exp(-e)) / (uu * SQRT2)


def _epsilon_objective(u: FloatArray, target: FloatArray, notion: Notion) -> Any:
    profile = terms.dp_log2delta if notion == "dp" else terms.pdp_log2delta

    def fun(e: FloatArray, idx: np.ndarray) -> tuple[FloatArray, FloatArray]:
        val, slope = _epsilon_terms(e, u[idx], notion, ARRAY_OPS, profile)
        return val - target[idx], slope

    return fun


def _epsilon_upper(u: Any, delta: Any, notion: Notion, erfcinv: Any, ops: Ops) -> Any:
    """An ε with profile <= δ: δ(ε) <= Φ(-x) (DP) or <= 2Φ(-x) (pDP) <= δ once
    x = ε/u - u/2 reaches √2 inverfc(2δ) (resp. √2 inverfc(δ)); nudged up."""
    q = erfcinv(ops.minimum(2 * delta, 1.999999) if notion == "dp" else delta)
    hi = u * (SQRT2 * ops.maximum(q, 0.0) + 0.5 * u) + 1e-300
    return ops.minimum(ops.nextafter(hi, math.inf) * (1 + 1e-9), _FLOAT_MAX)


def _epsilon_scalar(sigma: Any, delta: Any, sensitivity: Any, notion: Notion) -> float | None:
    """The scalar fast path of :func:`gaussian_epsilon` (same search, same check), or None for
    the array path (validation, edge cases, δ > 1/2 whose check runs on 1 - δ)."""
    vals = plain_floats(sigma, delta, sensitivity)
    if vals is None:
        return None
    sig, d, sens = vals
    if not (sig > 0.0 and 0.0 < d <= 0.5 and 0.0 <= sens < math.inf):
        return None
    u = sens / sig
    if not 0.0 < u < math.inf:
        return None
    log_d = math.log(d)
    if log_profile_scalar(0.0, u, notion) <= log_d:
        return 0.0
    profile = terms.dp_log2delta_scalar if notion == "dp" else terms.pdp_log2delta_scalar
    target = log_d + LOG2 - log_margin(log_d)

    def objective(e: float) -> tuple[float, float]:
        val, slope = _epsilon_terms(e, u, notion, SCALAR_OPS, profile)
        return val - target, slope

    hi = _epsilon_upper(u, d, notion, cython_special.erfcinv, SCALAR_OPS)
    try:
        root = solve_decreasing_scalar(objective, 0.0, hi, hi, lambda e: max(e, 1e-300))
        eps = round_up(
            root, lambda e: within_margin(log_profile_scalar(e, u, notion), log_d, False, e),
            SCALAR_OPS, bump=_EPSILON_BUMP, tries=_ROUND_UP_TRIES,
        )
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return float(eps)


@overload
def gaussian_epsilon(
    sigma: float, delta: float, sensitivity: float = ..., notion: Notion = ...
) -> float: ...
@overload
def gaussian_epsilon(
    sigma: npt.ArrayLike, delta: npt.ArrayLike, sensitivity: npt.ArrayLike = ...,
    notion: Notion = ...,
) -> FloatArray: ...


def gaussian_epsilon(
    sigma: npt.ArrayLike, delta: npt.ArrayLike, sensitivity: npt.ArrayLike = 1.0,
    notion: Notion = "dp",
) -> float | FloatArray:
    """The least ε for which the Gaussian mechanism with noise σ is (ε, δ)-DP (or -pDP).

    Inverts :func:`gaussian_delta` (or :func:`gaussian_pdp_delta` with ``notion="pdp"``) in ε,
    rounding toward the private side: the returned ε satisfies profile(ε) <= δ. Returns 0.0
    when the mechanism is already (0, δ)-DP.

    Args:
        sigma: σ > 0 (``inf`` gives 0).
        delta: δ in (0, 1).
        sensitivity: Δ >= 0 (0 gives 0).
        notion: ``"dp"`` or ``"pdp"``.

    Example:
        >>> round(gaussian_epsilon(4.0, 1e-5), 6)
        0.926342
    """
    notion = _check_notion(notion)
    fast = _epsilon_scalar(sigma, delta, sensitivity, notion)
    if fast is not None:
        return fast
    sig = check_parameter("sigma", sigma)
    dlt = check_parameter("delta", delta)
    sens = check_parameter("sensitivity", sensitivity)
    scalar = is_scalar(sigma) and is_scalar(delta) and is_scalar(sensitivity)
    sig, dlt, sens = np.broadcast_arrays(sig, dlt, sens)
    shape = sig.shape
    with np.errstate(divide="ignore", over="ignore"):
        u = (sens / sig).ravel().astype(np.float64)
    d = dlt.ravel().astype(np.float64)
    log_d = np.log(d)
    out = np.zeros(u.shape)
    at_zero = log_profile_eu(np.zeros(u.shape), u, notion)
    need = at_zero > log_d
    if np.any(np.isinf(u) & need):
        out[np.isinf(u) & need] = np.inf
        need &= np.isfinite(u)
    if np.any(need):
        uu, dd, ld = u[need], d[need], log_d[need]
        target = ld + LOG2 - log_margin(ld)
        hi = _epsilon_upper(uu, dd, notion, special.erfcinv, ARRAY_OPS)
        fun = _epsilon_objective(uu, target, notion)
        root = solve_decreasing(
            fun, np.zeros_like(uu), hi, hi.copy(), lambda x, idx: np.maximum(x, 1e-300)
        )
        out[need] = round_up(
            root, lambda e: profile_surely_within(e, uu, dd, notion)[0], ARRAY_OPS,
            bump=_EPSILON_BUMP, tries=_ROUND_UP_TRIES,
        )
    res = out.reshape(shape)
    return _out(res, scalar)
