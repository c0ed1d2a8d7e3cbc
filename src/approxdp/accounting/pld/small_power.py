"""The composed spectrum of a few steps, ∏ y_j^c_j, by complex multiplication in extended
precision, with its per-frequency error bound (:func:`product_spectrum`): the power of
:func:`approxdp.accounting.pld.fft_power._fft_power` for ``extended`` compositions whose every
count c_j is at most :data:`SMALL_POWER`.

Why. The float64 polar power y^c = e^(c log|y|) e^(i c arg y) errs by a few u = 2^-53 of |y^c|
at every frequency, so the inverse transform's masses carry ~10^-14 of absolute error at every
entry. Where a test's P- and Q-tails nearly cancel (tiny sampling rates: P(S̃ ≥ t) and
e^ε Q(S̃ ≥ t) agree to 10^-3 and their difference is δ = 10^-12) that error, summed over the
tail's entries, was 1 % of ε's lower bound. In x87 extended precision (unit round-off
v = 2^-64) the product of a few factors errs by ~c·v instead, and the forward and inverse
transforms are already taken in it (``extended``): the entries' error falls to the final cast
to float64, ~u·max|x|.

The bound, per frequency (Y_j the exact transform of part j, y_j its computed one):

- the forward transform: |y_j − Y_j| ≤ e_j (pocketfft's componentwise bound, as in
  ``_fft_power``);
- the power by binary exponentiation: any tree of multiplications of c factors has c − 1
  products once unfolded, each rounding by a complex factor (1 + η), |η| ≤ √5·v, for the
  textbook formula (Re = ac − bd, Im = ad + bc; NumPy's complex multiply) without over- or
  underflow (Brent, Percival, Zimmermann 2007, "Error bounds on complex floating-point
  multiplication", Math. Comp. 76(259), 1469–1481, https://doi.org/10.1090/S0025-5718-07-01931-X,
  Thm. 1); so |fl(y^c) − y^c| ≤ ρ_c|y|^c with ρ_c = (1 + √5·v)^(c−1) − 1 (the x87 exponent
  range, ±16382, leaves no over- or underflow for the counts taken here);
- |y^c − Y^c| ≤ (|y| + e)^c − |y|^c (the binomial expansion), so F_j = fl(y_j^c) is within
  d_j = ρ_c|y_j|^c + (|y_j| + e_j)^c − |y_j|^c of Y_j^c, and |F_j| ≤ M_j = |y_j|^c(1 + ρ_c);
- the product of the k parts' powers: |∏F_j − ∏Y_j^c| ≤ ∏(M_j + d_j) − ∏M_j (telescoping),
  and its k − 1 more multiplications add ((1 + √5·v)^(k−1) − 1)∏M_j. With
  M_j + d_j = (|y_j| + e_j)^c + 2ρ_c|y_j|^c ≤ (|y_j| + e_j)^c(1 + 2ρ_c), the bound taken is
  ∏M_j·(e^D − 1 + (1 + √5·v)^(k−1) − 1), D = Σ_j [c_j log(1 + e_j/|y_j|) + log(1 + ρ_j/(1 + ρ_j))].

The exact expression ∏(M_j + d_j) − ∏M_j + (…)∏M_j grows with each |y_j| (d_j does, and
M_j + d_j ≥ M_j), and ∏M_j·e^D bounds ∏(M_j + d_j); so the bound is evaluated at an upper
estimate of each |y_j| (at least 10^-300); in float64 logarithms (its own rounding is ~10^-11 of it:
scaled by 1.01), plus twice the least positive float per frequency (an exponential that
underflows; an x87 product that underflows errs by less, ~10^-4951, and only shrinks after).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SMALL_POWER", "product_spectrum"]

FloatArray = npt.NDArray[np.float64]

#: The largest count c_j taken by multiplication (an ``extended`` composition with a larger
#: count takes the float64 polar power of ``_fft_power``).
SMALL_POWER = 64
_U = float(np.finfo(np.float64).eps) / 2
_FLOOR = 2.0 * math.ulp(0.0)


def _power(y: Any, c: int) -> Any:
    """y^c (c ≥ 1) by binary exponentiation, in y's (complex) type."""
    result: Any = None
    base = y
    while True:
        if c & 1:
            result = base if result is None else result * base
        c >>= 1
        if not c:
            return result
        base = base * base


def product_spectrum(
    specs: Sequence[tuple[Any, float, int]], v: float
) -> tuple[Any, FloatArray]:
    """(∏ y_j^c_j in the specs' complex type, a float64 bound per frequency on its distance
    from ∏ Y_j^c_j) for ``specs`` = (y_j, e_j, c_j): each part's computed spectrum, the bound
    e_j on its forward error at every frequency, its count; v: the unit round-off of the
    complex type. See the module docstring for the bound."""
    step = math.log1p(math.sqrt(5.0) * v) * 1.001  # log(1 + √5·v), rounded up
    z: Any = None
    log_m: FloatArray | None = None  # Σ_j log M_j
    log_d: FloatArray | None = None  # Σ_j log((M_j + d_j)/M_j), bounded above
    for y, e, c in specs:
        f = _power(y, c)
        z = f if z is None else z * f
        del f
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.asarray(np.log(np.abs(y)), dtype=np.float64)
            # an upper estimate of log|y| (abs and log each ~1 ulp of v, the cast u·|log|y||),
            # at least log 10^-300 (a |y| of 0 too)
            a += 4.0 * _U * np.abs(a) + 8.0 * v
        a = np.fmax(a, math.log(1e-300))
        rho = math.expm1((c - 1) * step)
        # M + d = (|y| + e)^c + 2ρ|y|^c ≤ (|y| + e)^c (1 + 2ρ), M = |y|^c (1 + ρ)
        lm = c * a + math.log1p(rho)
        ld = c * np.log1p(e * np.exp(-a)) + math.log1p(rho / (1.0 + rho))
        log_m = lm if log_m is None else log_m + lm
        log_d = ld if log_d is None else log_d + ld
    if z is None or log_m is None or log_d is None:
        raise ValueError("no parts to compose")  # pragma: no cover
    chain = math.expm1((len(specs) - 1) * step)  # the products across the parts
    # ∏M·(e^D − 1 + chain) ≥ ∏(M + d) − ∏M + chain·∏M; log(expm1(D) + chain), bounded by
    # D + log1p(chain) where D ≥ 1 (no overflow)
    small = log_d < 1.0
    with np.errstate(divide="ignore"):
        log_extra = np.where(small, np.log(np.expm1(np.where(small, log_d, 0.0)) + chain),
                             log_d + math.log1p(chain))
    with np.errstate(over="ignore", under="ignore"):
        err = 1.01 * np.exp(log_m + log_extra) + _FLOOR
    return z, np.asarray(err, dtype=np.float64)
