"""The Gaussian privacy profiles as functions of the paper's variable a (Eq. 5, Eq. 13a).

With u = Δ/σ, the privacy loss of the Gaussian mechanism is N(u²/2, u²) (lecture-wang
Lemma 5.13). Writing

    a = (ε/u - u/2)/√2,   b = (ε/u + u/2)/√2 = √(a² + ε),   h = b - a = u/√2,

the exact profiles are (paper Thm 2 / Eq. 5 and Thm 6 / Eq. 13a; BW18 Thm 8)

    2 δ_DP  = erfc(a) - e^ε erfc(b),
    2 δ_pDP = erfc(a) + erfc(b).

Each function below returns log(2δ) or log(2(1-δ)) for arrays a, b, h, ε of one shape, with
the branch for a >= 0 written through erfcx so that nothing underflows, and the near-cancelling
difference handled by :func:`approxdp._numerics.erfcx_diff`. Each also has its derivative with
respect to a (b and h depend on a through b² = a² + ε), used by the calibrations.
Callers guarantee 0 <= ε < inf, b > 0 and h > 0.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from approxdp._numerics import TWO_OVER_SQRT_PI, FloatArray, erfcx_diff

__all__ = [
    "b_h_from_a",
    "dp_log2comp",
    "dp_log2delta",
    "pdp_log2comp",
    "pdp_log2delta",
]


def b_h_from_a(a: FloatArray, eps: FloatArray) -> tuple[FloatArray, FloatArray]:
    """b = √(a² + ε) and h = b - a, with h computed as ε/(a + b) for a >= 0 (no cancellation)."""
    b = np.sqrt(a * a + eps)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(a >= 0, eps / (a + b), b - a)
    return b, h


def _masked(a: FloatArray) -> tuple[np.ndarray, np.ndarray]:
    pos = a >= 0
    return pos, ~pos


def dp_log2delta(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 δ_DP) (paper Eq. 5).

    a >= 0: 2δ = e^{-a²} (erfcx(a) - erfcx(b));
    a < 0:  2δ = erf(-a) + erf(b) - e^{-a²} (1 - e^{-ε}) erfcx(b)   (no cancellation: the last
            term is at most a third of the first two).
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos, neg = _masked(a)
    ap = a[pos]
    with np.errstate(divide="ignore"):
        out[pos] = -ap * ap + np.log(erfcx_diff(ap, h[pos]))
        an, bn, en = a[neg], b[neg], eps[neg]
        val = (
            special.erf(-an)
            + special.erf(bn)
            + np.exp(-an * an) * np.expm1(-en) * special.erfcx(bn)
        )
        out[neg] = np.log(val)
    return out


def dp_log2delta_slope(
    a: FloatArray, b: FloatArray, h: FloatArray, log2delta: FloatArray
) -> FloatArray:
    """d/da log(2δ_DP) = -(2/√π) (h/b) e^{-a²} / (2δ)."""
    return -TWO_OVER_SQRT_PI * (h / b) * np.exp(-a * a - log2delta)


def dp_log2comp(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 (1 - δ_DP)), accurate when δ_DP is close to 1.

    2(1 - δ) = erfc(-a) + e^ε erfc(b): for a < 0 this is e^{-a²}(erfcx(-a) + erfcx(b)),
    for a >= 0 it is 1 + erf(a) + e^{-a²} erfcx(b). Both sums have positive terms.
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos, neg = _masked(a)
    ap, bp = a[pos], b[pos]
    out[pos] = np.log(1.0 + special.erf(ap) + np.exp(-ap * ap) * special.erfcx(bp))
    an, bn = a[neg], b[neg]
    out[neg] = -an * an + np.log(special.erfcx(-an) + special.erfcx(bn))
    return out


def dp_log2comp_slope(
    a: FloatArray, b: FloatArray, h: FloatArray, log2comp: FloatArray
) -> FloatArray:
    """d/da log(2(1 - δ_DP)) = +(2/√π) (h/b) e^{-a²} / (2(1 - δ))."""
    return TWO_OVER_SQRT_PI * (h / b) * np.exp(-a * a - log2comp)


def pdp_log2delta(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 δ_pDP) (paper Eq. 13a): 2δ = erfc(a) + erfc(b).

    a >= 0: e^{-a²}(erfcx(a) + e^{-ε} erfcx(b)); a < 0: the plain sum.
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos, neg = _masked(a)
    ap, bp, ep = a[pos], b[pos], eps[pos]
    out[pos] = -ap * ap + np.log(special.erfcx(ap) + np.exp(-ep) * special.erfcx(bp))
    out[neg] = np.log(special.erfc(a[neg]) + special.erfc(b[neg]))
    return out


def pdp_log2delta_slope(
    a: FloatArray, b: FloatArray, eps: FloatArray, log2delta: FloatArray
) -> FloatArray:
    """d/da log(2δ_pDP) = -(2/√π)(1 + e^{-ε} a/b) e^{-a²} / (2δ)."""
    return -TWO_OVER_SQRT_PI * (1.0 + np.exp(-eps) * a / b) * np.exp(-a * a - log2delta)


def pdp_log2comp(a: FloatArray, b: FloatArray, h: FloatArray, eps: FloatArray) -> FloatArray:
    """log(2 (1 - δ_pDP)) = log(erf(a) + erf(b)).

    For a < 0 the sum is erfc(|a|) - erfc(b) = e^{-a²}(erfcx(|a|) - erfcx(b) - expm1(-ε) erfcx(b)),
    with the erfcx difference taken without cancellation.
    """
    out = np.empty(a.shape, dtype=np.float64)
    pos, neg = _masked(a)
    out[pos] = np.log(special.erf(a[pos]) + special.erf(b[pos]))
    an, bn, en = -a[neg], b[neg], eps[neg]
    with np.errstate(divide="ignore"):
        val = erfcx_diff(an, en / (an + bn)) - np.expm1(-en) * special.erfcx(bn)
        out[neg] = -an * an + np.log(val)
    return out


def pdp_log2comp_slope(
    a: FloatArray, b: FloatArray, eps: FloatArray, log2comp: FloatArray
) -> FloatArray:
    """d/da log(2(1 - δ_pDP)) = +(2/√π)(1 + e^{-ε} a/b) e^{-a²} / (2(1 - δ))."""
    return TWO_OVER_SQRT_PI * (1.0 + np.exp(-eps) * a / b) * np.exp(-a * a - log2comp)
