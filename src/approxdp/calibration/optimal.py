"""The least Gaussian noise for (ε, δ)-DP and for (ε, δ)-pDP, computed to the private side.

DP-OPT (Zhao et al. Thm 2, Alg. 1; Balle & Wang 2018): σ = (a + √(a² + ε)) Δ / (ε√2) where a solves
erfc(a) - e^ε erfc(√(a² + ε)) = 2δ (Eq. 5). pDP-OPT (Zhao et al. Thm 6): the same with
erfc(d) + erfc(√(d² + ε)) = 2δ (Eq. 13a). (0, δ)-DP: σ = Δ / (2√2 inverf(δ)) (Thm 3 ①).

Both are solved by Halley's method in log σ (:mod:`approxdp.calibration._optimal_halley`,
:mod:`approxdp.calibration._pdp_halley`), vectorized in cache-sized chunks, with scalar twins
for single points. Kept as a safety net, for any point those do not settle: the root in a
bracketed as in Zhao et al.'s Lemma 14 (0 < a < c of Mechanism 2 when 1 - e^ε erfc(√ε) > 2δ,
else -inverfc((2 - 2δ)/(e^ε + 1)) < a <= 0) and, for pDP, by inverfc(2δ) < d < inverfc(δ)
(Appendix M), then found by safeguarded Newton in log space. When δ > 1/2 the equation is
solved for 1 - δ instead, which has no cancellation there.

Unlike Algorithm 1, which returns the bracket end within a tolerance of the root, every result
here is aimed at a δ slightly *below* the target (by more than the profile's evaluation error),
then checked through the σ-parametrised profile at the returned float, and increased until
that check passes: the σ returned is never below the exact optimum, and exceeds it by about
1e-12 relative at most.

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Thm 2, Thm 3, Thm 6, Alg. 1,
Lemma 14, Appendix M, and https://arxiv.org/abs/1805.06530 (Balle & Wang 2018).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from scipy import special
from scipy.special import cython_special

from approxdp._numerics import (
    ARRAY_OPS,
    LOG2,
    SCALAR_OPS,
    SQRT2,
    FloatArray,
    Objective,
    round_up,
    solve_decreasing,
)
from approxdp.calibration._optimal_halley import sigma_dp_halley, sigma_dp_halley_scalar
from approxdp.calibration._pdp_halley import sigma_pdp_halley, sigma_pdp_halley_scalar
from approxdp.calibration.closed_forms import sigma_from_parameter
from approxdp.profiles import _gaussian_terms as terms
from approxdp.profiles.gaussian import (
    Notion,
    log_margin,
    log_profile_scalar,
    profile_surely_within,
    within_margin,
)

__all__ = [
    "sigma_optimal_dp",
    "sigma_optimal_dp_scalar",
    "sigma_optimal_pdp",
    "sigma_optimal_pdp_scalar",
    "sigma_zero_epsilon",
    "sigma_zero_epsilon_scalar",
]

# Points per chunk of the vectorized search (temporaries of 256 KiB stay in cache).
_CHUNK = 1 << 15
# Lower end for a bracket: 2δ(a) at a = -40 differs from 2 by e^{-1600}, beyond any δ < 1.
_A_FLOOR = -40.0
# σ ends by :func:`~approxdp._numerics.round_up` from its next float: first bump 1e-14 relative.
_SIGMA_BUMP = 1e-14
_ROUND_UP_TRIES = 90


class _Terms(NamedTuple):
    """The profile of one notion as functions of a: log 2δ, log 2(1-δ) and their slopes."""

    log2delta: Callable[..., FloatArray]
    log2delta_slope: Callable[..., FloatArray]
    log2comp: Callable[..., FloatArray]
    log2comp_slope: Callable[..., FloatArray]
    slope_uses_eps: bool  # pDP slopes take ε where DP slopes take h


_TERMS = {
    "dp": _Terms(
        terms.dp_log2delta,
        terms.dp_log2delta_slope,
        terms.dp_log2comp,
        terms.dp_log2comp_slope,
        False,
    ),
    "pdp": _Terms(
        terms.pdp_log2delta,
        terms.pdp_log2delta_slope,
        terms.pdp_log2comp,
        terms.pdp_log2comp_slope,
        True,
    ),
}


def _objective(eps: FloatArray, target: FloatArray, comp: np.ndarray, notion: str) -> Objective:
    """g(a) decreasing in a: log 2δ(a) - target, or target - log 2(1 - δ(a)) where comp."""
    t = _TERMS[notion]

    def fun(a: FloatArray, idx: np.ndarray) -> tuple[FloatArray, FloatArray]:
        e = eps[idx]
        c = comp[idx]
        b, h = terms.b_h_from_a(a, e)
        third = e if t.slope_uses_eps else h
        val = np.empty_like(a)
        slope = np.empty_like(a)
        nc = ~c
        v = t.log2delta(a[nc], b[nc], h[nc], e[nc])
        val[nc] = v - target[idx][nc]
        slope[nc] = t.log2delta_slope(a[nc], b[nc], third[nc], v)
        if np.any(c):
            w = t.log2comp(a[c], b[c], h[c], e[c])
            val[c] = target[idx][c] - w
            slope[c] = -t.log2comp_slope(a[c], b[c], third[c], w)
        return val, slope

    return fun


def _targets(delta: FloatArray, eps: FloatArray) -> tuple[FloatArray, np.ndarray]:
    """Solve for log 2δ (aimed below δ) or, when δ > 1/2, for log 2(1-δ) (aimed above 1-δ), by
    the margin of the profile at ``eps``."""
    comp = delta > 0.5
    log_d = np.log(delta)
    log_c = np.log1p(-delta)
    target = np.where(comp, LOG2 + log_c + log_margin(log_c, eps),
                      LOG2 + log_d - log_margin(log_d, eps))
    return target, comp


def _expand(fun: Objective, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Widen brackets whose computed end-point signs are wrong (guards the closed-form bounds)."""
    f = fun
    idx = np.arange(lo.size)
    for _ in range(64):
        g_lo = f(lo, idx)[0]
        bad = ~(g_lo >= 0)
        if not np.any(bad):
            break
        lo = np.where(bad, np.maximum(2.0 * lo - 1.0, _A_FLOOR), lo)
    for _ in range(64):
        g_hi = f(hi, idx)[0]
        bad = ~(g_hi <= 0)
        if not np.any(bad):
            break
        hi = np.where(bad, 2.0 * hi + 1.0, hi)
    return lo, hi


