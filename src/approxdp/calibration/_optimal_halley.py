"""DP-OPT by Halley's method in log σ, on arrays and on floats.

The least σ with δ_DP(ε; σ) <= δ (Zhao et al. 2019, https://arxiv.org/abs/1911.12060, Thm 2,
Eq. 5) solves L(σ) = log 2δ, where L = log 2δ_DP is written in the paper's variable
a = (εσ - 1/(2σ))/√2 as -a² + log(erfcx(a) - erfcx(b)) (:mod:`approxdp.profiles._gaussian_terms`).
By Zhao et al.'s Lemma 14 the root has a > 0 exactly when 1 - e^ε erfc(√ε) > 2δ: the common
case, with the fast start below. The other points start from min(σ_(0,δ), 1/√(2ε)), above the
optimum when a <= 0, and take exact steps only (solving for 2(1 - δ) where δ > 1/2). Any point
that does not settle goes to the bracketed search of :mod:`approxdp.calibration.optimal`.

1. **Start (a > 0).** σ0 = min(σ_M2, σ_(0,δ)), two upper bounds of the optimum (Zhao et al. Ineq. 8
   and Thm 3), refined by one fixed-point step on the large-a asymptotics, then two Halley steps
   on a *model* of the profile in which erfcx is replaced by 2/(√π(x + √(x² + q(x)))) with a
   fitted rational q (relative error 5e-5), whose difference at a and b is taken in closed form
   without cancellation. This costs square roots and one log per step, no special functions,
   and lands within about 3e-4 of the exact log 2δ, so that one exact Halley step converges
   and the next evaluation verifies: two exact evaluations per point.
2. **Exact steps.** Halley's method in t = log σ on the exact L (first and second derivatives in
   closed form; da/dt = b, d²a/dt² = a), aimed at log 2δ minus the evaluation margin
   (:func:`~approxdp.profiles.gaussian.log_margin`). Each evaluation is made at the float σ
   itself, by the same formulas as the σ-parametrised profile, so it is also the verification.
3. **Acceptance.** σ is returned once that evaluation is surely <= δ
   (:func:`~approxdp.profiles.gaussian.within_margin`) and the next step would lower σ by less
   than 1e-13 relative: never below the optimum, and above it by about the margin (~1e-12).

The formulas are written once against :class:`~approxdp._numerics.Ops` and run on NumPy arrays
(:func:`sigma_dp_halley`) and on Python floats (:func:`sigma_dp_halley_scalar`). The verified
iteration is one rule with two loops, :func:`iterate` (arrays: settled points leave an active
set) and the loop of :func:`iterate_by_side_scalar` (a float: return once accepted), both
evaluating through :func:`_evaluate_side` and shared by the a <= 0 case and by pDP-OPT.

**One twin stays, on purpose:** the a > 0 case on floats, :func:`_scalar_pos`, writes the
steps of :func:`_start`, :func:`_model_step` and :func:`_exact_pos` out in one frame. It is the
path of every typical scalar ``calibrate_gaussian`` call, whose budget is a few µs, and in
CPython the calls cost more than the arithmetic: measured at (1, 1e-5) on one machine in one
session, the hand-written frame takes 4.0 µs, the same steps through the shared functions with
``SCALAR_OPS`` 9.0 µs, and with only the formulas shared (``model_erfcx_diff``, the derivatives,
the clamps) 6.8 µs. It also stops the model steps once they are below the model's error and
takes its first exact step with a cheaper erfcx difference (never accepted). The tests check
that it and the array path give the same σ over the whole domain and that both are private.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special
from scipy.special import cython_special

from approxdp._numerics import (
    ARRAY_OPS,
    LOG2,
    SCALAR_OPS,
    SERIES_BELOW,
    SQRT2,
    TWO_OVER_SQRT_PI,
    FloatArray,
    Ops,
    erfcx_diff_scalar,
    erfcx_scalar,
)
from approxdp.profiles import _gaussian_terms as terms
from approxdp.profiles.gaussian import log_margin, margin_bound, within_margin

__all__ = [
    "ACCEPT_STEP",
    "accepts",
    "geometry",
    "halley_from_derivatives",
    "iterate",
    "iterate_by_side_scalar",
    "lemma14_positive",
    "model_erfcx",
    "model_erfcx_diff",
    "sigma_dp_halley",
    "sigma_dp_halley_scalar",
    "targets",
]

_LOG_2_SQRT_PI = math.log(2.0 * math.sqrt(math.pi))
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)
_PI_OVER_12 = math.pi / 12.0
_ERFINV_SERIES_BELOW = 0.01  # erfinv by its two-term series below this (relative error ~1e-9)
# The model erfcx(x) ≈ 2/(√π (x + √(x² + q(x)))), q(x) = N(x)/M(x) with N = n0 + n1 x + n2 x²,
# M = 1 + m1 x + m2 x²: exact q runs from 4/π at 0 to 2 at ∞. Coefficients fitted by weighted
# least squares to 30-digit values on [0, 1e4] (tests/reference/make_erfcx_model.py); relative
# error 5e-5 there, checked by tests/calibration/test_gaussian.py. A start value only: nothing
# returned depends on it beyond the number of exact steps.
_Q_N0 = 1.2733420086874971
_Q_N1 = 1.5814435720791067
_Q_N2 = 2.0 * 0.36690122776669926
_Q_M1 = 0.7615240702584261
_Q_M2 = 0.36690122776669926
# The divided difference (q(b) - q(a))/(b - a) = (C0 + C1 (a + b) + C2 a b)/(M(a) M(b)).
_Q_C0 = _Q_N1 - _Q_N0 * _Q_M1
_Q_C1 = _Q_N2 - _Q_N0 * _Q_M2
_Q_C2 = _Q_N2 * _Q_M1 - _Q_N1 * _Q_M2
# Model steps (arrays: a fixed number; floats: until a step starts from a residual below
# _MODEL_EXIT, which takes the model to ~1e-6, below its own error of ~3e-4 in log 2δ).
_MODEL_STEPS = 2
_MODEL_EXIT = 0.02
# Exact steps before giving the point to the bracketed solver (from the model; from σ_(0,δ)).
_EXACT_STEPS = 8
_EXACT_STEPS_ANY = 16
# Accept once the next step would lower σ by less than this (relative).
ACCEPT_STEP = 1e-13
# The scalar path's first exact step takes erfcx(a) - erfcx(b) directly down to h = 1e-3 max(1, a).
_COARSE_SERIES_BELOW = 1e-3
# Halley's correction factor is kept in [1/2, 2] and a step in log σ within ±_MAX_STEP.
_MAX_STEP = 2.0


def _start(eps: Any, delta: Any, log_d: Any, erfinv_delta: Any, t_floor: Any, ops: Ops) -> Any:
    """The starting t = log σ (Δ = 1) of the model steps.

    t_up = log min(σ_M2, σ_(0,δ)) lies above the optimum (Zhao et al. Ineq. 8 and Thm 3 ①).
    Where the large-a asymptotics erfcx(x) ≈ 1/(√π x) hold, one fixed-point step on
    a² + log(a b (a + b)) = log(ε/(2√π δ)) (Eq. 5 with erfcx(a) - erfcx(b) ≈ h/(√π a b),
    h = ε/(a + b)) from a = c, the parameter of M2, lands much closer; it is taken when it gives
    a > 1, kept within [t_floor, t_up].
    """
    c = ops.sqrt(LOG2 + ops.log(ops.sqrt(16.0 * delta + 1.0) + 1.0) - ops.log(16.0 * delta))
    b = ops.sqrt(c * c + eps)
    t_up = ops.minimum(ops.log((c + b) / (eps * SQRT2)), -ops.log(2.0 * SQRT2 * erfinv_delta))
    a2 = ops.log(eps) - log_d - _LOG_2_SQRT_PI - ops.log(c * b * (c + b))
    a = ops.sqrt(ops.maximum(a2, 0.0))
    t_fixed = ops.log((a + ops.sqrt(a * a + eps)) / (eps * SQRT2))
    return ops.where(a > 1.0, ops.minimum(ops.maximum(t_fixed, t_floor), t_up), t_up)


def _start_nonpositive(eps: Any, erfinv_delta: Any, ops: Ops) -> Any:
    """min(σ_(0,δ), 1/√(2ε)) for Δ = 1: above the optimum when its root has a <= 0 (Thm 3 ①;
    a(σ) = 0 at σ = 1/√(2ε))."""
    return ops.minimum(1.0 / (2.0 * SQRT2 * erfinv_delta), 1.0 / ops.sqrt(2.0 * eps))


def _halley_step(g: Any, a: Any, b: Any, h: Any, eps: Any, diff: Any, ops: Ops) -> Any:
    """Halley's step in t = log σ for g(t) = log 2δ - target = 0, safeguarded.

    Derivatives from :func:`~approxdp.profiles._gaussian_terms.dp_log2delta_log_sigma_derivatives`;
    Halley's correction factor is kept in [1/2, 2] and the step within ±2.
    """
    lt, ltt = terms.dp_log2delta_log_sigma_derivatives(a, b, h, eps, diff)
    return halley_from_derivatives(g, lt, ltt, ops)


def halley_from_derivatives(g: Any, lt: Any, ltt: Any, ops: Ops) -> Any:
    """Halley's step -g/(g' (1 - g g''/(2 g'²))), factor kept in [1/2, 2], step within ±2."""
    factor = ops.minimum(ops.maximum(1.0 - g * ltt / (2.0 * lt * lt), 0.5), 2.0)
    return ops.minimum(ops.maximum(-g / (lt * factor), -_MAX_STEP), _MAX_STEP)


def model_erfcx(x: Any, sqrt: Callable[[Any], Any]) -> Any:
    """The start model of erfcx: 2/(√π (x + √(x² + q(x)))), q = N/M fitted (x >= 0)."""
    q = (_Q_N0 + x * (_Q_N1 + _Q_N2 * x)) / (1.0 + x * (_Q_M1 + _Q_M2 * x))
    return TWO_OVER_SQRT_PI / (x + sqrt(x * x + q))


def model_erfcx_diff(a: Any, b: Any, h: Any, eps: Any, sqrt: Callable[[Any], Any]) -> Any:
    """The model of erfcx(a) - erfcx(b) (b² = a² + ε, h = b - a), without cancellation.

    With r(x) = √(x² + q(x)): Ẽ(a) - Ẽ(b) = (2/√π) (h + r(b) - r(a)) / ((a + r(a))(b + r(b))),
    r(b) - r(a) = (ε + q(b) - q(a)) / (r(a) + r(b)) and q(b) - q(a) from its divided difference.
    """
    ma = 1.0 + a * (_Q_M1 + _Q_M2 * a)
    mb = 1.0 + b * (_Q_M1 + _Q_M2 * b)
    ra = sqrt(a * a + (_Q_N0 + a * (_Q_N1 + _Q_N2 * a)) / ma)
    rb = sqrt(b * b + (_Q_N0 + b * (_Q_N1 + _Q_N2 * b)) / mb)
    dq = h * (_Q_C0 + _Q_C1 * (a + b) + _Q_C2 * a * b) / (ma * mb)
    return TWO_OVER_SQRT_PI * (h + (eps + dq) / (ra + rb)) / ((a + ra) * (b + rb))


def _model_step(t: Any, eps: Any, target: Any, t_floor: Any, ops: Ops) -> tuple[Any, Any]:
    """One Halley step on the model equation; returns (new t, model residual)."""
    s = ops.exp(t)
    a = (eps * s - 0.5 / s) / SQRT2
    b = (eps * s + 0.5 / s) / SQRT2
    h = 1.0 / (SQRT2 * s)
    diff = model_erfcx_diff(a, b, h, eps, ops.sqrt)
    g = ops.log(diff) - a * a - target
    return ops.maximum(t + _halley_step(g, a, b, h, eps, diff, ops), t_floor), g


def geometry(sigma: Any, eps: Any) -> tuple[Any, Any, Any]:
    """a, b, h at the float σ (Δ = 1), by the σ-parametrised profile's own formulas."""
    u = 1.0 / sigma
    return (eps / u - 0.5 * u) / SQRT2, (eps / u + 0.5 * u) / SQRT2, u / SQRT2


def _exact_pos(sigma: Any, eps: Any, target: Any, log_d: Any, ops: Ops) -> tuple[Any, Any]:
    """At the float σ, for a >= 0: whether the exact profile is surely <= δ there (and a > 0),
    and the Halley step toward ``target``."""
    a, b, h = geometry(sigma, eps)
    diff = ops.erfcx_diff(a, h)
    log2delta = ops.log(diff) - a * a  # = dp_log2delta_pos(a, h)
    ok = accepts(log2delta, log_d, False, eps) & (a > 0)
    return ok, _halley_step(log2delta - target, a, b, h, eps, diff, ops)


def _exact_any(value: Any, a: Any, b: Any, h: Any, eps: Any, target: Any, comp: bool) -> Any:
    """Halley step toward ``target`` from log 2δ (or, where ``comp``, log 2(1 - δ)) = ``value``.

    e^{a²} 2δ (or minus e^{a²} 2(1 - δ), whose derivatives are those of 2δ negated) plays the
    part of the erfcx difference in the derivative formulas.
    """
    ops = ARRAY_OPS if isinstance(value, np.ndarray) else SCALAR_OPS
    diff = ops.exp(value + a * a)
    return _halley_step(value - target, a, b, h, eps, -diff if comp else diff, ops)


def targets(delta: Any, comp: bool, ops: Ops, eps: Any) -> tuple[Any, Any]:
    """(target, log δ or log(1 - δ)): aim below log 2δ, or above log 2(1 - δ) where ``comp``,
    by the margin of the profile at ``eps``."""
    if comp:
        log_c = ops.log1p(-delta)
        return LOG2 + log_c + log_margin(log_c, eps), log_c
    log_d = ops.log(delta)
    return LOG2 + log_d - log_margin(log_d, eps), log_d


def iterate(
    sigma: FloatArray,
    eps: FloatArray,
    delta: FloatArray,
    evaluate: Callable[[FloatArray, np.ndarray], tuple[npt.NDArray[np.bool_], FloatArray]],
    steps: int,
) -> npt.NDArray[np.bool_]:
    """Exact Halley steps on arrays, in place on ``sigma``; returns the mask of accepted points.

    ``evaluate(s, idx)`` gives, at the float σ = s of the points ``idx``, whether the profile is
    surely <= δ there and the Halley step in log σ.
    """
    done = np.zeros(eps.shape, dtype=bool)
    active = np.flatnonzero(np.isfinite(sigma))
    for _ in range(steps):
        if active.size == 0:
            break
        s = sigma[active]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ok, step = evaluate(s, active)
            accept = ok & (step >= -ACCEPT_STEP)
            moved = s * np.exp(step)
        # A failing point must move up even when the step is below one ulp.
        moved = np.where(ok, moved, np.maximum(moved, np.nextafter(s, np.inf)))
        done[active[accept]] = True
        keep = ~accept & np.isfinite(moved)
        sigma[active[keep]] = moved[keep]
        active = active[keep]
    return done


def lemma14_positive(eps: Any, delta: Any, erfcx: Callable[[Any], Any]) -> Any:
    """Whether the root has a > 0: 1 - e^ε erfc(√ε) > 2δ (Zhao et al. Lemma 14)."""
    return 1.0 - erfcx(eps**0.5) - 2.0 * delta > 0


def sigma_dp_halley(eps: FloatArray, delta: FloatArray) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """DP-OPT σ/Δ for flat arrays of ε > 0 and δ in (0, 1).

    Returns σ and a mask of the points that converged; the others hold no meaningful value.
    """
    sigma = np.empty_like(eps)
    done = np.zeros(eps.shape, dtype=bool)
    erfinv_delta = special.erfinv(delta)
    pos = lemma14_positive(eps, delta, special.erfcx)
    if np.any(pos):
        e, d = eps[pos], delta[pos]
        target, log_d = targets(d, False, ARRAY_OPS, e)
        t_floor = -0.5 * np.log(2.0 * e) + 1e-15  # a(σ) >= 0
        t = _start(e, d, log_d, erfinv_delta[pos], t_floor, ARRAY_OPS)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(_MODEL_STEPS):
                t = _model_step(t, e, target, t_floor, ARRAY_OPS)[0]

        def evaluate_pos(
            s: FloatArray, idx: np.ndarray
        ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
            return _exact_pos(s, e[idx], target[idx], log_d[idx], ARRAY_OPS)

        s_pos = np.exp(t)
        done[pos] = iterate(s_pos, e, d, evaluate_pos, _EXACT_STEPS)
        sigma[pos] = s_pos
    iterate_by_side(
        eps, delta, ~pos, (terms.dp_log2delta, terms.dp_log2comp), _exact_any,
        lambda e, d, grp: _start_nonpositive(e, erfinv_delta[grp], ARRAY_OPS),
        _EXACT_STEPS_ANY, sigma, done,
    )
    return sigma, done


def iterate_by_side(
    eps: FloatArray,
    delta: FloatArray,
    select: npt.NDArray[np.bool_],
    profiles: tuple[Callable[..., FloatArray], Callable[..., FloatArray]],
    step: Callable[..., FloatArray],
    start: Callable[[FloatArray, FloatArray, npt.NDArray[np.bool_]], FloatArray],
    steps: int,
    sigma: FloatArray,
    done: npt.NDArray[np.bool_],
) -> None:
    """The verified iteration for the points of ``select``, δ ≤ 1/2 and δ > 1/2 apart.

    Each side is checked on its own profile (``profiles[comp]``: log 2δ, or log 2(1 − δ)
    computed directly where δ > 1/2), stepped by ``step(value, a, b, h, ε, target, comp)`` from
    ``start(ε, δ, mask)``; fills ``sigma`` and ``done`` at those points.
    """
    for comp in (False, True):
        grp = select & ((delta > 0.5) == comp)
        if not np.any(grp):
            continue
        e, d = eps[grp], delta[grp]
        target, log_side = targets(d, comp, ARRAY_OPS, e)
        profile = profiles[comp]

        def evaluate(
            s: FloatArray,
            idx: np.ndarray,
            e: FloatArray = e,
            target: FloatArray = target,
            log_side: FloatArray = log_side,
            profile: Callable[..., FloatArray] = profile,
            comp: bool = comp,
        ) -> tuple[npt.NDArray[np.bool_], FloatArray]:
            return _evaluate_side(
                s, e[idx], target[idx], log_side[idx], comp, profile, step
            )

        s_grp = start(e, d, grp)
        done[grp] = iterate(s_grp, e, d, evaluate, steps)
        sigma[grp] = s_grp


def _evaluate_side(
    sigma: Any, eps: Any, target: Any, log_side: Any, comp: bool,
    profile: Callable[..., Any], step: Callable[..., Any],
) -> tuple[Any, Any]:
    """At the float σ: whether ``profile`` (log 2δ, or log 2(1 − δ) where ``comp``) is surely
    within the bound there, and ``step(value, a, b, h, ε, target, comp)`` (arrays or floats)."""
    a, b, h = geometry(sigma, eps)
    value = profile(a, b, h, eps)
    return accepts(value, log_side, comp, eps), step(value, a, b, h, eps, target, comp)


def iterate_by_side_scalar(
    eps: float,
    delta: float,
    profiles: tuple[Callable[..., float], Callable[..., float]],
    step: Callable[..., float],
    sigma: float,
    steps: int,
) -> float | None:
    """:func:`iterate_by_side` for one point (Python floats) starting at ``sigma``: the side of
    δ's, with the float versions of its ``profiles``. σ once accepted, else None."""
    comp = delta > 0.5
    target, log_side = targets(delta, comp, SCALAR_OPS, eps)
    profile = profiles[comp]
    for _ in range(steps):  # iterate()'s acceptance and move, returning at once
        ok, st = _evaluate_side(sigma, eps, target, log_side, comp, profile, step)
        if ok and st >= -ACCEPT_STEP:
            return sigma
        moved = sigma * math.exp(st)
        sigma = moved if ok else max(moved, math.nextafter(sigma, math.inf))
    return None


def accepts(value: Any, log_side: Any, comp: bool, eps: Any) -> Any:
    """:func:`~approxdp.profiles.gaussian.within_margin` given log 2δ (or, where ``comp``,
    log 2(1 - δ), computed directly), against log δ (or log(1 - δ))."""
    return within_margin(value - LOG2, log_side, comp, eps)


def _erfinv_small(delta: float) -> float:
    """erfinv(δ) on a float: the series √π/2 (δ + πδ³/12) below 0.01 (a start value only)."""
    if delta < _ERFINV_SERIES_BELOW:
        return _HALF_SQRT_PI * delta * (1.0 + _PI_OVER_12 * delta * delta)
    return float(cython_special.erfinv(delta))


def sigma_dp_halley_scalar(eps: float, delta: float) -> float | None:
    """:func:`sigma_dp_halley` for one point (Python floats); None if it did not converge."""
    try:
        if 1.0 - erfcx_scalar(math.sqrt(eps)) - 2.0 * delta > 0:  # lemma14_positive, inline
            return _scalar_pos(eps, delta)
        return iterate_by_side_scalar(
            eps, delta, (terms.dp_log2delta_scalar, terms.dp_log2comp_scalar), _exact_any,
            _start_nonpositive(eps, _erfinv_small(delta), SCALAR_OPS), _EXACT_STEPS_ANY,
        )
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def _scalar_pos(
    eps: float,
    delta: float,
    log: Callable[[float], float] = math.log,
    sqrt: Callable[[float], float] = math.sqrt,
    exp: Callable[[float], float] = math.exp,
    diff: Callable[[float, float], float] = erfcx_diff_scalar,
    erfcx: Callable[[float], float] = erfcx_scalar,
) -> float | None:
    """The a > 0 branch on Python floats: :func:`_start`, :func:`_model_step`, :func:`_exact_pos`
    and :func:`_halley_step` written out in one frame (the scalar API's budget is a few µs).

    Same start, model, margins, steps, safeguards and acceptance as the array path; the tests
    check the two agree over the whole domain.
    """
    log_d = log(delta)
    target = LOG2 + log_d - log_margin(log_d, eps)
    bound = LOG2 + margin_bound(log_d, False, eps)  # accept log 2δ(σ) <= bound
    s_floor = (1.0 + 1e-15) / sqrt(2.0 * eps)
    # start (see _start)
    c = sqrt(log(2.0 * (sqrt(16.0 * delta + 1.0) + 1.0)) - log(16.0 * delta))  # no overflow
    b = sqrt(c * c + eps)
    if delta < _ERFINV_SERIES_BELOW:  # _erfinv_small, written out
        erfinv_delta = _HALF_SQRT_PI * delta * (1.0 + _PI_OVER_12 * delta * delta)
    else:
        erfinv_delta = float(cython_special.erfinv(delta))
    s_up = min((c + b) / (eps * SQRT2), 1.0 / (2.0 * SQRT2 * erfinv_delta))
    a2 = log(eps / (c * b * (c + b))) - log_d - _LOG_2_SQRT_PI
    s = s_up
    if a2 > 1.0:
        s = (sqrt(a2) + sqrt(a2 + eps)) / (eps * SQRT2)
        s = s_floor if s < s_floor else (s_up if s > s_up else s)
    # model steps (see _model_step and model_erfcx_diff), until a step starts from a residual
    # below _MODEL_EXIT
    for _ in range(2 * _MODEL_STEPS):
        inv = 1.0 / s
        a = (eps * s - 0.5 * inv) / SQRT2
        b = (eps * s + 0.5 * inv) / SQRT2
        h = inv / SQRT2
        aa = a * a
        bb = b * b
        ma = 1.0 + a * (_Q_M1 + _Q_M2 * a)
        mb = 1.0 + b * (_Q_M1 + _Q_M2 * b)
        ra = sqrt(aa + (_Q_N0 + a * (_Q_N1 + _Q_N2 * a)) / ma)
        rb = sqrt(bb + (_Q_N0 + b * (_Q_N1 + _Q_N2 * b)) / mb)
        dq = h * (_Q_C0 + _Q_C1 * (a + b) + _Q_C2 * a * b) / (ma * mb)
        d = TWO_OVER_SQRT_PI * (h + (eps + dq) / (ra + rb)) / ((a + ra) * (b + rb))
        g = log(d) - aa - target
        lt = -TWO_OVER_SQRT_PI * h / d
        ltt = -(lt / b) * (2.0 * a * bb + eps / h - a) - lt * lt
        f = 1.0 - g * ltt / (2.0 * lt * lt)
        st = -g / (lt * (0.5 if f < 0.5 else (2.0 if f > 2.0 else f)))
        s *= exp(st if -_MAX_STEP < st < _MAX_STEP else (_MAX_STEP if st > 0 else -_MAX_STEP))
        if s < s_floor:
            s = s_floor
        if -_MODEL_EXIT < g < _MODEL_EXIT:  # this step took the model to ~g³, below its error
            break
    # exact steps (see _exact_pos), each evaluated at the float σ = s. The first one only
    # moves σ (it is never accepted), so where erfcx(a) - erfcx(b) loses at most ~10 bits it is
    # taken directly instead of by the series (an intermediate step needs ~1e-13, not 1e-16).
    coarse = True
    for _ in range(_EXACT_STEPS):
        u = 1.0 / s
        a = (eps / u - 0.5 * u) / SQRT2
        b = (eps / u + 0.5 * u) / SQRT2
        h = u / SQRT2
        # erfcx_diff_scalar(a, h), with its direct branch written out
        scale = a if a > 1.0 else 1.0
        direct = h >= (_COARSE_SERIES_BELOW if coarse else SERIES_BELOW) * scale
        d = erfcx(a) - erfcx(a + h) if direct else diff(a, h)
        log2delta = log(d) - a * a
        g = log2delta - target
        lt = -TWO_OVER_SQRT_PI * h / d
        ltt = -(lt / b) * (2.0 * a * b * b + eps / h - a) - lt * lt
        f = 1.0 - g * ltt / (2.0 * lt * lt)
        st = -g / (lt * (0.5 if f < 0.5 else (2.0 if f > 2.0 else f)))
        ok = a > 0.0 and log2delta <= bound
        if ok and st >= -ACCEPT_STEP and not coarse:
            return s
        moved = s * exp(
            st if -_MAX_STEP < st < _MAX_STEP else (_MAX_STEP if st > 0 else -_MAX_STEP)
        )
        s = moved if ok else max(moved, math.nextafter(s, math.inf))
        coarse = False
    return None
