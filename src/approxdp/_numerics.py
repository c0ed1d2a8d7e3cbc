"""Numerical kernels shared by the privacy profiles and the calibrations.

Everything here is vectorized over NumPy arrays and works in log space where values underflow.
The one delicate quantity is the difference of scaled complementary error functions,

    D(a, b) = erfcx(a) - erfcx(b),  0 <= a < b = a + h,  erfcx(x) = exp(x²) erfc(x),

which is the whole Gaussian privacy profile once its factor exp(-a²) is taken out
(paper Eq. 5: 2δ = erfc(a) - e^ε erfc(√(a²+ε)) = e^{-a²} D(a, √(a²+ε)) for a >= 0). When
b - a is small compared with max(1, a) (small ε with tiny δ) the two erfcx values agree to many
digits, so D is computed as the integral of -erfcx' over [a, b] by Gauss-Legendre quadrature,
with -erfcx'(t) = 2/√π - 2t·erfcx(t) itself evaluated by its asymptotic series for large t.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import special

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "LOG2",
    "SQRT2",
    "TWO_OVER_SQRT_PI",
    "erfcx_diff",
    "erfcx_neg_slope",
    "solve_decreasing",
]

SQRT2 = math.sqrt(2.0)
LOG2 = math.log(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)

# Gauss-Legendre rule on [-1, 1]; 12 nodes integrate -erfcx' over [a, a + h] with h <= max(1, a)/4
# to full double precision (the integrand is analytic with scale max(1, a)).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(12)
# Below this ratio h / max(1, a) the direct difference would lose more than about one digit.
_QUADRATURE_BELOW = 0.25
# Asymptotic series of -erfcx'(t) is used for t >= this (its smallest term is < 1e-20 there).
_ASYMPTOTIC_FROM = 7.0
_ASYMPTOTIC_TERMS = 40


def erfcx_neg_slope(t: FloatArray) -> FloatArray:
    """-d/dt erfcx(t) = 2/√π - 2t·erfcx(t) for t >= 0, without cancellation.

    For t >= 7 uses the asymptotic expansion
    -erfcx'(t) = (1/(√π t²)) Σ_{n>=0} (-1)^n (2n+1)!! / (2t²)^n,
    truncated at 40 terms (relative error below 1e-20 there); below that the direct formula
    loses at most a factor 2t² <= 98 to cancellation (relative error ~1e-14).
    """
    t = np.asarray(t, dtype=np.float64)
    out = np.empty_like(t)
    big = t >= _ASYMPTOTIC_FROM
    small = ~big
    ts = t[small]
    out[small] = TWO_OVER_SQRT_PI - 2.0 * ts * special.erfcx(ts)
    if np.any(big):
        tb = t[big]
        inv = 1.0 / (2.0 * tb * tb)
        # Horner evaluation of Σ (-1)^n (2n+1)!! x^n with x = 1/(2t²).
        acc = np.ones_like(tb)
        for n in range(_ASYMPTOTIC_TERMS, 0, -1):
            acc = 1.0 - (2 * n + 1) * inv * acc
        out[big] = _INV_SQRT_PI * acc / (tb * tb)
    return out


def erfcx_diff(a: FloatArray, h: FloatArray) -> FloatArray:
    """erfcx(a) - erfcx(a + h) for a >= 0, h >= 0, to full relative precision.

    ``h`` is passed separately because callers know it without the cancellation of b - a.
    Direct subtraction where h >= max(1, a)/4 (the two values then differ by at least ~20%),
    otherwise the integral of -erfcx' over [a, a + h] by 12-point Gauss-Legendre quadrature.
    """
    a = np.asarray(a, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    a, h = np.broadcast_arrays(a, h)
    b = a + h
    out = np.empty(a.shape, dtype=np.float64)
    quad = h < _QUADRATURE_BELOW * np.maximum(1.0, a)
    direct = ~quad
    out[direct] = special.erfcx(a[direct]) - special.erfcx(b[direct])
    if np.any(quad):
        aq = a[quad]
        hq = h[quad]
        half = 0.5 * hq
        mid = aq + half
        nodes = mid[:, None] + half[:, None] * _GL_NODES[None, :]
        vals = erfcx_neg_slope(nodes.ravel()).reshape(nodes.shape)
        out[quad] = half * (vals @ _GL_WEIGHTS)
    return out


Objective = Callable[[FloatArray, npt.NDArray[np.intp]], tuple[FloatArray, FloatArray]]


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
        guarantee must verify and adjust the result themselves.
    """
    lo = np.array(lo, dtype=np.float64)
    hi = np.array(hi, dtype=np.float64)
    x = np.array(x0, dtype=np.float64)
    active = np.arange(x.size)
    for _ in range(max_iter):
        if active.size == 0:
            break
        xa = x[active]
        g, dg = fun(xa, active)
        pos = g > 0
        neg = g < 0
        lo[active[pos]] = xa[pos]
        hi[active[neg]] = xa[neg]
        la, ha = lo[active], hi[active]
        with np.errstate(divide="ignore", invalid="ignore"):
            step = g / dg
            xn = xa - step
        outside = ~np.isfinite(xn) | (xn <= la) | (xn >= ha)
        xn = np.where(outside, 0.5 * (la + ha), xn)
        tol = rtol * scale(xn, active)
        done = (g == 0) | (np.abs(xn - xa) <= tol) | ((ha - la) <= tol)
        x[active] = np.where(g == 0, xa, xn)
        active = active[~done]
    return x