def round_up_sigma(
    sigma: FloatArray, eps: FloatArray, delta: FloatArray, notion: Notion
) -> FloatArray:
    """Smallest bump of σ (Δ = 1) after which the computed profile is surely <= δ.

    The check is :func:`~approxdp.profiles.gaussian.profile_surely_within` (on 1 - δ for
    δ > 1/2).
    """
    return round_up(
        np.nextafter(sigma, np.inf),
        lambda s: profile_surely_within(eps, 1.0 / s, delta, notion)[0],
        ARRAY_OPS, bump=_SIGMA_BUMP, tries=_ROUND_UP_TRIES,
    )


def _halley_then_bracketed(
    halley: Callable[[FloatArray, FloatArray], tuple[FloatArray, npt.NDArray[np.bool_]]],
    bracketed: Callable[[FloatArray, FloatArray], FloatArray],
    eps: FloatArray,
    delta: FloatArray,
) -> FloatArray:
    """``halley`` in chunks that keep the temporaries in cache; the points it does not settle
    go to ``bracketed``."""
    sigma = np.empty_like(eps)
    done = np.empty(eps.shape, dtype=bool)
    # Intermediate over/underflow at extreme inputs is handled (and every result verified).
    with np.errstate(all="ignore"):
        for i in range(0, eps.size, _CHUNK):
            sl = slice(i, i + _CHUNK)
            sigma[sl], done[sl] = halley(eps[sl], delta[sl])
        if not np.all(done):
            rest = ~done
            sigma[rest] = bracketed(eps[rest], delta[rest])
    return sigma


def _halley_then_bracketed_scalar(
    halley: Callable[[float, float], float | None],
    bracketed: Callable[[FloatArray, FloatArray], FloatArray],
    eps: float,
    delta: float,
) -> float:
    """:func:`_halley_then_bracketed` for one point given as Python floats."""
    sigma = halley(eps, delta)
    if sigma is not None:
        return sigma
    with np.errstate(all="ignore"):
        return float(bracketed(np.array([eps]), np.array([delta]))[0])


