"""Closed-form Gaussian calibrations: the classical formulas and Zhao et al.'s Mechanisms 1-4.

Each function takes flat float arrays of ε > 0 and δ in (0, 1) and returns σ/Δ (σ scales
linearly in Δ). None of them checks privacy: :func:`approxdp.calibration.calibrate_gaussian`
does that against the exact profile. Written to avoid the float64 traps of the formulas as
printed (Zhao et al. 2019, https://arxiv.org/abs/1911.12060):
√(16δ + 1) - 1 becomes 16δ/(√(16δ + 1) + 1); (p + √(p² + ε))/(ε√2) is evaluated as
1/(√2(√(p² + ε) - p)) when p < 0.
"""

from __future__ import annotations

import math
from typing import Any, overload

import numpy as np
from scipy import special

from approxdp._numerics import ARRAY_OPS, LOG2, SQRT2, FloatArray, Ops, erfcx_diff

__all__ = [
    "sigma_dwork_2006",
    "sigma_dwork_roth_2014",
    "sigma_from_parameter",
    "sigma_wang_lecture",
    "sigma_zcdp",
    "sigma_zhao_m1",
    "sigma_zhao_m2",
    "sigma_zhao_m3",
    "sigma_zhao_m4",
]


@overload
def sigma_from_parameter(p: FloatArray, eps: FloatArray, ops: Ops = ...) -> FloatArray: ...
@overload
def sigma_from_parameter(p: float, eps: float, ops: Ops) -> float: ...


def sigma_from_parameter(p: Any, eps: Any, ops: Ops = ARRAY_OPS) -> Any:
    """σ/Δ = (p + √(p² + ε)) / (ε√2), the common form of Zhao et al. Eq. 5, 7b, 9, 14, 15 (ε > 0).

    Written without cancellation: with q = √(p² + ε) + |p|, σ/Δ = q/(ε√2) for p >= 0 and
    1/(√2 q) for p < 0 (= 1/(√2 (√(p² + ε) - p))). Arrays, or floats with ``SCALAR_OPS``.
    """
    q = ops.sqrt(p * p + eps) + abs(p)
    return ops.where(p >= 0, q / (eps * SQRT2), 1.0 / (SQRT2 * q))


def sigma_dwork_2006(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """σ/Δ = √(2 ln(2/δ)) / ε (Dwork et al. 2006; Zhao et al. Eq. 1; Wu's notes, Eq. 17)."""
    return np.sqrt(2.0 * (LOG2 - np.log(delta))) / eps


def sigma_dwork_roth_2014(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """σ/Δ = √(2 ln(1.25/δ)) / ε (Dwork & Roth 2014, Thm A.1; Zhao et al. Eq. 2)."""
    return np.sqrt(2.0 * (math.log(1.25) - np.log(delta))) / eps


def sigma_wang_lecture(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """σ/Δ = √(32 ln(2/δ) / 9) / ε (D. Wang's notes, Thm 5.7)."""
    return np.sqrt(32.0 * (LOG2 - np.log(delta)) / 9.0) / eps


def sigma_zcdp(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """σ/Δ = (√ln(1/δ) + √(ln(1/δ) + ε)) / (√2 ε), via zCDP/RDP (Zhao et al. §VII)."""
    lg = -np.log(delta)
    return (np.sqrt(lg) + np.sqrt(lg + eps)) / (SQRT2 * eps)


def _m2_parameter(delta: FloatArray, k: float) -> FloatArray:
    """√(ln(2/(√(kδ + 1) - 1))) = √(ln(2(√(kδ + 1) + 1)/(kδ))), for k = 16 (M2) and 8 (M4)."""
    with np.errstate(invalid="ignore"):
        return np.sqrt(LOG2 + np.log(np.sqrt(k * delta + 1.0) + 1.0) - np.log(k * delta))


def sigma_zhao_m2(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """Mechanism 2 (Zhao et al. Thm 5, Eq. 9): c = √(ln(2/(√(16δ + 1) - 1))), for δ < 1/2."""
    return sigma_from_parameter(_m2_parameter(delta, 16.0), eps)


def sigma_zhao_m3(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """Mechanism 3, for pDP (Zhao et al. Thm 8, Eq. 14): f = inverfc(δ)."""
    return sigma_from_parameter(special.erfcinv(delta), eps)


def sigma_zhao_m4(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """Mechanism 4, for pDP (Zhao et al. Thm 9, Eq. 15): g = √(ln(2/(√(8δ + 1) - 1)))."""
    return sigma_from_parameter(_m2_parameter(delta, 8.0), eps)


def sigma_zhao_m1(eps: FloatArray, delta: FloatArray) -> FloatArray:
    """Mechanism 1 (Zhao et al. Thm 4, Eq. 7a-7b).

    b = inverfc(y), y = 2δ / (1 - e^ε erfc(√(t² + ε)) / (2δ + e^ε erfc(√ε))), with
    t = inverfc(2δ + e^ε erfc(√ε)) when 2 - e^ε erfc(√ε) > 2δ, else b = 0.

    Evaluated stably: e^ε erfc(√ε) = erfcx(√ε) and s0 = 2δ + erfcx(√ε) = erfc(t); near s0 = 1,
    t = -erfinv(s0 - 1) with s0 - 1 = 2δ - (erfcx(0) - erfcx(√ε)) free of cancellation. With
    s = √(t² + ε), y = 2δ s0 / den where den = erfc(t) - e^ε erfc(s) is
    e^{-t²}(erfcx(t) - erfcx(s)) for t >= 0. When y is near 1 (tiny ε), b = erfinv(1 - y) with
    1 - y = F / den and

        F = erfc(t)(1 - 2δ) - e^ε erfc(s)
          = 2δ(1 - s0) + (erfcx(√ε) - erfcx(s)) - expm1(-t²) erfcx(s),

    every part computed without cancellation (s - √ε = t²/(s + √ε)).
    """
    s0 = 2.0 * delta + special.erfcx(np.sqrt(eps))
    inside = s0 < 2.0
    b = np.zeros_like(eps)
    if np.any(inside):
        e = eps[inside]
        d = delta[inside]
        root_e = np.sqrt(e)
        # t = inverfc(s0); near s0 = 1 use t = -erfinv(s0 - 1) with
        # s0 - 1 = 2δ - (erfcx(0) - erfcx(√ε)) computed without cancellation.
        z = 2.0 * d - erfcx_diff(np.zeros_like(e), root_e)
        t = np.where(np.abs(z) < 0.5, -special.erfinv(z), special.erfcinv(s0[inside]))
        s = np.sqrt(t * t + e)
        erfcx_s = special.erfcx(s)
        # den = erfc(t) - e^ε erfc(s) = erfc(t) (1 - e^ε erfc(s)/s0)
        den = np.empty_like(t)
        tp = t >= 0
        tpos = t[tp]
        den[tp] = np.exp(-tpos * tpos) * erfcx_diff(tpos, e[tp] / (tpos + s[tp]))
        tn = t[~tp]
        den[~tp] = special.erfc(tn) - np.exp(-tn * tn) * erfcx_s[~tp]
        f = -2.0 * d * z + erfcx_diff(root_e, t * t / (s + root_e)) - np.expm1(-t * t) * erfcx_s
        one_minus_y = f / den
        y = 2.0 * d * s0[inside] / den
        b[inside] = np.where(
            np.abs(one_minus_y) < 0.5, special.erfinv(one_minus_y), special.erfcinv(y)
        )
    return sigma_from_parameter(b, eps)
