"""Numerical kernels shared by the privacy profiles and the calibrations.

Everything here works on NumPy arrays and, through a scalar twin that runs the same straight-line
formulas on Python floats, on single numbers (the fast path of the scalar API). The one delicate
quantity is the difference of scaled complementary error functions,

    D(a, h) = erfcx(a) - erfcx(a + h),  a >= 0, h >= 0,  erfcx(x) = exp(x²) erfc(x),

which is the whole Gaussian privacy profile once its factor exp(-a²) is taken out
(Zhao et al. Eq. 5: 2δ = erfc(a) - e^ε erfc(√(a²+ε)) = e^{-a²} D(a, √(a²+ε) - a) for a >= 0). When h
is small compared with max(1, a) (small ε with tiny δ) the two erfcx values agree to many digits.
There D is summed from the Taylor series of erfcx about the midpoint m = a + h/2,

    D = 2 Σ_{k odd} J_k(m) h^k,   J_k(x) = e^{x²} i^k erfc(x)   (all terms positive),

where i^k erfc are the repeated integrals of erfc (A&S 7.2.1), because erfcx^{(k)}(x) =
(-2)^k k! J_k(x) (differentiate erfcx(x) = (2/√π) ∫_0^∞ e^{-t²-2xt} dt under the integral).
The J_k obey 2(k+1) J_{k+1} = J_{k-1} - 2x J_k (A&S 7.2.5) with J_0 = erfcx, J_{-1} = 2/√π:
run upward for m < 6, where it loses at most ~180 ulp; for m >= 6 the ratios ρ_k = J_k/J_{k-1}
come from the same recurrence run downward, ρ_k = 1/(2m + 2(k+1)ρ_{k+1}) (a continued fraction,
started at its fixed point 1/(m + √(m² + 2(k+1)))), which is stable there and gives J_0 too.

See https://arxiv.org/abs/1911.12060 (Zhao et al. 2019), Eq. 5.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import special
from scipy.special import cython_special

FloatArray = npt.NDArray[np.float64]
#: One float or an array of them: what the formulas written against :class:`Ops` run on.
Real = TypeVar("Real", float, FloatArray)

__all__ = [
    "ARRAY_OPS",
    "LOG2",
    "SCALAR_OPS",
    "SERIES_BELOW",
    "SQRT2",
    "TWO_OVER_SQRT_PI",
    "Ops",
    "erfcx_diff",
    "erfcx_diff_scalar",
    "erfcx_scalar",
    "round_up",
    "solve_decreasing",
    "solve_decreasing_scalar",
]

SQRT2 = math.sqrt(2.0)
LOG2 = math.log(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)

# Direct subtraction erfcx(a) - erfcx(a + h) once h >= max(1, a)/16: the difference is then at
# least ~1/17 of erfcx(a), so it loses at most ~4 bits (scipy's erfcx is good to ~4 ulp).
SERIES_BELOW = 1.0 / 16.0
# Upward recurrence for the J_k below this midpoint, downward (continued fraction) above. The
# upward error is dominated by J_1 = 1/√π - m J_0, which loses ~2m² ulp (measured against
# mpmath: <= 60 ulp for m < 4, <= 180 ulp for m < 6, whatever the number of terms).
_FORWARD_BELOW = 6.0
# Depth of the downward recurrence: from its fixed-point start, 12 steps give ρ_0 ... ρ_11 to
# ~2 ulp for m >= 6 (the error is damped by ~(k+1)/(2m²) per step).
_CF_DEPTH = 12
# At most this many odd terms: below the direct threshold the term ratio is <= (1/32)^2.
_MAX_ODD_TERMS = 6

erfcx_scalar: Callable[[float], float] = cython_special.erfcx
"""scipy's erfcx (Faddeeva package) on one Python float, returning a Python float."""


# Ratio h / (2 max(1, m)) below which n odd terms suffice: ratio^(2n) <= 1e-17.
_ODD_TERM_LIMITS = tuple(10.0 ** (-17.0 / (2 * n)) for n in range(1, _MAX_ODD_TERMS))


def _odd_terms(ratio: float) -> int:
    """Odd Taylor terms needed when h / (2 max(1, m)) <= ratio (relative tail below 1e-17)."""
    for n, limit in enumerate(_ODD_TERM_LIMITS, start=1):
        if ratio <= limit:
            return n
    return _MAX_ODD_TERMS


def _odd_series_upward(m: Any, h: Any, j0: Any, n_odd: int) -> Any:
    """2 Σ_{k odd < 2 n_odd} J_k(m) h^k, with J_1 = 1/√π - m J_0 and the upward recurrence.

    Straight-line arithmetic: works on Python floats and on NumPy arrays alike.
    """
    j_prev = j0
    j = _INV_SQRT_PI - m * j0  # J_1
    h2 = h * h
    power = h
    total = j * h
    k = 1
    for _ in range(n_odd - 1):
        j_prev = (j_prev - 2.0 * m * j) / (2.0 * (k + 1))  # J_{k+1}
        j = (j - 2.0 * m * j_prev) / (2.0 * (k + 2))  # J_{k+2}
        k += 2
        power = power * h2
        total = total + j * power
    return 2.0 * total