def sigma_optimal_dp(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """DP-OPT σ/Δ for flat arrays of ε > 0 and δ in (0, 1) (Zhao et al. Thm 2).

    Halley's method (:mod:`approxdp.calibration._optimal_halley`), in chunks that keep the
    temporaries in cache; any point it does not settle goes to the bracketed search.
    """
    return _halley_then_bracketed(sigma_dp_halley, _sigma_optimal_dp_bracketed, eps, delta)


def sigma_optimal_dp_scalar(eps: float, delta: float) -> float:
    """:func:`sigma_optimal_dp` for one point ε > 0, δ in (0, 1) given as Python floats."""
    return _halley_then_bracketed_scalar(
        sigma_dp_halley_scalar, _sigma_optimal_dp_bracketed, eps, delta
    )


def _sigma_optimal_dp_bracketed(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """DP-OPT σ/Δ by safeguarded Newton in a inside the closed-form brackets of Lemma 14."""
    target, comp = _targets(delta, eps)
    fun = _objective(eps, target, comp, "dp")
    # Lemma 14: the sign of 1 - e^ε erfc(√ε) - 2δ locates a relative to 0.
    diff = 1.0 - special.erfcx(np.sqrt(eps)) - 2.0 * delta
    pos = diff > 0
    # c of Mechanism 2 (Eq. 9), written without the cancellation of √(16δ + 1) - 1.
    with np.errstate(invalid="ignore"):  # c is used only where δ < 1/2 (pos)
        c = np.sqrt(np.log(2.0 * (np.sqrt(16.0 * delta + 1.0) + 1.0) / (16.0 * delta)))
    # -inverfc(y), y = (2 - 2δ)/(e^ε + 1); for tiny y use inverfc(y) <= √(-log y).
    log_y = np.log(2.0 - 2.0 * delta) - np.logaddexp(eps, 0.0)
    y = np.exp(log_y)
    with np.errstate(invalid="ignore"):
        lo_neg = -np.where(y > 1e-300, special.erfcinv(y), np.sqrt(-log_y))
    lo = np.where(pos, 0.0, np.maximum(lo_neg * (1 + 1e-9) - 1e-12, _A_FLOOR))
    hi = np.where(pos, c * (1 + 1e-9) + 1e-12, 0.0)
    lo, hi = _expand(fun, lo, hi)
    a = solve_decreasing(fun, lo, hi, hi.copy(), lambda x, idx: np.sqrt(x * x + eps[idx]))
    return round_up_sigma(sigma_from_parameter(a, eps), eps, delta, "dp")


def sigma_optimal_pdp(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """pDP-OPT σ/Δ for flat arrays of ε > 0 and δ in (0, 1) (Zhao et al. Thm 6).

    Halley's method (:mod:`approxdp.calibration._pdp_halley`) in chunks; any point it does not
    settle goes to the bracketed search.
    """
    return _halley_then_bracketed(sigma_pdp_halley, _sigma_optimal_pdp_bracketed, eps, delta)


def sigma_optimal_pdp_scalar(eps: float, delta: float) -> float:
    """:func:`sigma_optimal_pdp` for one point ε > 0, δ in (0, 1) given as Python floats."""
    return _halley_then_bracketed_scalar(
        sigma_pdp_halley_scalar, _sigma_optimal_pdp_bracketed, eps, delta
    )


def _sigma_optimal_pdp_bracketed(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """pDP-OPT σ/Δ by safeguarded Newton in a inside the brackets of Appendix M.

    The root d of Eq. (13a) lies in (inverfc(2δ), inverfc(δ)) (Zhao et al. Appendix M).
    """
    target, comp = _targets(delta, eps)
    fun = _objective(eps, target, comp, "pdp")
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.maximum(special.erfcinv(np.minimum(2.0 * delta, 2.0)), _A_FLOOR)
    hi = special.erfcinv(delta)
    lo = lo - 1e-9 * np.abs(lo) - 1e-12
    hi = hi + 1e-9 * np.abs(hi) + 1e-12
    lo, hi = _expand(fun, lo, hi)
    a = solve_decreasing(fun, lo, hi, hi.copy(), lambda x, idx: np.sqrt(x * x + eps[idx]))
    return round_up_sigma(sigma_from_parameter(a, eps), eps, delta, "pdp")


def sigma_zero_epsilon_scalar(delta: float) -> float:
    """:func:`sigma_zero_epsilon` for one δ in (0, 1/2] given as a Python float (same rounding;
    larger δ take the array path, whose check runs on 1 - δ)."""
    if delta > 0.5:
        return float(sigma_zero_epsilon(np.array([delta]))[0])
    sigma = math.nextafter(1.0 / (2.0 * SQRT2 * float(cython_special.erfinv(delta))), math.inf)
    log_d = math.log(delta)
    return float(round_up(
        sigma, lambda s: within_margin(log_profile_scalar(0.0, 1.0 / s, "dp"), log_d, False),
        SCALAR_OPS, bump=_SIGMA_BUMP, tries=_ROUND_UP_TRIES,
    ))


def sigma_zero_epsilon(delta: FloatArray) -> FloatArray:
    """(0, δ)-DP optimum σ/Δ = 1/(2√2 inverf(δ)) (Zhao et al. Thm 3 ①), rounded up (private
    side)."""
    sigma = 1.0 / (2.0 * SQRT2 * special.erfinv(delta))
    return round_up_sigma(sigma, np.zeros_like(delta), delta, "dp")