def _odd_series_downward(m: Any, h: Any, n_odd: int, depth: int) -> tuple[Any, Any]:
    """(2 Σ_{k odd < 2 n_odd} J_k(m) h^k, erfcx(m)) from the ratios ρ_k by the downward recurrence.

    The sum is nested, h ρ_1 (1 + h² ρ_2 ρ_3 (1 + h² ρ_4 ρ_5 (...))), and accumulated on the way
    down. Straight-line arithmetic: works on Python floats and on NumPy arrays alike.
    """
    top = 2 * n_odd - 1  # highest ratio in the sum
    h2 = h * h
    rho = 1.0 / (m + (m * m + 2.0 * (depth + 1)) ** 0.5)
    nested: Any = 1.0
    upper: Any = 1.0  # ρ_{k+1} while descending through an even k
    for k in range(depth - 1, -1, -1):
        rho = 1.0 / (2.0 * m + 2.0 * (k + 1) * rho)
        if 2 <= k <= top:
            if k % 2:
                upper = rho
            else:
                nested = 1.0 + h2 * rho * upper * nested
        elif k == 1:
            nested = h * rho * nested
    return 2.0 * TWO_OVER_SQRT_PI * rho * nested, TWO_OVER_SQRT_PI * rho


def erfcx_diff(a: FloatArray, h: FloatArray) -> FloatArray:
    """erfcx(a) - erfcx(a + h) for arrays a >= 0, h >= 0, to a few ulp relative.

    ``h`` is passed separately because callers know it without the cancellation of b - a.
    Direct subtraction where h >= max(1, a)/16, else the odd Taylor series about a + h/2 (see the
    module docstring).
    """
    a = np.asarray(a, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    a, h = np.broadcast_arrays(a, h)
    out = np.empty(a.shape, dtype=np.float64)
    direct = h >= SERIES_BELOW * np.maximum(1.0, a)
    if np.all(direct):
        return special.erfcx(a) - special.erfcx(a + h)  # type: ignore[no-any-return]
    out[direct] = special.erfcx(a[direct]) - special.erfcx(a[direct] + h[direct])
    series = ~direct
    hs = h[series]
    m = a[series] + 0.5 * hs
    ratio = hs / (2.0 * np.maximum(1.0, m))
    up = m < _FORWARD_BELOW
    vals = np.empty_like(m)
    if np.any(up):
        mu = m[up]
        n_odd = _odd_terms(float(np.max(ratio[up])))
        vals[up] = _odd_series_upward(mu, hs[up], special.erfcx(mu), n_odd)
    down = ~up
    if np.any(down):
        md = m[down]
        n_odd = _odd_terms(float(np.max(ratio[down])))
        vals[down] = _odd_series_downward(md, hs[down], n_odd, _CF_DEPTH)[0]
    out[series] = vals
    return out


def erfcx_diff_scalar(a: float, h: float) -> float:
    """:func:`erfcx_diff` for one pair of Python floats (same branches, same formulas)."""
    scale = a if a > 1.0 else 1.0
    if h >= SERIES_BELOW * scale:
        return erfcx_scalar(a) - erfcx_scalar(a + h)
    m = a + 0.5 * h
    n_odd = _odd_terms(h / (2.0 * (m if m > 1.0 else 1.0)))
    if m < _FORWARD_BELOW:
        return float(_odd_series_upward(m, h, erfcx_scalar(m), n_odd))
    return float(_odd_series_downward(m, h, n_odd, _CF_DEPTH)[0])


def _choose(condition: Any, if_true: Any, if_false: Any) -> Any:
    """``np.where`` for one Python value."""
    return if_true if condition else if_false


class Ops(NamedTuple):
    """The elementary functions a formula needs, for arrays (NumPy/SciPy) or floats (``math``).

    Formulas written once against an ``Ops`` run unchanged on arrays and on Python floats, so
    the scalar fast path and the vectorized path share one implementation.
    """

    exp: Callable[[Any], Any]
    log: Callable[[Any], Any]
    expm1: Callable[[Any], Any]
    log1p: Callable[[Any], Any]
    sqrt: Callable[[Any], Any]
    erf: Callable[[Any], Any]
    erfc: Callable[[Any], Any]
    erfcx: Callable[[Any], Any]
    erfcx_diff: Callable[[Any, Any], Any]
    maximum: Callable[[Any, Any], Any]
    minimum: Callable[[Any, Any], Any]
    where: Callable[[Any, Any, Any], Any]
    nextafter: Callable[[Any, Any], Any]
    all: Callable[[Any], Any]


ARRAY_OPS = Ops(
    np.exp,
    np.log,
    np.expm1,
    np.log1p,
    np.sqrt,
    special.erf,
    special.erfc,
    special.erfcx,
    erfcx_diff,
    np.maximum,
    np.minimum,
    np.where,
    np.nextafter,
    np.all,
)
SCALAR_OPS = Ops(
    math.exp,
    math.log,
    math.expm1,
    math.log1p,
    math.sqrt,
    math.erf,
    math.erfc,
    erfcx_scalar,
    erfcx_diff_scalar,
    max,
    min,
    _choose,
    math.nextafter,
    bool,
)

Objective = Callable[[FloatArray, npt.NDArray[np.intp]], tuple[FloatArray, FloatArray]]


def _newton_or_bisect(
    x: Real, g: Real, dg: Real, lo: Real, hi: Real, scale: Callable[[Real], Real], rtol: float,
    ops: Ops,
) -> tuple[Real, Real, Real, Any]:
    """One step of :func:`solve_decreasing` at points x with g = g(x), dg = g'(x), on arrays or
    floats: (next x, lo, hi, converged).

    The bracket keeps g(lo) >= 0 >= g(hi); the Newton step x - g/dg is taken inside it, else
    the midpoint. Converged: g = 0 (then x stays), or the step or the bracket is within
    ``rtol * scale(next x)``. On floats a zero dg raises ZeroDivisionError.
    """
    lo = ops.where(g > 0, x, lo)
    hi = ops.where(g < 0, x, hi)
    xn = x - g / dg
    xn = ops.where((xn > lo) & (xn < hi), xn, 0.5 * (lo + hi))  # NaN and ±inf: bisect
    tol = rtol * scale(xn)
    done = (g == 0) | (abs(xn - x) <= tol) | ((hi - lo) <= tol)
    return ops.where(g == 0, x, xn), lo, hi, done


def solve_decreasing(
    fun: Objective,
    lo: FloatArray,
    hi: FloatArray,
    x0: FloatArray,
    scale: Callable[[FloatArray, npt.NDArray[np.intp]], FloatArray],
    *,
    rtol: float = 2e-16,
    max_iter: int = 200,
) -> FloatArray:
    """Find x with g(x) = 0 for many decreasing functions g at once (safeguarded Newton).

    Args:
        fun: ``fun(x, idx) -> (g, dg)`` evaluates the functions with indices ``idx`` at ``x``.
        lo, hi: a bracket with g(lo) >= 0 >= g(hi) for each function (1-D arrays).
        x0: starting points inside the bracket.
        scale: ``scale(x, idx)``: the step size below which an iterate counts as converged is
            ``rtol * scale``.
        rtol: relative step tolerance.
        max_iter: at most this many iterations (bisection halves the bracket each time Newton
            leaves it, so 200 is far more than needed in double precision).

    Returns:
        The roots, to within a few units of ``rtol * scale``. Callers that need a one-sided
        guarantee must verify and adjust the result themselves (:func:`round_up`).

    The step is :func:`_newton_or_bisect`, shared with :func:`solve_decreasing_scalar`; only the
    loop differs (here the converged points leave the active set).
    """
    lo = np.array(lo, dtype=np.float64)
    hi = np.array(hi, dtype=np.float64)
    x = np.array(x0, dtype=np.float64)
    active = np.arange(x.size)
    for _ in range(max_iter):
        if active.size == 0:
            break
        g, dg = fun(x[active], active)

        def scale_active(xn: FloatArray, idx: npt.NDArray[np.intp] = active) -> FloatArray:
            return scale(xn, idx)

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            xn, lo[active], hi[active], done = _newton_or_bisect(
                x[active], g, dg, lo[active], hi[active], scale_active, rtol, ARRAY_OPS
            )
        x[active] = xn
        active = active[~done]
    return x


def solve_decreasing_scalar(
    fun: Callable[[float], tuple[float, float]],
    lo: float,
    hi: float,
    x0: float,
    scale: Callable[[float], float],
    *,
    rtol: float = 2e-16,
    max_iter: int = 200,
) -> float:
    """:func:`solve_decreasing` for one decreasing function of a Python float (``fun(x) ->
    (g, dg)``, ``scale(x)``): the same step, in a loop that stops at convergence.

    Raises:
        ZeroDivisionError: where dg = 0 (the array version bisects there).
    """
    x = x0
    for _ in range(max_iter):
        g, dg = fun(x)
        x, lo, hi, done = _newton_or_bisect(x, g, dg, lo, hi, scale, rtol, SCALAR_OPS)
        if done:
            break
    return x


def round_up(
    x: Real, surely_within: Callable[[Real], Any], ops: Ops, *, bump: float, tries: int
) -> Real:
    """Increase x (arrays or floats) until ``surely_within(x)`` holds at every point.

    The one-sided end of every search: a computed root can sit on the wrong side of the target
    by its evaluation error, so each failing value grows by the factor 1 + ``bump`` (at least by
    1e-300, for x = 0), the bump doubling each round, until the check passes.

    Raises:
        RuntimeError: not settled within ``tries`` rounds (never seen: the bump reaches
            x itself within ~45 rounds from 1e-13).
    """
    all_true, where, maximum = ops.all, ops.where, ops.maximum
    for _ in range(tries):
        ok = surely_within(x)
        if all_true(ok):
            return x
        x = where(ok, x, maximum(x * (1.0 + bump), x + 1e-300))
        bump *= 2.0
    raise RuntimeError("round-up to the private side did not converge")  # pragma: no cover
